"""Strided data gradients by phases (gpuarray/conv/phased.py).

Without a GPU: the transformation itself -- the forward convolution over
the stride's phases, the filters' strided view, the spreading copy, the
crop -- run on the CPU factory, equals the reference data gradient on a
seeded sweep of strides, filter sizes, paddings and image sizes (alpha
and beta included); which layers it applies to.
On the GPU: AlexNet's conv1 and others in fp16 and bf16 take this route
(an implicit-GEMM forward convolution on Hopper) and match a float64 loop
implementation, and repeated calls allocate nothing new.
"""
import numpy as np
import pytest
from conftest import BF16, assert_no_new_allocations
from test_conv import check, data, naive_conv

import gpuarray
from gpuarray.conv import phased

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _random_layers(ng, count, seed):
    """Strided 2-D layers with random filters, paddings and sizes (fp32)."""
    rng, layers = np.random.default_rng(seed), []
    while len(layers) < count:
        str_h, str_w = (int(v) for v in rng.integers(1, 5, size=2))
        R, S = (int(v) for v in rng.integers(1, 12, size=2))
        pad_h, pad_w = int(rng.integers(0, R)), int(rng.integers(0, S))
        H, W = (int(v) for v in rng.integers(1, 40, size=2))
        if (str_h, str_w) == (1, 1) or H + 2 * pad_h < R or W + 2 * pad_w < S:
            continue
        layer = ng.conv_layer(F32, 2, int(rng.integers(1, 5)), 8, H=H, W=W, R=R, S=S,
                              pad_h=pad_h, pad_w=pad_w, str_h=str_h, str_w=str_w)
        if phased.Phases(layer).fits:
            layers.append(layer)
    return layers


def test_phases_give_the_data_gradient():
    ng, rng = gpuarray.CPU(), np.random.default_rng(5)
    for layer in _random_layers(ng, 40, seed=4):
        F = ng.array(rng.standard_normal(layer.dimF).astype(F32))
        E = ng.array(rng.standard_normal(layer.dimO).astype(F32))
        start = rng.standard_normal(layer.dimI).astype(F32)
        want, got = ng.array(start), ng.array(start)
        ng.bprop_conv(layer, F, E, want, alpha=0.5, beta=0.25)
        phased.bprop(ng, phased.Phases(layer), F, E, got, 0.5, 0.25)
        np.testing.assert_allclose(got.get(), want.get(), rtol=1e-4, atol=1e-4,
                                   err_msg=repr(layer))


def test_alexnets_first_layer_by_phases():
    layer = gpuarray.CPU().conv_layer(F16, 128, 3, 64, H=224, W=224, R=11, S=11, pad_h=2,
                                      pad_w=2, str_h=4, str_w=4)
    phases = phased.Phases(layer)
    # 16 phases of 3 channels, 4x4 taps over E's 64 channels, blocks of 4x4 pixels
    assert phases.layer.dimF == (48, 1, 4, 4, 64) and phases.layer.dimI == layer.dimO
    assert (phases.rows, phases.cols) == (56, 56) and phases.layer.P == 56
    assert phases.overhead == 16 * 16 / 121


class _Hopper:
    arch = "sm_90"


@pytest.mark.parametrize("kw, applies", [
    (dict(dtype=F16, R=11, S=11, pad_h=2, pad_w=2, str_h=4, str_w=4), True),
    (dict(dtype=BF16, R=5, S=5, pad_h=2, pad_w=2, str_h=2, str_w=1), True),  # 1.2x the work
    (dict(dtype=F16, R=3, S=3, pad_h=1, pad_w=1, str_h=2, str_w=2), False),  # 4x: slower
    (dict(dtype=F32, R=11, S=11, pad_h=2, pad_w=2, str_h=4, str_w=4), False),  # FFMA route
    (dict(dtype=F16, R=3, S=3, pad_h=1, pad_w=1), False),  # stride 1: implicit already
    (dict(dtype=F16, R=3, S=3, pad_h=2, pad_w=2, str_h=2, str_w=2, dil_h=2, dil_w=2), False),
])
def test_which_layers_take_the_phases(kw, applies):
    dtype = kw.pop("dtype")
    layer = gpuarray.CPU().conv_layer(dtype, 2, 3, 64, H=32, W=32, **kw)
    assert phased.applies(_Hopper(), layer) is applies
    assert not phased.applies(gpuarray.CPU(), layer)


@pytest.mark.parametrize("kw", [
    dict(C=3, K=64, H=32, W=32, R=11, S=11, pad_h=2, pad_w=2, str_h=4, str_w=4),  # AlexNet's
    dict(C=3, K=96, H=23, W=23, R=11, S=11, str_h=4, str_w=4),  # Overfeat's: a crop
    dict(C=16, K=32, H=15, W=16, R=5, S=5, pad_h=2, pad_w=2, str_h=2, str_w=2),
], ids=["alexnet", "overfeat", "5x5s2"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_gpu_strided_gradients_by_phases(gpu_ng, kw, dtype):
    ng, rng = gpu_ng, np.random.default_rng(7)
    layer = ng.conv_layer(dtype, 2, **kw)
    F, f = data(ng, rng, layer.dimF, dtype)
    E, e = data(ng, rng, layer.dimO, dtype)
    grad, start = data(ng, rng, layer.dimI, dtype)
    ng.bprop_conv(layer, F, E, grad, alpha=0.5, beta=0.5)
    if ng.arch == "sm_90":
        assert isinstance(ng._conv_plans.get(("phases", layer.key)), phased.Phases)
    check(grad, 0.5 * naive_conv(layer, "bprop", f, e) + 0.5 * start, dtype)
    ng.bprop_conv(layer, F, E, grad)
    check(grad, naive_conv(layer, "bprop", f, e), dtype)


# no_sanitizer: under compute-sanitizer the frames of finished calls stay
# referenced from outside Python, so memory returns late (as in
# test_conv.py's second-run test); checked in the plain suite
@pytest.mark.no_sanitizer
@pytest.mark.parametrize("H", [32, 23], ids=["spread", "crop"])
def test_gpu_phases_allocate_nothing_once_warm(gpu_ng, H):
    ng, rng = gpu_ng, np.random.default_rng(8)
    layer = ng.conv_layer(F16, 2, 3, 64, H=H, W=H, R=11, S=11, str_h=4, str_w=4)
    tensors = [data(ng, rng, dims, F16)[0] for dims in (layer.dimF, layer.dimO, layer.dimI)]
    ng.bprop_conv(layer, *tensors)
    ng.bprop_conv(layer, *tensors)
    before = ng.stats()
    ng.bprop_conv(layer, *tensors)
    assert_no_new_allocations(ng, before)
    assert ng.stats().get("tma_encodes", 0) == before.get("tma_encodes", 0)
