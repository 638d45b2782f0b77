"""Convolution and pooling (issue 11): layers, the numpy reference, checks.

Every value test runs on both factories through ``ng``.  The CPU runs the
numpy reference (gpuarray/conv/reference.py), checked here against
hand-computed cases and an independent loop implementation over a seeded
sweep.  The GPU's kernels (gathers and GEMMs for convolution, the pooling
kernels) are compared with the same references.  Criterion as the GEMM tests:
``max|err| / mean|ref|`` at most 5e-5 (float32) or 7e-3 (float16/bfloat16)
after forgiving the rounding of the stored result.
"""
import itertools

import numpy as np
import pytest
from conftest import BF16, assert_no_new_allocations, skip_if_no_gpu

import gpuarray
from gpuarray.conv import convolution

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
TOLERANCE = {F16: 7e-3, BF16: 7e-3, F32: 5e-5}


def check(got, ref, dtype):
    """``max|got - ref| / mean|ref|`` within the tolerance, one ulp of a 16-bit result forgiven."""
    got = np.asarray(got.get() if hasattr(got, "get") else got)
    assert got.dtype == dtype and got.shape == ref.shape
    ulp = np.abs(np.spacing(np.abs(ref).astype(dtype)).astype(np.float64)) if dtype != F32 else 0
    excess = np.maximum(np.abs(got.astype(np.float64) - ref) - ulp, 0)
    err = excess.max() / max(np.abs(ref).mean(), 1e-30)
    assert err <= TOLERANCE[dtype], f"max|err| / mean|ref| = {err:.2e}"


def data(ng, rng, shape, dtype):
    """(tensor, float64 value of what it stores)."""
    host = rng.uniform(-2, 2, shape).astype(dtype)
    return ng.array(host), host.astype(np.float64)


# -- an independent loop implementation (float64) ---------------------------

def conv_taps(layer):
    """Every (output position, filter tap, input position) that meets the input."""
    outs, filt = layer.dimO[1:4], layer.dimF[1:4]
    for out in np.ndindex(*outs):
        for tap in np.ndindex(*filt):
            pos = tuple(o * st + t * dl - p for o, t, st, dl, p in
                        zip(out, tap, layer.stride, layer.dilation, layer.pad))
            if all(0 <= x < n for x, n in zip(pos, layer.dimI[1:4])):
                yield out, tap, pos


def naive_conv(layer, kind, a, b):
    """fprop(I, F), bprop(F, E) or update(I, E) by loops over taps."""
    shape = {"fprop": layer.dimO, "bprop": layer.dimI, "update": layer.dimF}[kind]
    res = np.zeros(shape)
    for out, tap, pos in conv_taps(layer):
        o, t, i = (slice(None),) + out, (slice(None),) + tap, (slice(None),) + pos
        if kind == "fprop":
            res[o] += a[i] @ b[t].T
        elif kind == "bprop":
            res[i] += b[o] @ a[t]
        else:
            res[t] += b[o].T @ a[i]
    return res


def pool_windows(pool):
    """Per output (n, m, p, q, k): its window's [(flat index, (n, d, h, w, c))] inside the input."""
    sizes = (pool.C,) + pool.dimI[1:4]
    for n, (k, m, p, q) in itertools.product(range(pool.N), np.ndindex(*pool.dimO[4:], *pool.dimO[1:4])):
        inside = []
        for flat, tap in enumerate(np.ndindex(pool.J, pool.T, pool.R, pool.S)):
            c, d, h, w = (o * st + t - pd for o, t, st, pd in
                          zip((k, m, p, q), tap, pool.stride, pool.pad))
            if all(0 <= v < size for v, size in zip((c, d, h, w), sizes)):
                inside.append((flat, (n, d, h, w, c)))
        yield (n, m, p, q, k), inside


def naive_pool(pool, x):
    """(values, argmax) of pooling by loops; argmax -1 for average pooling."""
    value, index = np.zeros(pool.dimO), np.full(pool.dimO, -1)
    for out, inside in pool_windows(pool):
        vals = [x[pos] for _, pos in inside]
        if pool.op == "max":
            best = int(np.argmax(vals))  # first maximum
            value[out], index[out] = vals[best], inside[best][0]
        else:
            value[out] = sum(vals) / (pool.window if pool.include_padding else len(vals))
    return value, index


def naive_pool_grad(pool, e, index):
    """Gradient of pooling by loops, from the argmax ``index`` for max pooling."""
    grad = np.zeros(pool.dimI)
    for out, inside in pool_windows(pool):
        for flat, pos in inside:
            if pool.op == "max":
                grad[pos] += e[out] * (flat == index[out])
            else:
                grad[pos] += e[out] / (pool.window if pool.include_padding else len(inside))
    return grad


# -- cases --------------------------------------------------------------------

_AXES = (("D", "T", "pad_d", "str_d", "dil_d"), ("H", "R", "pad_h", "str_h", "dil_h"),
         ("W", "S", "pad_w", "str_w", "dil_w"))


def _random_conv_cases(count, seed=11):
    """Seeded layers with odd sizes: every fourth 3-D, N = 1, C and K of 1, 3, 7."""
    rng, cases = np.random.default_rng(seed), []
    while len(cases) < count:
        kw = dict(N=int(rng.choice([1, 2])), C=int(rng.choice([1, 3, 7])),
                  K=int(rng.choice([1, 3, 7])))
        for size, tap, pad, st, dl in _AXES[int(len(cases) % 4 != 0):]:
            taps, dil = int(rng.integers(1, 4)), int(rng.integers(1, 3))
            kw.update({size: int(rng.integers(1, 9)), tap: taps, st: int(rng.integers(1, 4)),
                       dl: dil, pad: int(rng.integers(0, dil * (taps - 1) + 1))})
        try:
            gpuarray.CPU().conv_layer(F32, **kw)
        except ValueError:
            continue  # an output size below 1
        cases.append(kw)
    return cases


#: every padding / stride / dilation combination on a small 2-D shape
COMBOS = [dict(N=1, C=3, K=2, H=7, W=6, R=3, S=3, pad_h=p, pad_w=p, str_h=s, str_w=s,
               dil_h=d, dil_w=d) for p, s, d in itertools.product((0, 1, 2), (1, 2), (1, 2))]
CONV_CASES = COMBOS + _random_conv_cases(16)
CONV_PARAMS = ([pytest.param(kw, F32, id=f"f32-{i}") for i, kw in enumerate(CONV_CASES)]
               + [pytest.param(kw, dt, id=f"{dt.name}-{i}") for i, kw in enumerate(CONV_CASES[-4:])
                  for dt in (F16, BF16)])

#: (layer sizes, I, F, O) worked out by hand, along W unless said
CONV_HAND = [
    (dict(W=4, S=2), [1, 2, 3, 4], [1, 10], [21, 32, 43]),
    (dict(W=4, S=2, pad_w=1), [1, 2, 3, 4], [1, 10], [10, 21, 32, 43, 4]),
    (dict(W=4, S=2, str_w=2), [1, 2, 3, 4], [1, 10], [21, 43]),
    (dict(W=4, S=2, dil_w=2), [1, 2, 3, 4], [1, 10], [31, 42]),
    (dict(H=3, R=2, pad_h=1, str_h=2), [1, 2, 3], [1, 10], [10, 32]),
    (dict(C=2, K=2), [1, 2], [1, 2, 3, 4], [5, 11]),
    (dict(H=2, W=2, R=2, S=2), [1, 2, 3, 4], [1, 0, 0, 1], [5]),
    (dict(D=2, T=2), [1, 2], [3, 4], [11]),
]


def _conv_tensors(ng, layer, kind, rng):
    """(tensors, float64 values) of a call's two inputs."""
    dims = {"fprop": (layer.dimI, layer.dimF), "bprop": (layer.dimF, layer.dimO),
            "update": (layer.dimI, layer.dimO)}[kind]
    return zip(*(data(ng, rng, d, layer.dtype) for d in dims))


# -- convolution ----------------------------------------------------------------

@pytest.mark.parametrize("kw, I, F, O", CONV_HAND)
def test_conv_hand_computed(ng, kw, I, F, O):
    layer = ng.conv_layer(F32, **{"N": 1, "C": 1, "K": 1, **kw})
    I, F = (ng.array(np.array(v, F32).reshape(d)) for v, d in ((I, layer.dimI), (F, layer.dimF)))
    out = ng.empty(layer.dimO, F32)
    ng.fprop_conv(layer, I, F, out)
    np.testing.assert_array_equal(out.get().ravel(), O)


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
@pytest.mark.parametrize("kw, dtype", CONV_PARAMS)
def test_conv_matches_loops(ng, kind, kw, dtype):
    layer = ng.conv_layer(dtype, **kw)
    (a, b), (va, vb) = _conv_tensors(ng, layer, kind, np.random.default_rng(1))
    ref = naive_conv(layer, kind, va, vb)
    out = ng.empty(ref.shape, dtype)
    getattr(ng, f"{kind}_conv")(layer, a, b, out)
    check(out, ref, dtype)


@pytest.mark.parametrize("kw", CONV_CASES[::3])
def test_bprop_and_update_are_adjoints_of_fprop(ng, kw):
    """<fprop(I, F), E> == <I, bprop(F, E)> == <F, update(I, E)>."""
    layer = ng.conv_layer(F32, **kw)
    rng = np.random.default_rng(2)
    (I, vi), (F, vf), (E, ve) = (data(ng, rng, d, F32) for d in (layer.dimI, layer.dimF, layer.dimO))
    O, gI, gF = (ng.empty(d, F32) for d in (layer.dimO, layer.dimI, layer.dimF))
    ng.fprop_conv(layer, I, F, O)
    ng.bprop_conv(layer, F, E, gI)
    ng.update_conv(layer, I, E, gF)
    products = [np.vdot(O.get().astype(np.float64), ve), np.vdot(vi, gI.get()),
                np.vdot(vf, gF.get())]
    scale = np.abs(vi).sum() * np.abs(vf).max() * np.abs(ve).max()
    np.testing.assert_allclose(products, products[0], atol=1e-6 * scale)


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=["f32", "f16", "bf16"])
def test_fprop_epilogue(ng, dtype):
    """O = relu(alpha * conv + bias) + beta * O."""
    layer = ng.conv_layer(dtype, 2, 3, 5, H=5, W=4, R=3, S=2, pad_h=1)
    rng = np.random.default_rng(3)
    (I, vi), (F, vf), (O, vo), (b, vb) = (data(ng, rng, d, dtype) for d in
                                          (layer.dimI, layer.dimF, layer.dimO, (layer.K,)))
    ref = np.maximum(0.5 * naive_conv(layer, "fprop", vi, vf) + vb, 0) - 2 * vo
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=-2, relu=True, bias=b)
    check(O, ref, dtype)


@pytest.mark.parametrize("relu,with_bias", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["plain", "relu", "bias", "bias_relu"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_fprop_epilogue_without_beta(ng, dtype, relu, with_bias):
    """The implicit GEMM's epilogue modes (plain, relu, a per-channel bias with
    and without relu): K = 72 leaves a tile's last columns past K."""
    layer = ng.conv_layer(dtype, 2, 64, 72, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1)
    rng = np.random.default_rng(5)
    (I, vi), (F, vf), (b, vb) = (data(ng, rng, d, dtype) for d in
                                 (layer.dimI, layer.dimF, (layer.K,)))
    O = ng.empty(layer.dimO, dtype)  # noqa: E741
    ref = 0.25 * naive_conv(layer, "fprop", vi, vf) + (vb if with_bias else 0)
    ng.fprop_conv(layer, I, F, O, alpha=0.25, relu=relu, bias=b if with_bias else None)
    check(O, np.maximum(ref, 0) if relu else ref, dtype)


@pytest.mark.parametrize("kind", ["bprop", "update"])
def test_gradients_alpha_beta(ng, kind):
    layer = ng.conv_layer(F32, 1, 3, 7, D=3, H=4, W=5, T=2, R=3, S=2, pad_h=1, str_w=2)
    rng = np.random.default_rng(4)
    (a, b), (va, vb) = _conv_tensors(ng, layer, kind, rng)
    ref = naive_conv(layer, kind, va, vb)
    out, vo = data(ng, rng, ref.shape, F32)
    getattr(ng, f"{kind}_conv")(layer, a, b, out, alpha=3.0, beta=0.5)
    check(out, 3 * ref + 0.5 * vo, F32)


#: layers that take the GPU's other paths: pointwise (no gather), channels
#: in 16-byte vectors, 3-D with everything on
PATH_CASES = [
    pytest.param(dict(N=2, C=16, K=8, H=5, W=3), id="pointwise"),
    pytest.param(dict(N=3, C=8, K=16, H=6, W=7, R=3, S=3, pad_h=1, pad_w=1), id="vector"),
    pytest.param(dict(N=2, C=4, K=8, D=4, H=5, W=5, T=2, R=3, S=3, pad_d=1, str_h=2,
                      dil_w=2, pad_w=1), id="3d"),
]


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
@pytest.mark.parametrize("kw", PATH_CASES)
@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("workspace", [None, 1], ids=["batch", "chunks"])
def test_conv_paths(ng, monkeypatch, kind, kw, dtype, workspace):
    """Every path of the GPU factory (and the CPU's reference), with the batch
    in one piece and in chunks of one image (a one-byte workspace budget)."""
    if workspace is not None:
        monkeypatch.setattr(convolution, "WORKSPACE_BYTES", workspace)
    layer = ng.conv_layer(dtype, **kw)
    (a, b), (va, vb) = _conv_tensors(ng, layer, kind, np.random.default_rng(8))
    ref = naive_conv(layer, kind, va, vb)
    out, vo = data(ng, np.random.default_rng(9), ref.shape, dtype)
    getattr(ng, f"{kind}_conv")(layer, a, b, out, alpha=2.0, beta=0.25)
    check(out, 2 * ref + 0.25 * vo, dtype)


@pytest.mark.parametrize("kw", [
    pytest.param(dict(N=2, C=3, K=8, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1), id="c3"),
    pytest.param(dict(N=3, C=24, K=16, H=6, W=7, R=3, S=3, pad_h=1, str_w=2), id="c24"),
    pytest.param(dict(N=2, C=40, K=8, H=5, W=3), id="pointwise"),
])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_repeated_update_matches_loops(ng, kw, dtype):
    """The GPU records a gather-route filter gradient on its first call and
    replays it: later calls, on other tensors and scalars, stay exact."""
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(12)
    for alpha, beta in [(1.0, 0.0), (0.5, 0.0), (2.0, -1.0), (1.0, -1.0)]:
        (I, E), (vi, ve) = _conv_tensors(ng, layer, "update", rng)
        out, vo = data(ng, rng, layer.dimF, dtype)
        ng.update_conv(layer, I, E, out, alpha=alpha, beta=beta)
        check(out, alpha * naive_conv(layer, "update", vi, ve) + beta * vo, dtype)


#: 2-D fp16/bf16 layers with C % 8 == 0: on Hopper, the implicit-GEMM kernel
#: (im2col tensor map); tiles cross image boundaries, channels end mid-chunk
IMPLICIT_CASES = [
    pytest.param(dict(N=3, C=16, K=24, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1), id="3x3"),
    pytest.param(dict(N=2, C=72, K=40, H=11, W=7, R=3, S=5, pad_h=1, pad_w=2, str_h=2,
                      dil_w=2), id="tail-stride-dilation"),
    pytest.param(dict(N=2, C=8, K=8, H=5, W=5, str_h=2, str_w=2), id="1x1-stride2"),
    pytest.param(dict(N=3, C=64, K=130, H=12, W=12, R=3, S=3), id="k-tail"),
    # a tap's last 64-channel chunk part-filled: half for fprop's C = 96,
    # three quarters for bprop's K = 48 (the channels past C read as zeros)
    pytest.param(dict(N=2, C=96, K=48, H=8, W=8, R=3, S=3, pad_h=1, pad_w=1), id="part-chunks"),
    pytest.param(dict(N=2, C=8, K=16, H=6, W=7, R=2, S=2), id="even-filter"),
    pytest.param(dict(N=2, C=8, K=32, H=17, W=17, R=7, S=7, pad_h=3, pad_w=3, str_h=2,
                      str_w=2), id="7x7-stride2"),
]


@pytest.mark.parametrize("kw", IMPLICIT_CASES)
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_conv_implicit_gemm(ng, kw, dtype):
    """fprop with the whole epilogue: relu(alpha * conv + bias) + beta * O."""
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(12)
    (I, vi), (F, vf), (O, vo), (b, vb) = (data(ng, rng, d, dtype) for d in
                                          (layer.dimI, layer.dimF, layer.dimO, (layer.K,)))
    ng.fprop_conv(layer, I, F, O, alpha=0.5, beta=-1.0, relu=True, bias=b)
    check(O, np.maximum(0.5 * naive_conv(layer, "fprop", vi, vf) + vb, 0) - vo, dtype)


@pytest.mark.parametrize("kind, kw, pixel", [
    ("fprop", dict(N=2, C=3, K=16, H=9, W=9), (1, 0, 4, 4, 2)),
    # the last pixel: in the halo of the image's last, partial tile, whose
    # positions past P*Q must add nothing
    ("update", dict(N=1, C=3, K=8, H=13, W=11), (0, 0, 12, 10, 1)),
], ids=["fprop", "update"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_first_layer_infinity_stays_infinite(ng, kind, kw, pixel, dtype):
    """An infinite input pixel of a C = 3 layer makes the outputs (fprop) or
    filter taps (update) whose windows hold it infinite and no others (no
    inf * 0 = NaN from a padded channel or tap, or a position past the image)."""
    layer = ng.conv_layer(dtype, **kw, R=3, S=3, pad_h=1, pad_w=1)
    host = np.ones(layer.dimI, dtype)
    host[pixel] = np.inf
    fprop = kind == "fprop"
    other, value = (layer.dimF, 0.5) if fprop else (layer.dimO, 0.25)
    out = ng.empty(layer.dimO if fprop else layer.dimF, dtype)
    getattr(ng, f"{kind}_conv")(layer, ng.array(host), ng.array(np.full(other, value, dtype)), out)
    ref = naive_conv(layer, kind, host.astype(np.float64), np.full(other, value))
    got = out.get().astype(np.float64)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-2)


@pytest.mark.parametrize("kw", IMPLICIT_CASES)
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_conv_implicit_gemm_bprop(ng, kw, dtype):
    """Data gradient; on Hopper the unit-stride cases run as the fprop of E
    with flipped filters (the others gather)."""
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(13)
    (F, vf), (E, ve), (G, vg) = (data(ng, rng, d, dtype) for d in
                                 (layer.dimF, layer.dimO, layer.dimI))
    ng.bprop_conv(layer, F, E, G, alpha=2.0, beta=0.5)
    check(G, 2 * naive_conv(layer, "bprop", vf, ve) + 0.5 * vg, dtype)


@pytest.mark.parametrize("kind, C, K, H, dtype, tile", [
    ("fprop", 8, 192, 80, F16, "128x192"), ("bprop", 192, 8, 80, F16, "128x192"),
    ("fprop", 8, 96, 94, BF16, "256x96"), ("bprop", 96, 8, 94, F16, "256x96")])
def test_outputs_of_192_or_96_channels_take_their_tiles(gpu_ng, kind, C, K, H, dtype, tile):
    """fprop with K = 192 or 96, and bprop with C = 192 or 96, run on Hopper
    on tiles as wide as the output (a tile of 256 or 128 columns would be a
    quarter empty): 100 tiles of 128x192 (128x128 tiles would take two
    waves), or 139 of 256x96 (two 128-row tiles' worth of rows reading one
    B tile), and are right."""
    skip_if_no_gpu()
    ng = gpu_ng
    if ng.arch != "sm_90":
        pytest.skip("the implicit-GEMM kernels are Hopper's")
    layer = ng.conv_layer(dtype, 2, C, K, H=H, W=H, R=3, S=3, pad_h=1, pad_w=1)
    rng = np.random.default_rng(14)
    (a, b), (va, vb) = _conv_tensors(ng, layer, kind, rng)
    ref = naive_conv(layer, kind, va, vb)
    out, vo = data(ng, rng, ref.shape, dtype)
    getattr(ng, f"{kind}_conv")(layer, a, b, out, alpha=0.5, beta=2.0)
    assert f"_{tile}x64_{'f16' if dtype == F16 else 'bf16'}_{kind}" in ng.last_gemm.name
    check(out, 0.5 * ref + 2.0 * vo, dtype)


#: filter gradients the implicit-GEMM kernel takes on Hopper (C and K % 8 == 0;
#: C % 64 != 0 through a padded fp32 temporary where C fills 2/3 of the chunks)
UPDATE_CASES = [
    pytest.param(dict(N=3, C=64, K=24, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1), id="3x3"),
    pytest.param(dict(N=2, C=96, K=40, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1), id="padded-96"),
    pytest.param(dict(N=3, C=48, K=8, H=10, W=10, R=5, S=5, pad_h=2, pad_w=2), id="padded-48"),
    pytest.param(dict(N=2, C=128, K=16, H=7, W=11, R=3, S=5, pad_h=1, pad_w=2, str_h=2,
                      dil_w=2), id="stride-dilation"),
    pytest.param(dict(N=2, C=64, K=8, H=6, W=6, R=2, S=2), id="small-k"),
    pytest.param(dict(N=5, C=64, K=136, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1), id="split"),
]


@pytest.mark.parametrize("kw", UPDATE_CASES)
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_conv_implicit_gemm_update(ng, kw, dtype):
    layer = ng.conv_layer(dtype, **kw)
    rng = np.random.default_rng(14)
    (I, vi), (E, ve), (G, vg) = (data(ng, rng, d, dtype) for d in
                                 (layer.dimI, layer.dimO, layer.dimF))
    ng.update_conv(layer, I, E, G, alpha=0.5, beta=2.0)
    check(G, 0.5 * naive_conv(layer, "update", vi, ve) + 2 * vg, dtype)


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_conv_strided_views(ng, kind):
    """Operands and outputs that are views (every other channel of a wider tensor)."""
    layer = ng.conv_layer(F32, 2, 3, 4, H=5, W=6, R=3, S=2, pad_h=1)
    rng = np.random.default_rng(10)
    dims = {"fprop": (layer.dimI, layer.dimF, layer.dimO),
            "bprop": (layer.dimF, layer.dimO, layer.dimI),
            "update": (layer.dimI, layer.dimO, layer.dimF)}[kind]
    wide = [data(ng, rng, d[:4] + (2 * d[4],), F32) for d in dims]
    (a, va), (b, vb), (out, vo) = ((t[..., ::2], v[..., ::2]) for t, v in wide)
    getattr(ng, f"{kind}_conv")(layer, a, b, out, beta=1.0)
    check(out, naive_conv(layer, kind, va, vb) + vo, F32)
    np.testing.assert_array_equal(wide[2][0].get()[..., 1::2], wide[2][1][..., 1::2])


# no_sanitizer: under compute-sanitizer the frames of finished calls stay
# referenced from outside Python (seen with memcheck: a dispatch frame holding
# the tensor, no Python referrer), so memory returns late; checked in the
# plain suite
@pytest.mark.no_sanitizer
def test_conv_second_run_compiles_and_allocates_nothing(gpu_ng):
    ng = gpu_ng
    layer = ng.conv_layer(F16, 4, 8, 16, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1)
    I, F, O = (ng.zeros(d, F16) for d in (layer.dimI, layer.dimF, layer.dimO))
    gI, gF = ng.zeros(layer.dimI, F16), ng.zeros(layer.dimF, F16)

    def step():
        ng.fprop_conv(layer, I, F, O, relu=True)
        ng.bprop_conv(layer, F, O, gI)
        ng.update_conv(layer, I, O, gF)

    step()
    ng.synchronize()
    before = ng.stats()
    for _ in range(3):
        step()
    ng.synchronize()
    assert_no_new_allocations(ng, before)
    assert ng.stats()["kernels_compiled"] == before["kernels_compiled"]


# -- pooling ------------------------------------------------------------------

#: (layer sizes, I, O, argmax) worked out by hand, along W unless said
POOL_HAND = [
    (dict(op="max", W=4, S=2), [1, 2, 3, 4], [2, 4], [1, 1]),
    (dict(op="max", W=4, S=3, str_w=1, pad_w=1), [3, 1, 4, 1], [3, 4, 4, 4], [1, 2, 1, 0]),
    (dict(op="max", W=2, S=2, str_w=1, pad_w=1), [-np.inf] * 2, [-np.inf] * 3, [1, 0, 0]),
    (dict(op="avg", W=4, S=2, pad_w=1), [1, 2, 3, 4], [1, 2.5, 4], None),
    (dict(op="avg", W=4, S=2, pad_w=1, include_padding=True), [1, 2, 3, 4], [0.5, 2.5, 2], None),
    (dict(op="max", C=4, J=2), [1, 5, 3, 2], [5, 3], [1, 0]),
    (dict(op="avg", C=3, J=3), [1, 2, 6], [3], None),
    (dict(op="max", H=2, W=2, R=2, S=2), [1, 4, 3, 2], [4], [1]),
]

POOL_CASES = [
    dict(op="max", N=2, C=3, H=7, W=6, R=3, S=3, str_h=2, str_w=2),
    dict(op="max", N=1, C=5, H=5, W=5, R=2, S=3, pad_h=1, pad_w=2, str_h=1, str_w=2),
    dict(op="max", N=2, C=7, H=3, W=4, J=3, str_c=2, pad_c=1, R=2, S=2),
    dict(op="max", N=1, C=2, D=4, H=3, W=5, T=2, R=3, S=2, pad_d=1, str_d=1),
    dict(op="avg", N=2, C=3, H=7, W=6, R=3, S=3, pad_h=1, pad_w=2, str_h=2, str_w=1),
    dict(op="avg", N=2, C=3, H=7, W=6, R=3, S=3, pad_h=1, pad_w=2, str_h=2, str_w=1,
         include_padding=True),
    dict(op="avg", N=1, C=6, H=2, W=3, J=2, pad_c=1, str_c=1, S=2),
    dict(op="avg", N=1, C=1, D=3, H=4, W=4, T=3, R=2, S=2, pad_d=2, include_padding=True),
    # channels not pooled and C a multiple of 8: the GPU moves 16 bytes per access
    dict(op="max", N=3, C=16, H=9, W=9, R=3, S=3, str_h=2, str_w=2),
    dict(op="avg", N=2, C=8, H=6, W=7, R=3, S=3, str_h=2, str_w=2, pad_h=1, pad_w=1),
    dict(op="max", N=2, C=8, D=3, H=5, W=5, T=2, R=3, S=3, pad_h=1, pad_w=1, str_d=1),
    # the pool_window kernels: 2x2 and 3x3 windows, 1 to 3 outputs per axis in bprop
    dict(op="avg", N=2, C=8, H=7, W=7, R=3, S=3, pad_h=1, pad_w=1, str_h=1, str_w=1,
         include_padding=True),
    dict(op="max", N=2, C=8, H=8, W=6, R=2, S=2),
    dict(op="avg", N=1, C=16, H=5, W=9, R=2, S=2, str_h=1, str_w=1, pad_w=1),
    dict(op="max", N=2, C=8, H=6, W=7, R=2, S=3, str_h=1, str_w=1, pad_w=1),
]
POOL_PARAMS = ([pytest.param(kw, F32, id=f"f32-{i}") for i, kw in enumerate(POOL_CASES)]
               + [pytest.param(kw, dt, id=f"{dt.name}-{i}") for i, kw in enumerate(POOL_CASES)
                  if i % 3 == 1 or kw["C"] % 8 == 0 for dt in (F16, BF16)])


@pytest.mark.parametrize("kw, I, O, A", POOL_HAND)
def test_pool_hand_computed(ng, kw, I, O, A):
    pool = ng.pool_layer(F32, **{"N": 1, "C": 1, **kw})
    I = ng.array(np.array(I, F32).reshape(pool.dimI))
    out, argmax = ng.empty(pool.dimO, F32), None
    if A is not None:
        argmax = ng.empty(pool.dimO, pool.argmax_dtype)
    ng.fprop_pool(pool, I, out, argmax)
    np.testing.assert_array_equal(out.get().ravel(), O)
    if A is not None:
        np.testing.assert_array_equal(argmax.get().ravel(), A)


@pytest.mark.parametrize("kw, dtype", POOL_PARAMS)
def test_pool_matches_loops(ng, kw, dtype):
    pool = ng.pool_layer(dtype, **kw)
    I, vi = data(ng, np.random.default_rng(5), pool.dimI, dtype)
    ref, index = naive_pool(pool, vi)
    out = ng.empty(pool.dimO, dtype)
    argmax = ng.empty(pool.dimO, pool.argmax_dtype) if pool.op == "max" else None
    ng.fprop_pool(pool, I, out, argmax)
    check(out, ref, dtype)
    if argmax is not None:
        np.testing.assert_array_equal(argmax.get(), index)


#: max pooling's bprop with the argmax given and with it recomputed from I
BPROP_POOL_PARAMS = [pytest.param(*p.values, given, id=f"{p.id}-{'argmax' if given else 'found'}")
                     for p in POOL_PARAMS for given in (True, False)
                     if given or p.values[0]["op"] == "max"]


@pytest.mark.parametrize("kw, dtype, given", BPROP_POOL_PARAMS)
def test_bprop_pool_matches_loops(ng, kw, dtype, given):
    pool = ng.pool_layer(dtype, **kw)
    rng = np.random.default_rng(6)
    (I, vi), (E, ve) = data(ng, rng, pool.dimI, dtype), data(ng, rng, pool.dimO, dtype)
    argmax = None
    if pool.op == "max" and given:
        argmax = ng.array(naive_pool(pool, vi)[1].astype(pool.argmax_dtype))
    grad = ng.empty(pool.dimI, dtype)
    ng.bprop_pool(pool, I, E, grad, argmax)
    check(grad, naive_pool_grad(pool, ve, naive_pool(pool, vi)[1]), dtype)


#: windows of the 16-byte kernels (C % 8 == 0) whose maxima tie (+-0 among
#: them), hold NaN, or hold nothing but -inf: numpy's argmax is the spec
SPECIAL_POOLS = [dict(R=3, S=3, str_h=2, str_w=2), dict(R=2, S=2),
                 dict(R=3, S=3, pad_h=1, pad_w=1, str_h=1, str_w=1),
                 dict(D=3, T=2, R=3, S=3, str_d=1, str_h=2, str_w=2)]


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("kw", SPECIAL_POOLS, ids=["3x3s2", "2x2", "3x3s1p1", "3d"])
def test_max_pool_ties_nan_and_infinities(ng, kw, dtype):
    pool = ng.pool_layer(dtype, "max", 2, 16, H=7, W=7, **kw)
    rng = np.random.default_rng(7)
    values = np.array([0.0, -0.0, 1.0, -1.0, -np.inf, np.inf, np.nan])
    host = rng.choice(values, pool.dimI, p=[0.2, 0.2, 0.1, 0.1, 0.34, 0.03, 0.03]).astype(dtype)
    ref, index = naive_pool(pool, host.astype(np.float64))
    out, argmax = ng.empty(pool.dimO, dtype), ng.empty(pool.dimO, pool.argmax_dtype)
    ng.fprop_pool(pool, ng.array(host), out, argmax)
    np.testing.assert_array_equal(argmax.get(), index)
    np.testing.assert_array_equal(out.get().astype(np.float64), ref)
    E, ve = data(ng, rng, pool.dimO, dtype)
    grad = ng.empty(pool.dimI, dtype)
    ng.bprop_pool(pool, ng.array(host), E, grad, argmax)
    check(grad, naive_pool_grad(pool, ve, index), dtype)


def test_argmax_is_compact():
    cpu = gpuarray.CPU()
    assert cpu.pool_layer(F16, "max", 1, 1, H=16, W=16, R=16, S=16).argmax_dtype == np.uint8
    assert cpu.pool_layer(F16, "max", 1, 2, H=16, W=16, J=2, R=16, S=16).argmax_dtype == np.int32


# -- layouts --------------------------------------------------------------------

LAYER = dict(N=2, C=3, K=4, D=1, H=5, W=6, R=3, S=2, pad_h=1)
LAYER_3D = dict(N=1, C=2, K=3, D=3, H=4, W=2, T=2, R=2, S=1)


@pytest.mark.parametrize("kw, layout", [(LAYER, "NCHW"), (LAYER_3D, "NCDHW")])
@pytest.mark.parametrize("tensor", ["I", "F", "O"])
def test_layout_round_trip(ng, kw, layout, tensor):
    """from_layout moves C innermost (filters: KCRS -> KRSC), to_layout back."""
    layer = ng.conv_layer(F32, **kw)
    native = getattr(layer, "dim" + tensor)
    user = (native[0], native[4]) + native[1:4]
    if layout == "NCHW":
        user = user[:2] + user[3:]
    host = np.random.default_rng(7).standard_normal(user).astype(F32)
    X = ng.from_layout(ng.array(host), layer)
    assert X.shape == native
    ncdhw = host.reshape(native[:1] + native[4:] + native[1:4])
    np.testing.assert_array_equal(X.get(), np.moveaxis(ncdhw, 1, 4))
    np.testing.assert_array_equal(ng.to_layout(X, layout).get(), host)
    np.testing.assert_array_equal(ng.to_layout(X, "NDHWC").get(), X.get())


def test_to_layout_nhwc_drops_depth(ng):
    X = ng.array(np.arange(24, dtype=F32).reshape(2, 1, 3, 4, 1))
    np.testing.assert_array_equal(ng.to_layout(X, "NHWC").get(), X.get()[:, 0])


# -- bad input ----------------------------------------------------------------

CONV = dict(N=2, C=3, K=4, H=5, W=5, R=3, S=3)
#: conv_layer / pool_layer arguments -> (exception, message)
BAD_LAYERS = [
    ("conv", dict(CONV, N=0), ValueError, "N must be positive, got 0"),
    ("conv", dict(CONV, C=-3), ValueError, "C must be positive, got -3"),
    ("conv", dict(CONV, K=2.0), TypeError, "K must be an integer, not float"),
    ("conv", dict(CONV, R=True), TypeError, "R must be an integer, not bool"),
    ("conv", dict(CONV, str_h=0), ValueError, "str_h must be positive"),
    ("conv", dict(CONV, dil_w=0), ValueError, "dil_w must be positive"),
    ("conv", dict(CONV, pad_h=-1), ValueError, "pad_h must be non-negative"),
    ("conv", dict(CONV, pad_w=3), ValueError, "pad_w = 3 must be smaller than the filter extent 3"),
    ("conv", dict(CONV, T=2), ValueError, "output size M = 0 is smaller than 1"),
    ("conv", dict(CONV, H=2), ValueError, "output size P = 0 is smaller than 1: H"),
    ("conv", dict(CONV, W=4, dil_w=2), ValueError, "filter extent 5"),
    ("conv", dict(CONV, dtype=np.float64), TypeError, "support float16, bfloat16 and float32"),
    ("conv", dict(CONV, dtype=np.int8), TypeError, "not int8"),
    ("conv", dict(CONV, dtype="complex64"), TypeError,
     "support float16, bfloat16 and float32, not complex64"),
    ("conv", dict(CONV, N=2**16, H=2**8, W=2**8, C=2**8), ValueError, "more than 2\\*\\*31 - 1"),
    ("pool", dict(op="min", N=1, C=1), ValueError, "op must be 'max' or 'avg', not 'min'"),
    ("pool", dict(op=None, N=1, C=1), ValueError, "op must be 'max' or 'avg'"),
    ("pool", dict(op="max", N=1, C=4, J=5), ValueError, "output size K = 0 is smaller than 1"),
    ("pool", dict(op="max", N=1, C=4, J=2, pad_c=2), ValueError, "pad_c = 2 must be smaller"),
    ("pool", dict(op="avg", N=1, C=1, W=3, S=0), ValueError, "S must be positive"),
    ("pool", dict(op="avg", N=1, C=1, W=3, S=2, str_w=-1), ValueError, "str_w must be positive"),
    ("pool", dict(op="avg", N=1, C=1, dtype=np.float64), TypeError, "not float64"),
]


@pytest.mark.parametrize("which, kw, exc, match", BAD_LAYERS)
def test_bad_layer(ng, which, kw, exc, match):
    kw = dict(kw)
    dtype = kw.pop("dtype", F32)
    with pytest.raises(exc, match=match):
        getattr(ng, f"{which}_layer")(dtype, **kw)


def _bad_calls(ng):
    """(call, exception, message) for misuses of the conv/pool calls."""
    layer = ng.conv_layer(F32, **CONV)
    pool = ng.pool_layer(F32, "max", 1, 2, H=4, W=4, R=2, S=2)
    avg = ng.pool_layer(F32, "avg", 1, 2, H=4, W=4, R=2, S=2)
    I, F, O = (ng.zeros(d, F32) for d in (layer.dimI, layer.dimF, layer.dimO))
    PI, PO = ng.zeros(pool.dimI, F32), ng.zeros(pool.dimO, F32)
    other = gpuarray.CPU(seed=1).zeros(layer.dimI, F32)
    return [
        (lambda: ng.fprop_conv(layer, I, F, ng.zeros((2, 3, 3, 4), F32)), ValueError,
         r"fprop_conv: O has shape \(2,3,3,4\), but the layer expects \(2,1,3,3,4\)"),
        (lambda: ng.fprop_conv(layer, F, F, O), ValueError, "I has shape"),
        (lambda: ng.bprop_conv(layer, F, I, I), ValueError, r"bprop_conv: E has shape"),
        (lambda: ng.update_conv(layer, I, O, I), ValueError, r"update_conv: grad_F has shape"),
        (lambda: ng.fprop_conv(layer, I, ng.zeros(layer.dimF, F16), O), TypeError,
         "F must be float32 as the layer expects, not float16"),
        (lambda: ng.fprop_conv(layer, I.get(), F, O), TypeError, "I must be a tensor, not ndarray"),
        (lambda: ng.fprop_conv(layer, other, F, O), ValueError, "I belongs to a different factory"),
        (lambda: ng.fprop_conv(pool, I, F, O), TypeError, "fprop_conv needs a ConvLayer"),
        (lambda: ng.fprop_conv(layer, I, F, O, bias=ng.zeros((3,), F32)), ValueError,
         r"bias has shape \(3,\), but the layer expects \(4,\)"),
        (lambda: ng.fprop_conv(layer, I, F, O, bias=ng.zeros((4,), np.int32)), TypeError,
         "bias must be a float16, bfloat16 or float32 tensor, not int32"),
        (lambda: ng.fprop_conv(layer, I, F, O, alpha="2"), TypeError, "alpha must be a real number"),
        (lambda: ng.bprop_conv(layer, F, O, I, beta=None), TypeError, "beta must be a real number"),
        (lambda: ng.fprop_pool(layer, I, O), TypeError, "fprop_pool needs a PoolLayer"),
        (lambda: ng.fprop_pool(pool, PI, PI), ValueError, "fprop_pool: O has shape"),
        (lambda: ng.fprop_pool(pool, PI, PO, ng.zeros(pool.dimO, F32)), TypeError,
         "argmax must be uint8 as the layer expects, not float32"),
        (lambda: ng.fprop_pool(avg, PI, PO, ng.zeros(avg.dimO, np.uint8)), ValueError,
         "argmax applies to max pooling, not 'avg'"),
        (lambda: ng.bprop_pool(pool, PI, PI, PI), ValueError, "bprop_pool: E has shape"),
        (lambda: ng.bprop_pool(pool, PI, PO, PO), ValueError, "bprop_pool: grad_I has shape"),
        (lambda: ng.to_layout(I, "CHWN"), ValueError, "layout must be one of NCHW, NCDHW"),
        (lambda: ng.to_layout(O.reshape(2, 3, 3, 4), "NCHW"), ValueError, "must be a 5-D tensor"),
        (lambda: ng.to_layout(ng.zeros((1, 2, 3, 3, 1), F32), "NCHW"), ValueError,
         "NCHW needs D = 1, got shape .*; use NCDHW"),
        (lambda: ng.to_layout(other, "NCHW"), ValueError, "X belongs to a different factory"),
        (lambda: ng.from_layout(ng.zeros((2, 5, 5, 3), F32), layer), ValueError,
         r"the layer's tensors in NCDHW are \(2,3,1,5,5\) or \(2,4,1,3,3\) or \(4,3,1,3,3\)"),
        (lambda: ng.from_layout(ng.zeros((2, 3, 5, 5), F16), layer), TypeError,
         "X must be float32 as the layer expects, not float16"),
        (lambda: ng.from_layout(ng.zeros((2, 3, 5, 5), F32), "layer"), TypeError,
         "needs a ConvLayer .from ng.conv_layer. or PoolLayer"),
    ]


def test_bad_calls(ng):
    """Every misuse raises at the call, naming the expected and the actual value."""
    for call, exc, match in _bad_calls(ng):
        with pytest.raises(exc, match=match):
            call()
