"""What the fp32 transform routes -- Winograd (gpuarray/conv/winograd.py)
and FFT (gpuarray/conv/fft.py) -- share, on the GPU: strided views and the
same bits on every run, channel slices read and written in place,
non-finite inputs reaching the outputs the direct sum's do, and no
allocation once warm.  Each route's own launches, passes and chunks are in
test_conv_winograd.py and test_conv_fft.py.
"""
import numpy as np
import pytest

from conftest import assert_no_new_allocations, get_factory, skip_if_no_gpu
from gpuarray.conv import fft, winograd
from test_conv import check, data
from test_conv_winograd import _reference, _run

F32 = np.dtype(np.float32)
#: each route's filters and padding, and the module that decides which layers take it
ROUTES = {"winograd": (winograd, dict(R=3, S=3, pad_h=1, pad_w=1)),
          "fft": (fft, dict(R=5, S=5, pad_h=2, pad_w=2))}


@pytest.fixture(params=sorted(ROUTES))
def route(request, monkeypatch):
    """(module, filter and padding keywords) of a route; the FFT route from
    32 channels here (its threshold is where it pays on an H100)."""
    monkeypatch.setattr(fft, "MIN_CHANNELS", 32)
    return ROUTES[request.param]


def _gpu_layer(route, seed, **kw):
    """(GPU factory, fp32 layer of ``kw`` on ``route``, seeded generator); skips without a GPU."""
    skip_if_no_gpu()
    ng = get_factory("gpu")
    module, filters = route
    layer = ng.conv_layer(F32, **filters, **kw)
    assert module.applies(layer)
    return ng, layer, np.random.default_rng(seed)


def test_strided_views_and_same_bits_every_run(route):
    ng, layer, rng = _gpu_layer(route, 4, N=2, C=32, K=32, H=10, W=11)
    host_I = rng.uniform(-1, 1, layer.dimI[:4] + (64,)).astype(F32)
    I = ng.array(host_I)[..., ::2]  # noqa: E741 - every other channel: not contiguous
    (E, hE), = [data(ng, rng, layer.dimO, F32)]
    grad = ng.empty(layer.dimF[:4] + (64,), F32)[..., 1::2]
    first = _run(ng, layer, "update", I, E, grad)
    again = _run(ng, layer, "update", I, E, grad)
    np.testing.assert_array_equal(first, again)
    ref = _reference(layer, "update", np.ascontiguousarray(host_I[..., ::2]), hE.astype(F32),
                     np.zeros(layer.dimF, F32))
    check(first, ref, F32)


def test_channel_slices_on_the_gpu(route):
    """A concatenation's branch: input and output are channel slices of wider tensors."""
    ng, layer, rng = _gpu_layer(route, 6, N=2, C=32, K=40, H=9, W=10)
    wide_I = rng.uniform(-1, 1, layer.dimI[:4] + (48,)).astype(F32)
    F = rng.uniform(-1, 1, layer.dimF).astype(F32)
    wide_O = ng.zeros(layer.dimO[:4] + (64,), F32)
    ng.fprop_conv(layer, ng.array(wide_I)[..., 16:], ng.array(F), wide_O[..., 8:48])
    ref = _reference(layer, "fprop", np.ascontiguousarray(wide_I[..., 16:]), F,
                     np.zeros(layer.dimO, F32))
    got = wide_O.get()
    check(np.ascontiguousarray(got[..., 8:48]), ref, F32)
    assert not got[..., :8].any() and not got[..., 48:].any()


@pytest.mark.parametrize("kind", ["fprop", "bprop"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_values_as_the_direct_sum(route, kind, value):
    """A non-finite input reaches the outputs the direct sum's does (the
    transforms alone would turn the tiles it reaches into NaN)."""
    ng, layer, rng = _gpu_layer(route, 9, N=2, C=32, K=32, H=13, W=12)
    shapes = {"fprop": (layer.dimI, layer.dimF), "bprop": (layer.dimF, layer.dimO)}[kind]
    a, b = (rng.uniform(0.5, 1, s).astype(F32) for s in shapes)
    (a if kind == "fprop" else b)[1, 0, 3, 2, 5] = value
    out = {"fprop": layer.dimO, "bprop": layer.dimI}[kind]
    got = _run(ng, layer, kind, ng.array(a), ng.array(b), ng.empty(out, F32))
    ref = _reference(layer, kind, a, b, np.zeros(out, F32))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    assert not np.isfinite(ref).all() and np.isfinite(ref).any()
    finite = np.isfinite(ref)
    check(np.where(finite, got, 0), np.where(finite, ref, 0), F32)


# no_sanitizer: under compute-sanitizer the frames of finished calls stay
# referenced from outside Python (memcheck on the H100: the three workspaces
# of every call stay in use, none in the plain suite), so memory returns late
@pytest.mark.no_sanitizer
def test_warm_passes_allocate_nothing(route):
    ng, layer, _ = _gpu_layer(route, 0, N=2, C=32, K=32, H=12, W=12)
    I, F, O = (ng.ones(d, F32) for d in (layer.dimI, layer.dimF, layer.dimO))  # noqa: E741
    gI, gF = ng.empty(layer.dimI, F32), ng.empty(layer.dimF, F32)

    def passes():
        ng.fprop_conv(layer, I, F, O)
        ng.bprop_conv(layer, F, O, gI)
        ng.update_conv(layer, I, O, gF)

    passes()
    before = ng.stats()
    passes()
    assert_no_new_allocations(ng, before)
    # every value of an all-ones fprop is a count of the taps inside the image:
    # at the corner, (R - pad_h) x (S - pad_w) of them
    corner = (layer.R - layer.pad[1]) * (layer.S - layer.pad[2]) * layer.C
    assert abs(float(O.get()[0, 0, 0, 0, 0]) - corner) < 1e-3
