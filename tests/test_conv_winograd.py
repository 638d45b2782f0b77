"""The Winograd F(2x2, 3x3) route of fp32 3x3 layers (gpuarray/conv/winograd.py).

Which layers take it; the transforms' launches and arguments on a
recording GPU (no GPU needed): the sequence per pass, the tiles, the
padding of bprop's flipped convolution, the chunks of the batch and how
update adds them; on the GPU, every pass and its epilogue against the
numpy reference (the CPU factory's) over a seeded sweep of sizes and
paddings, chunked and not.  What it shares with the FFT route (strided
views, channel slices, non-finite inputs, same bits, no allocation once
warm) is in test_conv_transform_routes.py.
"""
import numpy as np
import pytest

import gpuarray
from conftest import get_factory, skip_if_no_gpu
from gpuarray.conv import winograd
from test_conv import check, data
from test_conv_launch import _gpu, _RouteLibrary, route_steps
from test_gemm_plan import tensor_maps  # noqa: F401

F32 = np.dtype(np.float32)
NAMES = ("input", "grad_output", "filter", "filter_grad", "output")
FIELDS = ("src dst bias image filters tiles H W C K TP TQ pad_h pad_w src_ld dst_ld image_H image_W "
          "image_C image_ld alpha beta relu flip cmajor").split()


@pytest.fixture
def cpu():
    return gpuarray.CPU()


@pytest.mark.parametrize("kw, takes", [
    (dict(dtype=F32), True),
    (dict(dtype=np.float16), False),
    (dict(dtype="bfloat16"), False),
    (dict(dtype=F32, str_h=2, str_w=2), False),
    (dict(dtype=F32, R=5, S=5, pad_h=2, pad_w=2), False),
    (dict(dtype=F32, R=3, S=1, pad_w=0), False),
    (dict(dtype=F32, dil_h=2, dil_w=2, pad_h=2, pad_w=2), False),
    (dict(dtype=F32, D=3, T=3, pad_d=1), False),
    (dict(dtype=F32, C=31), False),
    (dict(dtype=F32, K=16), False),
    (dict(dtype=F32, pad_h=0, pad_w=2), True),
])
def test_which_layers_take_it(cpu, kw, takes):
    sizes = dict(N=2, C=32, K=32, H=9, W=9, R=3, S=3, pad_h=1, pad_w=1)
    sizes.update(kw)
    dtype = sizes.pop("dtype")
    assert winograd.applies(cpu.conv_layer(dtype, **sizes)) is takes


# -- on a recording GPU -----------------------------------------------------------------

@pytest.fixture
def ng(tensor_maps):  # noqa: F811 - the fixture imported above
    gpu = _gpu("sm_90")
    gpu.conv_library = _RouteLibrary(gpu.launches, winograd.STEM, FIELDS, winograd.ARGS)
    return gpu


def _steps(ng):
    """(transform name, its arguments) or "gemm" for each run of GEMM launches."""
    return [s if s == "gemm" else (s[0], s[3]) for s in route_steps(ng, "ga_winograd_")]


LAYER = dict(N=3, C=32, K=40, H=7, W=6, R=3, S=3, pad_h=1, pad_w=0)


def _tensors(ng, layer, kind):
    dims = {"fprop": (layer.dimI, layer.dimF, layer.dimO),
            "bprop": (layer.dimF, layer.dimO, layer.dimI),
            "update": (layer.dimI, layer.dimO, layer.dimF)}[kind]
    return [ng.empty(d, F32) for d in dims]


def test_fprop_transforms_around_one_batched_gemm(ng):
    layer = ng.conv_layer(F32, **LAYER)  # P, Q = 7, 4: tiles 4 x 2, the last row half outside
    I, F, O = _tensors(ng, layer, "fprop")  # noqa: E741
    bias = ng.empty((layer.K,), F32)
    ng.fprop_conv(layer, I, F, O, alpha=2.0, beta=0.5, relu=True, bias=bias)
    steps = _steps(ng)
    assert [s if s == "gemm" else s[0] for s in steps] == ["filter", "input", "gemm", "output"]
    filt, inp, out = steps[0][1], steps[1][1], steps[3][1]
    # the transformed filters written (16, C, K): the GEMM's n-contiguous operand
    assert (filt["src"], filt["K"], filt["C"], filt["flip"], filt["cmajor"]) == (F.ptr, 40, 32, 0, 1)
    assert inp["src"] == I.ptr and inp["tiles"] == 3 * 4 * 2
    assert (inp["H"], inp["W"], inp["C"], inp["TP"], inp["TQ"]) == (7, 6, 32, 4, 2)
    assert (inp["pad_h"], inp["pad_w"], inp["src_ld"]) == (1, 0, 32)
    assert out["src"] not in (inp["dst"], 0) and out["dst"] == O.ptr and out["bias"] == bias.ptr
    assert (out["H"], out["W"], out["C"], out["tiles"]) == (7, 4, 40, 24)
    assert (out["alpha"], out["beta"], out["relu"], out["dst_ld"]) == (2.0, 0.5, 1, 40)
    # what the direct sums of non-finite tiles read: I, F, I's sizes, the padding
    assert (out["image"], out["filters"], out["flip"]) == (I.ptr, F.ptr, 0)
    assert (out["image_H"], out["image_W"], out["image_C"], out["image_ld"]) == (7, 6, 32, 32)
    assert (out["pad_h"], out["pad_w"]) == (1, 0)


def test_channel_slices_are_read_and_written_in_place(ng):
    """A concatenation's branch: input and output are channel slices of wider
    tensors, read and written with their row strides, no copies."""
    layer = ng.conv_layer(F32, **LAYER)
    wide_I = ng.empty(layer.dimI[:4] + (48,), F32)
    wide_O = ng.empty(layer.dimO[:4] + (64,), F32)
    I, O = wide_I[..., 16:], wide_O[..., 8:48]  # noqa: E741
    ng.fprop_conv(layer, I, ng.empty(layer.dimF, F32), O)
    steps = [s for s in _steps(ng) if s != "gemm"]
    assert [s[0] for s in steps] == ["filter", "input", "output"]
    assert (steps[1][1]["src"], steps[1][1]["src_ld"]) == (I.ptr, 48)
    assert (steps[2][1]["dst"], steps[2][1]["dst_ld"]) == (O.ptr, 64)


def test_bprop_is_the_flipped_forward_convolution_of_E(ng):
    layer = ng.conv_layer(F32, **LAYER)
    F, E, grad = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, grad, alpha=0.5)
    steps = _steps(ng)
    assert [s if s == "gemm" else s[0] for s in steps] == ["filter", "input", "gemm", "output"]
    filt, inp, out = steps[0][1], steps[1][1], steps[3][1]
    assert (filt["flip"], filt["cmajor"]) == (1, 0)
    # E (7 x 4 positions, K channels) padded by 2 - pad gives the 7 x 6 input back
    assert (inp["src"], inp["H"], inp["W"], inp["C"]) == (E.ptr, 7, 4, 40)
    assert (inp["pad_h"], inp["pad_w"], inp["TP"], inp["TQ"]) == (1, 2, 4, 3)
    assert (out["dst"], out["H"], out["W"], out["C"], out["alpha"]) == (grad.ptr, 7, 6, 32, 0.5)
    assert (out["bias"], out["relu"]) == (0, 0)
    assert (out["image"], out["filters"], out["flip"]) == (E.ptr, F.ptr, 1)
    assert (out["image_H"], out["image_W"], out["image_C"], out["pad_h"], out["pad_w"]) == (7, 4, 40, 1, 2)


def test_update_adds_the_chunks_in_order(ng, monkeypatch):
    layer = ng.conv_layer(F32, **LAYER)
    per_image = winograd.POINTS * 4 * 2 * (32 + 40) * 4
    monkeypatch.setattr(winograd, "WORKSPACE_BYTES", 2 * per_image)  # chunks of 2 and 1 images
    I, E, grad = _tensors(ng, layer, "update")  # noqa: E741
    ng.update_conv(layer, I, E, grad, alpha=3.0, beta=1.0)
    steps = _steps(ng)
    kinds = [s if s == "gemm" else s[0] for s in steps]
    assert kinds == ["input", "grad_output", "gemm"] * 2 + ["filter_grad"]
    assert [s[1]["tiles"] for s in steps if s != "gemm" and s[0] == "input"] == [16, 8]
    assert steps[3][1]["src"] == I[2:].ptr and steps[4][1]["src"] == E[2:].ptr
    last = steps[-1][1]
    assert last["dst"] == grad.ptr and (last["alpha"], last["beta"]) == (3.0, 1.0)
    assert (last["K"], last["C"]) == (40, 32)


def test_other_layers_keep_the_gather_route(ng):
    layer = ng.conv_layer(F32, **dict(LAYER, str_w=2))
    ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
    assert not [s for s in _steps(ng) if s != "gemm"]


# -- on the GPU ------------------------------------------------------------------------------

def _cases(count=6, seed=5):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        cases.append(dict(N=int(rng.integers(1, 4)), C=int(rng.choice([32, 40, 64])),
                          K=int(rng.choice([32, 48, 64])), H=int(rng.integers(3, 12)),
                          W=int(rng.integers(3, 12)), R=3, S=3,
                          pad_h=int(rng.integers(0, 3)), pad_w=int(rng.integers(0, 3))))
    return [c for c in cases if c["H"] + 2 * c["pad_h"] >= 3 and c["W"] + 2 * c["pad_w"] >= 3]


def _inputs(ng, layer, kind, rng):
    shapes = {"fprop": (layer.dimI, layer.dimF), "bprop": (layer.dimF, layer.dimO),
              "update": (layer.dimI, layer.dimO)}[kind]
    return [data(ng, rng, s, F32) for s in shapes]


def _run(ng, layer, kind, a, b, out, **options):
    getattr(ng, f"{kind}_conv")(layer, a, b, out, **options)
    return out.get()


def _reference(gpu_layer, kind, a, b, out, **options):
    """The CPU factory's (numpy's) result of the same stride-1 layer, in float64."""
    g, cpu = gpu_layer, get_factory("cpu")
    layer = cpu.conv_layer(F32, g.N, g.C, g.K, H=g.H, W=g.W, R=g.R, S=g.S, pad_h=g.pad[1],
                           pad_w=g.pad[2])
    res = cpu.array(out)
    getattr(cpu, f"{kind}_conv")(layer, cpu.array(a), cpu.array(b), res, **options)
    return res.get().astype(np.float64)


@pytest.mark.parametrize("kw", _cases(), ids=lambda kw: "N{N}C{C}K{K}H{H}W{W}p{pad_h}{pad_w}".format(**kw))
@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_matches_the_reference(kind, kw):
    skip_if_no_gpu()
    ng = get_factory("gpu")
    layer = ng.conv_layer(F32, **kw)
    assert winograd.applies(layer)
    rng = np.random.default_rng(3)
    (a, ha), (b, hb) = _inputs(ng, layer, kind, rng)
    shape = {"fprop": layer.dimO, "bprop": layer.dimI, "update": layer.dimF}[kind]
    old = rng.uniform(-1, 1, shape).astype(F32)
    options = dict(alpha=1.5, beta=0.25)
    if kind == "fprop":
        bias = rng.uniform(-1, 1, layer.K).astype(F32)
        options.update(relu=True)
        got = _run(ng, layer, kind, a, b, ng.array(old), bias=ng.array(bias), **options)
        ref = _reference(layer, kind, ha.astype(F32), hb.astype(F32), old,
                         bias=get_factory("cpu").array(bias), **options)
    else:
        got = _run(ng, layer, kind, a, b, ng.array(old), **options)
        ref = _reference(layer, kind, ha.astype(F32), hb.astype(F32), old, **options)
    check(got, ref, F32)


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_chunks_give_the_same_result(monkeypatch, kind):
    skip_if_no_gpu()
    ng = get_factory("gpu")
    layer = ng.conv_layer(F32, N=5, C=32, K=48, H=9, W=8, R=3, S=3, pad_h=1, pad_w=1)
    rng = np.random.default_rng(8)
    (a, _), (b, _) = _inputs(ng, layer, kind, rng)
    shape = {"fprop": layer.dimO, "bprop": layer.dimI, "update": layer.dimF}[kind]
    whole = _run(ng, layer, kind, a, b, ng.empty(shape, F32))
    per_image = winograd.POINTS * 5 * 4 * (32 + 48) * 4
    monkeypatch.setattr(winograd, "WORKSPACE_BYTES", 2 * per_image)
    chunked = _run(ng, layer, kind, a, b, ng.empty(shape, F32))
    # the GEMM's plan (its split of the sums) follows the chunk's size: equal to rounding
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-5 * np.abs(whole).max())
