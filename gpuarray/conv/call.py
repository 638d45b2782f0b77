"""Convolution and pooling calls, checked against their layer.

In: the user's layer, tensors and options of one ``ng.fprop_conv`` ...
``ng.bprop_pool`` call.  Out: a :class:`ConvCall` or :class:`PoolCall`
the factory runs with its ``_conv`` / ``_pool`` hook.  Every misuse -- a
tensor of the wrong shape, dtype or factory, a bad option -- raises here,
naming the expected and the actual value, before anything runs.
"""
import numbers
from dataclasses import dataclass

import numpy as np

from ..core import dtypes, shapes
from ..core.array import Tensor
from .layer import DTYPES, ConvLayer, PoolLayer

CONV_KINDS = ("fprop", "bprop", "update")


@dataclass(slots=True)
class ConvCall:
    """One checked convolution: ``out = relu(alpha * op(a, b) + bias) + beta * out``.

    ============ ======= ======= ========
    kind         a       b       out
    ============ ======= ======= ========
    ``fprop``    I       F       O
    ``bprop``    F       E       grad_I
    ``update``   I       E       grad_F
    ============ ======= ======= ========

    ``relu`` and ``bias`` (shape ``(K,)``) belong to fprop only.
    """

    kind: str
    layer: ConvLayer
    a: Tensor
    b: Tensor
    out: Tensor
    alpha: float = 1.0
    beta: float = 0.0
    relu: bool = False
    bias: Tensor = None


@dataclass
class PoolCall:
    """One checked pooling pass.

    ``fprop``: ``out`` (O) from ``inputs`` (I), and ``argmax`` filled for
    max pooling when given.  ``bprop``: ``out`` (grad_I) from ``errors``
    (E); max pooling reads ``argmax`` when given, else recomputes it from I.
    """

    kind: str
    layer: PoolLayer
    inputs: Tensor
    out: Tensor
    errors: Tensor = None
    argmax: Tensor = None


_MAKERS = {ConvLayer: "ng.conv_layer", PoolLayer: "ng.pool_layer"}


def check_layer(layer, classes, what):
    """``layer`` must be an instance of one of ``classes``."""
    classes = classes if isinstance(classes, tuple) else (classes,)
    if not isinstance(layer, classes):
        wanted = " or ".join(f"{c.__name__} (from {_MAKERS[c]})" for c in classes)
        raise TypeError(f"{what} needs a {wanted}, not {type(layer).__name__}")
    return layer


def check_tensor(backend, t, name, shape, dtype, what):
    """``t`` must be a tensor of ``backend`` (with ``shape`` and ``dtype`` unless None)."""
    if (type(t) is backend.tensor_class and t.backend is backend and t.dtype == dtype
            and t.shape == shape):
        return t  # the usual case, settled in one test
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be a tensor, not {type(t).__name__}")
    if t.backend is not backend:
        raise ValueError(f"{what}: {name} belongs to a different factory ({t.backend!r}, "
                         f"not {backend!r}); copy it over first")
    if dtype is None:
        return t
    if t.dtype != dtype:
        raise TypeError(f"{what}: {name} must be {dtypes.name(dtype)} as the layer expects, "
                        f"not {dtypes.name(t.dtype)}")
    if t.shape != shape:
        raise ValueError(f"{what}: {name} has shape {shapes.shape_str(t.shape)}, but the "
                         f"layer expects {shapes.shape_str(shape)}")
    return t


def is_rows(t):
    """Whether the 5-D activation ``t`` reads as a matrix, one row per position:
    channels contiguous and the positions one row stride apart.  A contiguous
    tensor is one; so is a channel slice of one (a concatenation's branch)."""
    if t.is_contiguous:
        return True
    if t.strides[-1] != t.dtype.itemsize:
        return False
    expect = None
    for size, stride in zip(reversed(t.shape[:-1]), reversed(t.strides[:-1])):
        if size == 1:
            continue
        if stride != expect and (expect is not None or stride < t.shape[-1] * t.dtype.itemsize):
            return False
        expect = stride * size
    return True


def row_stride(t):
    """Elements between the positions of a tensor that :func:`is_rows`."""
    for size, stride in zip(reversed(t.shape[:-1]), reversed(t.strides[:-1])):
        if size != 1:
            return stride // t.dtype.itemsize
    return t.shape[-1]


def real(value, name):
    """A Python float from a real number (bools and arrays refused)."""
    if type(value) is float:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)


def bias_call(backend, E, grad_b, O, alpha, beta):  # noqa: E741
    """Check one ``update_bias`` call; returns ``(E, grad_b, O, alpha, beta)``.

    E: a float16, bfloat16 or float32 tensor of at least one axis, channels
    last; ``grad_b`` of shape ``(K,)`` and any of those dtypes; O (or None)
    with E's shape and dtype.
    """
    what = "update_bias"
    E = check_tensor(backend, E, "E", None, None, what)
    if E.dtype not in DTYPES:
        raise TypeError(f"{what}: E must be float16, bfloat16 or float32, not "
                        f"{dtypes.name(E.dtype)}")
    if E.ndim == 0:
        raise ValueError(f"{what}: E must have at least one axis (channels last), got a scalar")
    grad_b = check_tensor(backend, grad_b, "grad_b", None, None, what)
    if grad_b.dtype not in DTYPES:
        raise TypeError(f"{what}: grad_b must be float16, bfloat16 or float32, not "
                        f"{dtypes.name(grad_b.dtype)}")
    if grad_b.shape != E.shape[-1:]:
        raise ValueError(f"{what}: grad_b has shape {shapes.shape_str(grad_b.shape)}, but E's "
                         f"{E.shape[-1]} channels need ({E.shape[-1]},)")
    if O is not None:
        O = check_tensor(backend, O, "O", None, None, what)  # noqa: E741
        if O.shape != E.shape or O.dtype != E.dtype:
            raise (ValueError if O.shape != E.shape else TypeError)(
                f"{what}: O is {dtypes.name(O.dtype)} of shape {shapes.shape_str(O.shape)}, "
                f"but E is {dtypes.name(E.dtype)} of shape {shapes.shape_str(E.shape)}")
    return E, grad_b, O, real(alpha, f"{what}: alpha"), real(beta, f"{what}: beta")


def _check_bias(backend, bias, layer):
    if bias is None:
        return None
    if not isinstance(bias, Tensor) or bias.dtype not in DTYPES:
        kind = dtypes.name(bias.dtype) if isinstance(bias, Tensor) else type(bias).__name__
        raise TypeError(f"fprop_conv: bias must be a float16, bfloat16 or float32 tensor, "
                        f"not {kind}")
    return check_tensor(backend, bias, "bias", (layer.K,), bias.dtype, "fprop_conv")


_WHAT = {kind: f"{kind}_conv" for kind in CONV_KINDS}
#: each pass's (a, b, out): the name errors give, the layer's shape attribute
_OPERANDS = {"fprop": (("I", "dimI"), ("F", "dimF"), ("O", "dimO")),
             "bprop": (("F", "dimF"), ("E", "dimO"), ("grad_I", "dimI")),
             "update": (("I", "dimI"), ("E", "dimO"), ("grad_F", "dimF"))}


def conv_call(backend, kind, layer, a, b, out, alpha=1.0, beta=0.0, relu=False, bias=None):
    """Check one convolution and build its :class:`ConvCall`."""
    what = _WHAT[kind]
    if type(layer) is not ConvLayer:
        check_layer(layer, ConvLayer, what)
    (name_a, dim_a), (name_b, dim_b), (name_out, dim_out) = _OPERANDS[kind]
    dtype = layer.dtype
    a = check_tensor(backend, a, name_a, getattr(layer, dim_a), dtype, what)
    b = check_tensor(backend, b, name_b, getattr(layer, dim_b), dtype, what)
    out = check_tensor(backend, out, name_out, getattr(layer, dim_out), dtype, what)
    return ConvCall(kind, layer, a, b, out, real(alpha, "alpha"), real(beta, "beta"),
                    bool(relu), _check_bias(backend, bias, layer))


def _check_argmax(backend, argmax, pool, what):
    if argmax is None:
        return None
    if pool.op != "max":
        raise ValueError(f"{what}: argmax applies to max pooling, not {pool.op!r}")
    return check_tensor(backend, argmax, "argmax", pool.dimO, pool.argmax_dtype, what)


def pool_call(backend, kind, pool, inputs, out, errors=None, argmax=None):
    """Check one pooling pass and build its :class:`PoolCall`."""
    what = f"{kind}_pool"
    pool = check_layer(pool, PoolLayer, what)
    inputs = check_tensor(backend, inputs, "I", pool.dimI, pool.dtype, what)
    if kind == "fprop":
        out = check_tensor(backend, out, "O", pool.dimO, pool.dtype, what)
    else:
        errors = check_tensor(backend, errors, "E", pool.dimO, pool.dtype, what)
        out = check_tensor(backend, out, "grad_I", pool.dimI, pool.dtype, what)
    return PoolCall(kind, pool, inputs, out, errors, _check_argmax(backend, argmax, pool, what))
