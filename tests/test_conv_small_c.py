"""The first layers' kernels (kernels/conv_small_c.cu, issue 11): C <= 4 (fprop, bprop: <= 16).

fprop (with the whole epilogue), the data gradient and the filter gradient
of fp16/bf16 layers with few input channels, and fp32's fprop (FFMAs), run
on kernels that keep a tile's input rows in shared memory.  Every value test runs on both factories (the CPU
runs the numpy reference) against test_conv.py's loop reference, over
layers that exercise the halo: tiles spanning several output rows and
ending mid-image, strides, padding past the image, dilation, several
64-filter chunks, filters whose taps end mid k-step, strides whose phases
meet different numbers of taps (or none).  On the GPU the tests also check
that the route was taken (one kernel for fprop and bprop, two for the
update), that a recorded situation replays on new tensors and scalars, and
that the filter gradient is the same bits run after run.
"""
import numpy as np
import pytest
from conftest import BF16, skip_if_no_gpu
from test_conv import F16, F32, _conv_tensors, check, data, naive_conv

import gpuarray
from gpuarray.conv import small_c

CASES = [
    # GoogLeNet's conv1 in small: 7x7 stride 2, tiles over several output rows
    pytest.param(dict(N=2, C=3, K=64, H=40, W=36, R=7, S=7, pad_h=3, pad_w=3, str_h=2,
                      str_w=2), id="7x7-stride2"),
    # AlexNet's conv1 in small: 11x11 stride 4, 363 taps (23 k-steps, 2 tap chunks)
    pytest.param(dict(N=2, C=3, K=16, H=35, W=35, R=11, S=11, pad_h=2, pad_w=2, str_h=4,
                      str_w=4), id="11x11-stride4"),
    # VGG's conv1 in small: P*Q = 400 (the last tile 16 positions), K = 72 (two chunks)
    pytest.param(dict(N=3, C=3, K=72, H=20, W=20, R=3, S=3, pad_h=1, pad_w=1), id="3x3-k72"),
    pytest.param(dict(N=1, C=1, K=8, H=17, W=23, R=5, S=3, pad_h=4, pad_w=1, dil_h=2,
                      str_w=2), id="c1-dilated"),
    pytest.param(dict(N=2, C=4, K=24, H=9, W=13, R=2, S=4, pad_h=1, pad_w=3, str_h=3,
                      dil_w=2), id="c4-wide-pad"),
    pytest.param(dict(N=3, C=2, K=136, H=12, W=12, R=3, S=3, str_h=2, str_w=2),
                 id="c2-k136"),
    # stride 3 over 2 taps: one phase in three meets no filter row
    pytest.param(dict(N=2, C=3, K=8, H=14, W=31, R=2, S=2, str_h=3, str_w=3), id="stride-gaps"),
]
#: fprop and bprop also take up to 16 channels where K <= 64 (one filter chunk)
CASES_16 = CASES + [
    # GoogLeNet's 3a 5x5 in small: C = 16, 400 taps (25 k-steps)
    pytest.param(dict(N=2, C=16, K=32, H=14, W=14, R=5, S=5, pad_h=2, pad_w=2), id="c16-5x5"),
    pytest.param(dict(N=2, C=13, K=48, H=11, W=9, R=3, S=3, pad_h=1, str_w=2), id="c13-k48"),
    pytest.param(dict(N=1, C=8, K=64, H=10, W=17, R=3, S=2, pad_w=1, dil_h=2), id="c8-k64"),
]
DTYPES = [pytest.param(F16, id="f16"), pytest.param(BF16, id="bf16")]


def _small_c_plans(ng):
    return {k: v for k, v in ng._conv_plans.items() if k[0] == "small c"}


@pytest.mark.parametrize("kw", CASES_16)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_dtype", [np.float32, F16, BF16], ids=["b32", "b16", "bbf16"])
def test_fprop_with_epilogue(ng, kw, dtype, bias_dtype):
    """relu(alpha * conv + bias) + beta * O, the bias in any float dtype; on
    the GPU one kernel."""
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(21)
    (I, vi), (F, vf), (O, vo) = (data(ng, rng, d, dtype) for d in
                                 (layer.dimI, layer.dimF, layer.dimO))
    b, vb = data(ng, rng, (layer.K,), np.dtype(bias_dtype))
    before = ng.stats().get("kernels_launched", 0)
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=-1.0, relu=True, bias=b)
    if isinstance(ng, gpuarray.GPU):
        assert ng.stats()["kernels_launched"] - before == 1
    check(O, np.maximum(0.5 * naive_conv(layer, "fprop", vi, vf) + vb, 0) - vo, dtype)


@pytest.mark.parametrize("kw", CASES)
def test_fp32_fprop_on_ffmas(ng, kw):
    """fp32 fprop of C <= 4 (its FFMA kernel) with the whole epilogue; on the
    GPU one kernel where a block's shared memory leaves room for a second
    (AlexNet's 11x11 in small does not: the gather route)."""
    layer = ng.conv_layer(F32, **kw)
    rng = np.random.default_rng(23)
    (I, vi), (F, vf), (O, vo), (b, vb) = (data(ng, rng, d, F32) for d in
                                          (layer.dimI, layer.dimF, layer.dimO, (layer.K,)))
    before = ng.stats().get("kernels_launched", 0)
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=-1.0, relu=True, bias=b)
    if isinstance(ng, gpuarray.GPU):
        smem = small_c.smem_bytes("fprop_f32", small_c.geometry(layer))
        if 2 * (smem + 1024) <= ng.smem_optin + 1024:
            assert ng.stats()["kernels_launched"] - before == 1
            assert any(k[0] == "small c" for k in ng._conv_plans)
    check(O, np.maximum(0.5 * naive_conv(layer, "fprop", vi, vf) + vb, 0) - vo, F32)


@pytest.mark.parametrize("kind, alpha, beta", [("bprop", -1.5, 0.5), ("update", 2.0, 0.25)])
@pytest.mark.parametrize("kw", CASES_16)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients(ng, kind, alpha, beta, kw, dtype):
    """grad_I = alpha * conv^T(E, F) + beta * grad_I (at strides above 2 the
    gather route's) and grad_F = alpha * E^T im2col(I) + beta * grad_F."""
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(22)
    (a, b), (va, vb) = _conv_tensors(ng, layer, kind, rng)
    ref = naive_conv(layer, kind, va, vb)
    out, vo = data(ng, rng, ref.shape, dtype)
    getattr(ng, f"{kind}_conv")(layer, a, b, out, alpha=alpha, beta=beta)
    check(out, alpha * ref + beta * vo, dtype)


STRIDED = [p for p in CASES if max(p.values[0].get("str_h", 1), p.values[0].get("str_w", 1)) > 2]


def _forced_bprop(ng, monkeypatch, layer, limit, value, alpha, beta):
    """bprop on a small-C kernel the router would not pick for ``layer``,
    with ``small_c.<limit>`` set to ``value``: one launch, the reference's
    values; the plans recorded under the limit are forgotten after."""
    def forget():
        for key in [k for k in _small_c_plans(ng) if k[1] == "bprop" and k[2] == layer.key]:
            del ng._conv_plans[key]
    monkeypatch.setattr(small_c, limit, value)
    forget()
    rng = np.random.default_rng(26)
    (F, vf), (E, ve), (G, vg) = (data(ng, rng, d, layer.dtype) for d in
                                 (layer.dimF, layer.dimO, layer.dimI))
    before = ng._stats["kernels_launched"]
    ng.bprop_conv(layer, F, E, G, alpha=alpha, beta=beta)
    assert ng._stats["kernels_launched"] - before == 1
    check(G, alpha * naive_conv(layer, "bprop", vf, ve) + beta * vg, layer.dtype)
    forget()


@pytest.mark.parametrize("kw", STRIDED)
@pytest.mark.parametrize("dtype", DTYPES)
def test_bprop_kernel_at_larger_strides(gpu_ng, monkeypatch, kw, dtype):
    """Above stride 2 the router prefers the gather route (it measured
    faster), but the kernel takes strides up to 8: forced there, it is right."""
    skip_if_no_gpu()
    _forced_bprop(gpu_ng, monkeypatch, gpu_ng.conv_layer(dtype, **kw), "MAX_BPROP_STRIDE", 8,
                  0.5, -1.0)


@pytest.mark.parametrize("kw", [p for p in CASES_16 if 8 < p.values[0]["C"] <= 16])
@pytest.mark.parametrize("dtype", DTYPES)
def test_two_channel_group_bprop_kernel(gpu_ng, monkeypatch, kw, dtype):
    """The _c16 data-gradient kernels (8 < C <= 16, up to 5 filter rows a
    phase) are routed only where their tiles fill the GPU twice; forced onto
    these small layers, they are right."""
    skip_if_no_gpu()
    _forced_bprop(gpu_ng, monkeypatch, gpu_ng.conv_layer(dtype, **kw), "MIN_C16_TILES_PER_SM", 0,
                  -0.5, 1.5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_route_replay_and_determinism(gpu_ng, dtype):
    """The first calls record the small-C plans (fprop and bprop one kernel,
    update two); later calls on other tensors and scalars replay them exactly, and
    the filter gradient repeats its bits."""
    skip_if_no_gpu()
    ng = gpu_ng
    layer = ng.conv_layer(dtype, **CASES[0].values[0])
    rng = np.random.default_rng(23)
    for alpha, beta in [(1.0, 0.0), (-0.5, 2.0)]:
        (I, vi), (F, vf), (E, ve), (O, vo), (G, vg) = (
            data(ng, rng, d, dtype)
            for d in (layer.dimI, layer.dimF, layer.dimO, layer.dimO, layer.dimF))
        before = ng._stats["kernels_launched"]
        ng.fprop_conv(layer, I, F, O, alpha=alpha, beta=beta)
        assert ng._stats["kernels_launched"] - before == 1
        check(O, alpha * naive_conv(layer, "fprop", vi, vf) + beta * vo, dtype)
        before = ng._stats["kernels_launched"]
        ng.update_conv(layer, I, E, G, alpha=alpha, beta=beta)
        assert ng._stats["kernels_launched"] - before == 2
        check(G, alpha * naive_conv(layer, "update", vi, ve) + beta * vg, dtype)
        gI, vgi = data(ng, rng, layer.dimI, dtype)
        before = ng._stats["kernels_launched"]
        ng.bprop_conv(layer, F, E, gI, alpha=alpha, beta=beta)
        assert ng._stats["kernels_launched"] - before == 1
        check(gI, alpha * naive_conv(layer, "bprop", vf, ve) + beta * vgi, dtype)
    first, second = ng.empty(layer.dimF, dtype), ng.empty(layer.dimF, dtype)
    ng.update_conv(layer, I, E, first)
    ng.update_conv(layer, I, E, second)
    np.testing.assert_array_equal(first.get().view(np.uint16), second.get().view(np.uint16))
    kinds = {key[1] for key in _small_c_plans(ng) if key[2] == layer.key}
    assert kinds == {"fprop", "bprop", "update"}


@pytest.mark.parametrize("dtype", DTYPES)
def test_channel_slices(ng, dtype):
    """fprop writes into, and bprop and update read E from, a channel slice
    (a concatenation's branch)."""
    layer = ng.conv_layer(dtype, 2, 3, 16, H=19, W=21, R=5, S=5, pad_h=2, pad_w=2, str_h=2,
                          str_w=2)
    rng = np.random.default_rng(24)
    (I, vi), (F, vf) = (data(ng, rng, d, dtype) for d in (layer.dimI, layer.dimF))
    wide, vw = data(ng, rng, layer.dimO[:4] + (40,), dtype)
    ng.fprop_conv(layer, I, F, wide[..., 8:24])
    ref = vw.copy()
    ref[..., 8:24] = naive_conv(layer, "fprop", vi, vf)
    check(wide, ref, dtype)
    G = ng.empty(layer.dimF, dtype)
    ng.update_conv(layer, I, wide[..., 16:32], G)
    ve = np.asarray(wide.get(), np.float64)[..., 16:32]
    check(G, naive_conv(layer, "update", vi, ve), dtype)
    gI = ng.empty(layer.dimI, dtype)
    ng.bprop_conv(layer, F, wide[..., 16:32], gI)
    check(gI, naive_conv(layer, "bprop", vf, ve), dtype)


def test_geometry_of_the_networks_first_layers():
    """The shared memory of the four networks' first layers: fprop's and
    update's blocks fit twice on a Hopper multiprocessor, bprop's fit an
    sm_80 block (163 KB)."""
    cpu = gpuarray.CPU()
    for kw in [dict(N=128, C=3, K=64, H=224, W=224, R=11, S=11, pad_h=2, pad_w=2, str_h=4, str_w=4),
               dict(N=128, C=3, K=64, H=224, W=224, R=7, S=7, pad_h=3, pad_w=3, str_h=2, str_w=2),
               dict(N=64, C=3, K=64, H=224, W=224, R=3, S=3, pad_h=1, pad_w=1),
               dict(N=128, C=3, K=96, H=231, W=231, R=11, S=11, str_h=4, str_w=4)]:
        layer = cpu.conv_layer(np.float16, **kw)
        geo = small_c.geometry(layer)
        assert geo["pitch"] % 8 == 0 and (geo["lead"] + kw.get("pad_w", 0) * 3) % 8 == 0
        for kind in ("fprop", "update"):
            assert small_c.smem_bytes(kind, geo) <= 113 * 1024
        assert small_c.smem_bytes("bprop", small_c.bprop_geometry(layer)) <= 163 * 1024
