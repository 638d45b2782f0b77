"""The op-tree form of convolution: ``O[:] = ng.relu(ng.conv(layer, I, F) + b)``.

The epilogue form must run as one ``fprop_conv`` (one implicit-GEMM launch on
Hopper) with its options set; any other expression computes the convolution
into a temporary first.  Values are compared with the loop implementation
of test_conv on both factories.
"""
import numpy as np
import pytest
from conftest import BF16

from test_conv import F16, F32, check, data, naive_conv

DTYPES = pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["f16", "bf16", "f32"])
#: 16-bit layers meet the implicit-GEMM path's needs (C, K multiples of 8 on sm_90)
LAYER = dict(N=2, C=16, K=24, H=7, W=6, R=3, S=3, pad_h=1, pad_w=1)


class ConvSpy:
    """Wraps a factory's ``_conv`` hook, keeping every call it runs."""

    def __init__(self, ng, monkeypatch):
        self.calls = []
        run = ng._conv

        def spy(call):
            self.calls.append(call)
            return run(call)

        monkeypatch.setattr(ng, "_conv", spy)


def _setup(ng, dtype, seed=4):
    layer = ng.conv_layer(dtype, **LAYER)
    rng = np.random.default_rng(seed)
    return layer, [data(ng, rng, d, dtype) for d in
                   (layer.dimI, layer.dimF, layer.dimO, (layer.K,))]


@DTYPES
def test_epilogue_form_is_one_fprop_conv(ng, monkeypatch, dtype):
    layer, ((I, vi), (F, vf), (O, vo), (b, vb)) = _setup(ng, dtype)
    spy = ConvSpy(ng, monkeypatch)
    O[:] = ng.relu(ng.conv(layer, I, F) * 0.5 + b) + O * -1.0
    assert len(spy.calls) == 1
    call = spy.calls[0]
    assert (call.kind, call.alpha, call.beta, call.relu, call.out) == ("fprop", 0.5, -1.0,
                                                                       True, O)
    assert call.bias is b
    check(O, np.maximum(0.5 * naive_conv(layer, "fprop", vi, vf) + vb, 0) - vo, dtype)


def test_plain_conv_and_bias_on_either_side(ng, monkeypatch):
    layer, ((I, vi), (F, vf), (O, _), (b, vb)) = _setup(ng, F16)
    spy = ConvSpy(ng, monkeypatch)
    O[:] = ng.conv(layer, I, F)
    check(O, naive_conv(layer, "fprop", vi, vf), F16)
    O[:] = b + ng.conv(layer, I, F)
    check(O, naive_conv(layer, "fprop", vi, vf) + vb, F16)
    assert len(spy.calls) == 2 and spy.calls[1].bias is b


@DTYPES
def test_conv_inside_a_larger_expression(ng, dtype):
    layer, ((I, vi), (F, vf), (O, _), (b, vb)) = _setup(ng, dtype)
    O[:] = ng.tanh(ng.conv(layer, I, F) * 0.1) * 2 - b
    ref = np.tanh(0.1 * naive_conv(layer, "fprop", vi, vf)) * 2 - vb
    check(O, ref, dtype)


def test_expression_operands_and_a_wider_destination(ng):
    layer, ((I, vi), (F, vf), _, _) = _setup(ng, F32)
    wide = ng.empty(layer.dimO, np.float64)
    wide[:] = ng.conv(layer, I * 2.0, ng.abs(F))
    ref = naive_conv(layer, "fprop", vi * 2, np.abs(vf))
    np.testing.assert_allclose(wide.get(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).mean())


def test_two_convolutions_in_one_tree(ng):
    layer, ((I, vi), (F, vf), (O, _), _) = _setup(ng, F32)
    O[:] = ng.conv(layer, I, F) - ng.conv(layer, I * -1.0, F)
    check(O, 2 * naive_conv(layer, "fprop", vi, vf), F32)


def test_bias_of_the_wrong_shape_is_not_an_epilogue(ng, monkeypatch):
    layer, ((I, vi), (F, vf), (O, _), _) = _setup(ng, F32)
    row = ng.array(np.arange(layer.dimO[-2], dtype=np.float32)[:, None])  # (Q, 1)
    spy = ConvSpy(ng, monkeypatch)
    O[:] = ng.conv(layer, I, F) + row
    assert spy.calls[0].bias is None and spy.calls[0].out is not O
    check(O, naive_conv(layer, "fprop", vi, vf) + np.arange(layer.dimO[-2])[:, None], F32)


def test_conv_misuse(ng):
    layer, ((I, _), (F, _), _, _) = _setup(ng, F16)
    other = ng.conv_layer(F16, **dict(LAYER, C=8))
    with pytest.raises(TypeError, match="ConvLayer"):
        ng.conv("layer", I, F)
    with pytest.raises(ValueError, match="I has shape"):
        ng.conv(other, I, F)
    with pytest.raises(TypeError, match="F must be float16"):
        ng.conv(layer, I, F.astype(np.float32))
    with pytest.raises(TypeError, match="tensor or expression"):
        ng.conv(layer, np.zeros(layer.dimI, np.float16), F)
    small = ng.empty((3, 3), F16)
    with pytest.raises(ValueError):
        small[:] = ng.conv(layer, I, F)


@pytest.mark.parametrize("dtype", [F16, F32], ids=["f16", "f32"])
@pytest.mark.parametrize("deterministic", [True, False])
def test_filter_gradient_is_bitwise_repeatable(ng, dtype, deterministic):
    """Split-K partials (implicit path) and chunk sums (gather path) add in a fixed order."""
    layer = ng.conv_layer(dtype, N=5, C=64, K=136, H=12, W=12, R=3, S=3, pad_h=1, pad_w=1)
    rng = np.random.default_rng(8)
    (I, vi), (E, ve) = (data(ng, rng, d, dtype) for d in (layer.dimI, layer.dimO))
    first, again = (ng.update_conv(layer, I, E, ng.empty(layer.dimF, dtype),
                                   deterministic=deterministic).get() for _ in range(2))
    np.testing.assert_array_equal(first, again)
    check(first, naive_conv(layer, "update", vi, ve), dtype)


def test_deterministic_must_be_a_bool(ng):
    layer = ng.conv_layer(F32, N=1, C=2, K=2, H=3, W=3)
    I, E, G = (ng.zeros(d, F32) for d in (layer.dimI, layer.dimO, layer.dimF))
    with pytest.raises(TypeError, match="deterministic must be True or False"):
        ng.update_conv(layer, I, E, G, deterministic="yes")
