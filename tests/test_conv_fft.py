"""The FFT route of fp32 4x4 to 7x7 layers (gpuarray/conv/fft.py).

Which layers take it and which transform size covers them; the
transforms' launches and arguments on a recording GPU (no GPU needed):
the sequence per pass, the tiles, the spectra's strides, the padding of
bprop's rotated convolution, the chunks of the batch and how update adds
them; on the GPU, every pass and its epilogue against the numpy
reference (the CPU factory's) over a seeded sweep of filter sizes, image
sizes and paddings (one tile and several, both transform sizes), chunked
and not.  What it shares with the Winograd route (strided views, channel
slices, non-finite inputs, same bits, no allocation once warm) is in
test_conv_transform_routes.py.
"""
import numpy as np
import pytest

import gpuarray
from conftest import get_factory, skip_if_no_gpu
from gpuarray.conv import fft
from test_conv import check
from test_conv_launch import _gpu, _RouteLibrary, route_steps
from test_conv_winograd import _inputs, _reference, _run, _tensors
from test_gemm_plan import tensor_maps  # noqa: F401

F32 = np.dtype(np.float32)
OUT = {"fprop": "dimO", "bprop": "dimI", "update": "dimF"}


@pytest.fixture
def cpu():
    return gpuarray.CPU()


@pytest.fixture(autouse=True)
def thin_layers(request, monkeypatch):
    """The route from 16 channels and filters (its threshold, 64, is where it
    pays on an H100): the tests' numpy references stay small."""
    if request.node.originalname != "test_which_layers_take_it":
        monkeypatch.setattr(fft, "MIN_CHANNELS", 16)


@pytest.mark.parametrize("kw, takes", [
    (dict(dtype=F32), True),
    (dict(dtype=F32, R=7, S=4, pad_h=3, pad_w=0), True),
    (dict(dtype=np.float16), False),
    (dict(dtype="bfloat16"), False),
    (dict(dtype=F32, R=3, S=3, pad_h=1, pad_w=1), False),   # Winograd's
    (dict(dtype=F32, R=8, S=8), False),
    (dict(dtype=F32, R=5, S=1, pad_w=0), False),
    (dict(dtype=F32, str_h=2, str_w=2), False),
    (dict(dtype=F32, dil_h=2, dil_w=2), False),
    (dict(dtype=F32, D=3, T=5, pad_d=2), False),
    (dict(dtype=F32, C=63), False),
    (dict(dtype=F32, K=48), False),
    (dict(dtype=F32, C=256, K=480), True),                  # 1,020 MiB of filter spectra
    (dict(dtype=F32, C=512, K=256), False),                 # 1,088 MiB: too many
])
def test_which_layers_take_it(cpu, kw, takes):
    sizes = dict(N=2, C=64, K=64, H=12, W=12, R=5, S=5, pad_h=2, pad_w=2)
    sizes.update(kw)
    dtype = sizes.pop("dtype")
    assert fft.applies(cpu.conv_layer(dtype, **sizes)) is takes


@pytest.mark.parametrize("outputs, filt, plan", [
    ((27, 27), (5, 5), (32, 1, 1)),   # AlexNet conv2: one 32 x 32 tile
    ((7, 7), (5, 5), (16, 1, 1)),
    ((14, 14), (5, 5), (16, 2, 2)),   # as many points either way: the smaller
    ((56, 56), (5, 5), (32, 2, 2)),
    ((20, 9), (7, 4), (16, 2, 1)),
])
def test_plan_covers_the_outputs_in_the_fewest_points(outputs, filt, plan):
    assert fft.plan(*outputs, *filt) == plan


# -- on a recording GPU -----------------------------------------------------------------

@pytest.fixture
def ng(tensor_maps):  # noqa: F811 - the fixture imported above
    gpu = _gpu("sm_90")
    gpu.conv_library = _RouteLibrary(gpu.launches, fft.STEM, fft.FIELDS, fft.ARGS)
    return gpu


def _steps(ng):
    """(transform name, grid, block, its arguments) or "gemm" for each run of GEMM launches."""
    return route_steps(ng, "ga_fft_")


def _names(steps):
    return [s if s == "gemm" else s[0] for s in steps]


# P, Q = 13, 10 with L = 16 (TH = 12, TW = 11): tiles 2 x 1
LAYER = dict(N=3, C=16, K=24, H=15, W=9, R=5, S=6, pad_h=1, pad_w=3)


def test_fprop_transforms_around_one_batched_gemm(ng):
    layer = ng.conv_layer(F32, **LAYER)
    I, F, O = _tensors(ng, layer, "fprop")  # noqa: E741
    bias = ng.empty((layer.K,), F32)
    ng.fprop_conv(layer, I, F, O, alpha=2.0, beta=0.5, relu=True, bias=bias)
    steps = _steps(ng)
    assert _names(steps) == ["filter_16", "input_16", "gemm", "output_16"]
    (_, fgrid, fblock, filt), (_, igrid, iblock, inp), _, (_, ogrid, _, out) = steps
    assert (fgrid, fblock) == ((16, 3, 1), (128, 1, 1))   # (Cin, Cout groups of 8)
    assert (filt["filters"], filt["Cin"], filt["Cout"], filt["R"], filt["S"], filt["flip"]) == \
        (F.ptr, 16, 24, 5, 6, 0)
    assert (igrid, iblock) == ((3 * 2, 2, 1), (128, 1, 1))   # (tiles, C groups)
    assert (inp["src"], inp["H"], inp["W"], inp["C"], inp["src_ld"]) == (I.ptr, 15, 9, 16, 16)
    assert (inp["TP"], inp["TQ"], inp["TH"], inp["TW"], inp["pad_h"], inp["pad_w"]) == (2, 1, 12, 11, 1, 3)
    assert (inp["extent_h"], inp["extent_w"]) == (16, 16)
    # spectra (points, tile, part, channel)
    assert (inp["s_point"], inp["s_tile"], inp["s_part"]) == (6 * 32, 32, 16)
    assert ogrid == (6, 3, 1) and out["src"] not in (inp["dst"], 0)
    assert (out["s_point"], out["s_tile"], out["s_part"]) == (6 * 48, 48, 24)
    assert (out["dst"], out["H"], out["W"], out["C"], out["dst_ld"]) == (O.ptr, 13, 10, 24, 24)
    assert (out["alpha"], out["beta"], out["relu"], out["bias"]) == (2.0, 0.5, 1, bias.ptr)
    # what the direct sums of non-finite tiles read
    assert (out["image"], out["filters"], out["image_H"], out["image_W"], out["src_ld"]) == \
        (I.ptr, F.ptr, 15, 9, 16)
    assert (out["Cin"], out["pad_h"], out["pad_w"], out["flip"]) == (16, 1, 3, 0)


def test_channel_slices_are_read_and_written_in_place(ng):
    layer = ng.conv_layer(F32, **LAYER)
    wide_I = ng.empty(layer.dimI[:4] + (40,), F32)
    wide_O = ng.empty(layer.dimO[:4] + (64,), F32)
    I, O = wide_I[..., 8:24], wide_O[..., 16:40]  # noqa: E741
    ng.fprop_conv(layer, I, ng.empty(layer.dimF, F32), O)
    steps = [s for s in _steps(ng) if s != "gemm"]
    assert (steps[1][3]["src"], steps[1][3]["src_ld"]) == (I.ptr, 40)
    assert (steps[2][3]["dst"], steps[2][3]["dst_ld"]) == (O.ptr, 64)


def test_bprop_is_the_rotated_forward_convolution_of_E(ng):
    layer = ng.conv_layer(F32, **LAYER)
    F, E, grad = _tensors(ng, layer, "bprop")
    ng.bprop_conv(layer, F, E, grad, alpha=0.5)
    steps = _steps(ng)
    assert _names(steps) == ["filter_16", "input_16", "gemm", "output_16"]
    filt, inp, out = steps[0][3], steps[1][3], steps[3][3]
    assert (steps[0][1], filt["Cin"], filt["Cout"], filt["flip"]) == ((24, 2, 1), 24, 16, 1)
    # E (13 x 10, K channels) padded by R - 1 - pad gives the 15 x 9 input back
    assert (inp["src"], inp["H"], inp["W"], inp["C"]) == (E.ptr, 13, 10, 24)
    assert (inp["pad_h"], inp["pad_w"], inp["TP"], inp["TQ"]) == (3, 2, 2, 1)
    assert (out["dst"], out["H"], out["W"], out["C"], out["alpha"]) == (grad.ptr, 15, 9, 16, 0.5)
    assert (out["bias"], out["relu"], out["image"], out["flip"]) == (0, 0, E.ptr, 1)


def test_update_adds_the_chunks_in_order(ng, monkeypatch):
    layer = ng.conv_layer(F32, **LAYER)
    per_image = fft.points(16) * 2 * (3 * 16 + 2 * 24) * 4
    monkeypatch.setattr(fft, "WORKSPACE_BYTES", 2 * per_image)  # chunks of 2 and 1 images
    I, E, grad = _tensors(ng, layer, "update")  # noqa: E741
    ng.update_conv(layer, I, E, grad, alpha=3.0, beta=1.0)
    steps = _steps(ng)
    assert _names(steps) == ["input_16", "input_16", "gemm"] * 2 + ["filter_grad_16"]
    assert [s[1][0] for s in steps if s != "gemm" and s[0] == "input_16"] == [4, 4, 2, 2]
    image, grad_out = steps[3][3], steps[4][3]
    assert (image["src"], image["pad_h"], image["pad_w"], image["extent_h"]) == (I[2:].ptr, 1, 3, 16)
    # (points, part, tile, channel), parts real, imaginary and -real: the
    # last chunk, 1 image, has 2 tiles
    assert (image["s_point"], image["s_tile"], image["s_part"], image["parts"]) == \
        (3 * 2 * 16, 16, 2 * 16, 3)
    # the output gradient's tiles: TH x TW values from each tile's corner, no padding
    assert (grad_out["src"], grad_out["H"], grad_out["W"], grad_out["C"]) == (E[2:].ptr, 13, 10, 24)
    assert (grad_out["pad_h"], grad_out["pad_w"], grad_out["extent_h"], grad_out["extent_w"]) == \
        (0, 0, 12, 11)
    assert (grad_out["s_point"], grad_out["s_part"], grad_out["parts"]) == (2 * 2 * 24, 2 * 24, 0)
    last = steps[-1][3]
    assert last["dst"] == grad.ptr and (last["alpha"], last["beta"]) == (3.0, 1.0)
    assert (last["Cin"], last["Cout"], last["R"], last["S"]) == (16, 24, 5, 6)


def test_update_spectrum_products_are_two_gemms(ng):
    """Z = E^H D as two products over both parts' tiles: Re of D's real
    and imaginary parts, Im of its imaginary and negated real parts."""
    layer = ng.conv_layer(F32, **LAYER)
    I, E, grad = _tensors(ng, layer, "update")  # noqa: E741
    calls = []
    ng.batched_dot = lambda A, B, C, alpha=1.0, beta=0.0: calls.append(
        (A.shape, B.shape, C.shape, alpha, beta))
    ng.update_conv(layer, I, E, grad)
    n, tiles = fft.points(16), 3 * 2
    assert calls == [((n, 24, 2 * tiles), (n, 2 * tiles, 16), (n, 24, 16), 1.0, 0.0)] * 2


def test_other_layers_take_other_routes(ng):
    for kw in (dict(LAYER, str_w=2), dict(LAYER, R=3, S=3, pad_w=1)):
        layer = ng.conv_layer(F32, **kw)
        ng.fprop_conv(layer, *_tensors(ng, layer, "fprop"))
        assert not [s for s in _steps(ng) if s != "gemm"]


# -- on the GPU ------------------------------------------------------------------------------

def _cases(count=8, seed=11):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        R, S = (int(v) for v in rng.integers(4, 8, 2))
        cases.append(dict(N=int(rng.integers(1, 4)), C=int(rng.choice([16, 24, 40])),
                          K=int(rng.choice([16, 32, 48])), H=int(rng.integers(R, 30)),
                          W=int(rng.integers(S, 30)), R=R, S=S,
                          pad_h=int(rng.integers(0, R)), pad_w=int(rng.integers(0, S))))
    # one layer of 32 x 32 tiles, two along each side
    cases.append(dict(N=1, C=16, K=16, H=56, W=56, R=5, S=5, pad_h=2, pad_w=2))
    return cases


def _check_pass(ng, layer, kind, rng):
    (a, ha), (b, hb) = _inputs(ng, layer, kind, rng)
    old = rng.uniform(-1, 1, getattr(layer, OUT[kind])).astype(F32)
    options = dict(alpha=1.5, beta=0.25)
    if kind == "fprop":
        bias = rng.uniform(-1, 1, layer.K).astype(F32)
        got = _run(ng, layer, kind, a, b, ng.array(old), bias=ng.array(bias), relu=True, **options)
        ref = _reference(layer, kind, ha.astype(F32), hb.astype(F32), old,
                         bias=get_factory("cpu").array(bias), relu=True, **options)
    else:
        got = _run(ng, layer, kind, a, b, ng.array(old), **options)
        ref = _reference(layer, kind, ha.astype(F32), hb.astype(F32), old, **options)
    check(got, ref, F32)


@pytest.mark.parametrize("kw", _cases(),
                         ids=lambda kw: "N{N}C{C}K{K}H{H}W{W}R{R}S{S}p{pad_h}{pad_w}".format(**kw))
@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_matches_the_reference(kind, kw):
    skip_if_no_gpu()
    ng = get_factory("gpu")
    layer = ng.conv_layer(F32, **kw)
    assert fft.applies(layer)
    _check_pass(ng, layer, kind, np.random.default_rng(3))


@pytest.mark.parametrize("kind", ["fprop", "bprop", "update"])
def test_chunks_give_the_same_result(monkeypatch, kind):
    skip_if_no_gpu()
    ng = get_factory("gpu")
    layer = ng.conv_layer(F32, N=5, C=16, K=24, H=9, W=8, R=5, S=5, pad_h=2, pad_w=2)
    rng = np.random.default_rng(8)
    (a, _), (b, _) = _inputs(ng, layer, kind, rng)
    shape = getattr(layer, OUT[kind])
    whole = _run(ng, layer, kind, a, b, ng.empty(shape, F32))
    monkeypatch.setattr(fft, "WORKSPACE_BYTES", 2 * fft.points(16) * 2 * (48 + 48) * 4)
    chunked = _run(ng, layer, kind, a, b, ng.empty(shape, F32))
    # the GEMMs' plans (their splits of the sums) follow the chunk's size: equal to rounding
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-5 * np.abs(whole).max())
