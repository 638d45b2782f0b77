"""Matrix products as users ask for them: ``ng.dot`` and ``ng.batched_dot``.

In: the user's operands and epilogue options.  Out: either a lazy op-tree
node (no ``C`` given), or a checked :class:`GemmCall` -- every operand a
3-D view ``(batches, rows, cols)``, the bias a 2-D view broadcast to
``(M, N)`` -- that the factory runs with its ``_gemm`` (numpy on the CPU,
:mod:`gpuarray.gemm.plan` on the GPU).  Every misuse is caught here, with
numpy's wording where numpy has one, before anything runs.

The product computed is ``C = relu(alpha * op(A) @ op(B) + bias) + beta * C``
where op() is whatever view (``A.T``...) the user passed; FP8 operands add
per-tensor scales: ``C = scale_c * (relu(alpha * scale_a * scale_b *
op(A) @ op(B) + bias) + beta * C)``, with ``amax`` receiving the largest
``abs`` of the value before ``scale_c`` (cuBLASLt's FP8 convention, which
``torch._scaled_mm`` follows).
"""
from dataclasses import dataclass

import numpy as np

from ..core import dtypes, shapes
from ..core.array import Tensor
from ..core.optree import Scalar, new_node, owned
from ..core.step_numbers import StepNumber

#: operand dtypes the GEMM kernels read
INPUT_DTYPES = dtypes.KERNEL_FLOATS
#: dtypes of C and of the bias
OUTPUT_DTYPES = INPUT_DTYPES
PRECISIONS = ("fp32", "tf32")
#: FP8 products: K must be a multiple of this (16-byte rows for the copy engine)
FP8_K_MULTIPLE = 16
#: where an FP8 output saturates (its largest finite value)
FP8_LARGEST = {dtypes.float8_e4m3fn: 448.0, dtypes.float8_e5m2: 57344.0}


@dataclass
class GemmCall:
    """One checked GEMM: ``c[j] = relu(alpha * sum_i a[i] @ b[i] + bias) + beta * c[j]``.

    ``a`` is ``(batches, M, K)``, ``b`` ``(batches, K, N)`` (a batch stride
    of 0 broadcasts a 2-D operand).  ``c`` is ``(batches, M, N)``, or
    ``(1, M, N)`` when ``accumulate`` sums every batch into one output.
    """

    a: Tensor
    b: Tensor
    c: Tensor
    alpha: float = 1.0
    beta: float = 0.0
    relu: bool = False
    bias: Tensor = None
    stats: Tensor = None
    precision: str = "fp32"
    accumulate: bool = False
    #: FP8 only: device scales (one float32 each, or None: 1), the host
    #: value of a Python-number scale_c, and the amax output
    scale_a: Tensor = None
    scale_b: Tensor = None
    scale_c: Tensor = None
    post_scale: float = 1.0
    amax: Tensor = None

    @property
    def fp8(self):
        """True for a product of FP8 operands."""
        return self.a.dtype in dtypes.FLOAT8

    @property
    def mnk(self):
        """(M, N, K)."""
        return self.a.shape[1], self.b.shape[2], self.a.shape[2]

    @property
    def batches(self):
        """Number of (A, B) pairs multiplied."""
        return self.a.shape[0]


def _name(dtype):
    return dtypes.name(dtype)


def check_inputs(backend, a, b, what):
    """Evaluate expression operands; check both are float tensors of one dtype."""
    if not (owned(backend, a) and owned(backend, b)):  # this factory's pass as they are
        a, b = backend.operands((a, b))
    if isinstance(a, Scalar) or isinstance(b, Scalar):
        raise TypeError(f"{what} needs tensors (or expressions), not scalars")
    if not isinstance(a, Tensor):
        a = backend.evaluate(a)
    if not isinstance(b, Tensor):
        b = backend.evaluate(b)
    if a.dtype in dtypes.FLOAT8 or b.dtype in dtypes.FLOAT8:
        if a.dtype not in dtypes.FLOAT8 or b.dtype not in dtypes.FLOAT8:
            raise TypeError(f"{what} multiplies FP8 operands with FP8 operands only, not "
                            f"{_name(a.dtype)} and {_name(b.dtype)}; convert one with astype()")
        return a, b
    if a.dtype not in INPUT_DTYPES or b.dtype not in INPUT_DTYPES:
        raise TypeError(f"{what} supports float16, bfloat16 and float32 operands, "
                        f"not {_name(a.dtype)} and {_name(b.dtype)}")
    if a.dtype is not b.dtype and a.dtype != b.dtype:
        raise TypeError(f"{what} needs A and B of one dtype, got {_name(a.dtype)} and "
                        f"{_name(b.dtype)}; convert one with astype()")
    return a, b


def check_precision(precision, dtype):
    """Normalise ``precision``: "fp32" (exact, the default) or "tf32"."""
    precision = "fp32" if precision in (None, "float32", "highest") else precision
    if dtype in dtypes.FLOAT8:
        # FP8: "fp32" (the default) promotes the tensor cores' partial sums
        # into float32 accumulators every 128 products; "fast" leaves the
        # whole sum to the tensor cores (cuBLASLt's fast accumulation)
        if precision not in ("fp32", "fast"):
            raise ValueError(f"precision for FP8 operands must be 'fp32' or 'fast', not "
                             f"{precision!r}")
        return precision
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be 'fp32' or 'tf32', not {precision!r}")
    if precision == "tf32" and dtype != np.float32:
        raise ValueError(f"precision='tf32' applies to float32 operands, not {_name(dtype)}")
    return precision


def dot_shape(a, b):
    """numpy's result shape of ``dot(a, b)`` for 1-D and 2-D operands."""
    a_shape, b_shape = a.shape, b.shape  # C fields where compiled, where ndim is a property
    if len(a_shape) not in (1, 2) or len(b_shape) not in (1, 2):
        raise ValueError(f"dot supports 1-D and 2-D operands (use batched_dot for stacks), "
                         f"got {len(a_shape)}-D and {len(b_shape)}-D")
    ka, kb = a_shape[-1], b_shape[0]
    if ka != kb:
        raise ValueError(f"shapes {shapes.shape_str(a_shape)} and {shapes.shape_str(b_shape)} "
                         f"not aligned: {ka} (dim {len(a_shape) - 1}) != {kb} (dim 0)")
    return a_shape[:-1] + b_shape[1:]


def batched_shape(a, b):
    """``(batches, M, N)`` of ``batched_dot``; one operand may be 2-D (shared)."""
    if a.ndim not in (2, 3) or b.ndim not in (2, 3) or a.ndim + b.ndim < 5:
        raise ValueError(f"batched_dot needs 3-D operands (batch first; one may be 2-D), "
                         f"got {a.ndim}-D and {b.ndim}-D")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"shapes {shapes.shape_str(a.shape)} and {shapes.shape_str(b.shape)} "
                         f"not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                         f"{b.shape[-2]} (dim {b.ndim - 2})")
    if a.ndim == b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise ValueError(f"batched_dot: batch sizes differ: {a.shape[0]} and {b.shape[0]}")
    batches = a.shape[0] if a.ndim == 3 else b.shape[0]
    return (batches, a.shape[-2], b.shape[-1])


def _as_3d(t, rows, cols, batches):
    """View ``t`` as (batches, rows, cols); 0-D, 1-D and 2-D operands repeat (stride 0).

    A 1-D vector is a row (rows == 1) or a column (cols == 1); a 0-d
    tensor is the 1 x 1 result of an inner product.
    """
    s = t.strides
    if t.ndim == 3:
        return t
    if t.ndim == 2:
        strides = (0,) + s
    elif t.ndim == 0:
        strides = (0, 0, 0)
    else:
        strides = (0, 0, s[0]) if rows == 1 else (0, s[0], 0)
    return t._view((batches, rows, cols), strides, t.offset)


def _check_output(c, shape, what, fp8=False):
    if not isinstance(c, Tensor):
        raise TypeError(f"{what}: C must be a tensor, not {type(c).__name__}")
    if c.dtype not in OUTPUT_DTYPES and not (fp8 and c.dtype in dtypes.FLOAT8):
        kinds = "float16, bfloat16, float32 or FP8" if fp8 else "float16, bfloat16 or float32"
        raise TypeError(f"{what}: C must be {kinds}, not {_name(c.dtype)}")
    if c.shape != tuple(shape):
        raise ValueError(f"{what}: C has shape {shapes.shape_str(c.shape)}, but the product "
                         f"has shape {shapes.shape_str(shape)}")


def _check_bias(bias, m, n, backend):
    """The bias as an (M, N) view (stride 0 along broadcast axes)."""
    if bias is None:
        return None
    if not isinstance(bias, Tensor) or bias.backend is not backend:
        raise TypeError("bias must be a tensor of the same factory")
    if bias.dtype not in OUTPUT_DTYPES:
        raise TypeError(f"bias must be float16, bfloat16 or float32, not {_name(bias.dtype)}")
    if bias.ndim > 2:
        raise ValueError(f"bias must be 1-D or 2-D, got shape {shapes.shape_str(bias.shape)}")
    try:
        shapes.check_assignable(bias.shape, (m, n))
    except ValueError:
        raise ValueError(f"bias of shape {shapes.shape_str(bias.shape)} does not broadcast "
                         f"to the product's ({m}, {n})") from None
    strides = shapes.broadcast_strides(bias.shape, bias.strides, (m, n))
    return bias._view((m, n), strides, bias.offset)


def _check_stats(stats, backend):
    if stats is None:
        return None
    if not isinstance(stats, Tensor) or stats.backend is not backend:
        raise TypeError("stats must be a tensor of the same factory")
    if stats.shape != (2,) or stats.dtype != np.float32:
        raise ValueError(f"stats must be a float32 tensor of shape (2,) "
                         f"(max |C|, non-finite count), got {stats.dtype} "
                         f"{shapes.shape_str(stats.shape)}")
    return stats


def make_call(backend, a, b, c, batched, alpha=1.0, beta=0.0, relu=False, bias=None,
              stats=None, precision=None, scaling=None):
    """Check a full GEMM request and build its :class:`GemmCall`.

    ``scaling``: the FP8 arguments ``(scale_a, scale_b, scale_c, amax)``, or None.
    """
    what = "batched_dot" if batched else "dot"
    a, b = check_inputs(backend, a, b, what)
    precision = check_precision(precision, a.dtype)
    fp8 = a.dtype in dtypes.FLOAT8
    if batched:
        batches, m, n = batched_shape(a, b)
        k = a.shape[-1]
        accumulate = isinstance(c, Tensor) and c.ndim == 2
        _check_output(c, (m, n) if accumulate else (batches, m, n), what, fp8)
        c3 = c._view((1, m, n), (0,) + c.strides, c.offset) if accumulate else c
    else:
        shape = dot_shape(a, b)
        _check_output(c, shape, what, fp8)
        batches, accumulate = 1, False
        m = a.shape[0] if a.ndim == 2 else 1
        n = b.shape[1] if b.ndim == 2 else 1
        k = a.shape[-1]
        c3 = _as_3d(c, m, n, 1)
    if c.backend is not backend:
        raise ValueError("C belongs to a different factory than A and B")
    if max(m, n, k, batches) >= 2**31:
        raise ValueError(f"{what}: dimensions must be below 2**31, got M={m} N={n} K={k}")
    call = GemmCall(_as_3d(a, m, k, batches), _as_3d(b, k, n, batches), c3,
                    alpha=real(alpha, "alpha"), beta=real(beta, "beta"), relu=bool(relu),
                    bias=_check_bias(bias, m, n, backend), stats=_check_stats(stats, backend),
                    precision=precision, accumulate=accumulate)
    if fp8:
        _check_fp8(backend, call, scaling, what, (a, b, c))
    elif scaling is not None and any(x is not None for x in scaling):
        raise ValueError("scale_a, scale_b, scale_c and amax apply to FP8 operands "
                         "(float8_e4m3fn, float8_e5m2), not " + _name(a.dtype))
    return call


def scale_values(alpha, scaling):
    """How FP8 scales reach the kernel: (alpha, post_scale, tensors).

    A Python-number ``scale_a`` or ``scale_b`` multiplies alpha and a
    Python-number ``scale_c`` becomes the host output scale; tensors are read
    by the kernel (``tensors``: scale_a, scale_b, scale_c, amax, None where
    absent).
    """
    scale_a, scale_b, scale_c, amax = scaling
    tensors = []
    for name, value in (("scale_a", scale_a), ("scale_b", scale_b)):
        if isinstance(value, Tensor):
            tensors.append(value)
        else:
            alpha *= real(value, name)
            tensors.append(None)
    post = 1.0
    if scale_c is not None and not isinstance(scale_c, Tensor):
        post, scale_c = real(scale_c, "scale_c"), None
    return alpha, post, (*tensors, scale_c, amax)


def _check_fp8(backend, call, scaling, what, user):
    """The FP8 rules: scales given and well formed, K a multiple of 16, an amax
    for an FP8 C, no beta into an FP8 C, C apart from everything it reads."""
    scale_a, scale_b, scale_c, amax = scaling or (None,) * 4
    if scale_a is None or scale_b is None:
        raise ValueError(f"{what} of FP8 operands needs scale_a and scale_b (their "
                         "dequantisation scales; 1.0 when the values are not scaled)")
    m, n, k = call.mnk
    if k % FP8_K_MULTIPLE:
        raise ValueError(f"{what} of FP8 operands needs K to be a multiple of "
                         f"{FP8_K_MULTIPLE}, got K={k}; pad both operands with zeros along K")
    for name, value in (("scale_a", scale_a), ("scale_b", scale_b), ("scale_c", scale_c)):
        if isinstance(value, Tensor):
            _check_scalar_tensor(backend, value, name)
        elif value is not None:
            real(value, name)
    out_fp8 = call.c.dtype in dtypes.FLOAT8
    if amax is not None:
        _check_scalar_tensor(backend, amax, "amax")
    elif out_fp8:
        raise ValueError(f"{what}: an FP8 output C needs amax= (a float32 tensor of one "
                         "element), the statistic the next step's scale_c comes from")
    if out_fp8 and call.beta != 0:
        raise ValueError(f"{what}: beta must be 0 for an FP8 output C (accumulate in a "
                         "float16, bfloat16 or float32 C instead)")
    if out_fp8 and call.c.rounding:
        raise ValueError(f"{what}: stochastic rounding into an FP8 GEMM output is not "
                         "supported (the kernels round to nearest)")
    a, b, c = user
    written = [c] + ([amax] if amax is not None else [])
    read = [a, b] + [x for x in (call.bias, call.stats, scale_a, scale_b, scale_c)
                     if isinstance(x, Tensor)]
    for out in written:
        for other in read + [w for w in written if w is not out]:
            if backend.shares_memory(out, other):
                raise ValueError(f"{what}: C and amax must not share memory with the "
                                 "operands, the scales or each other")
    call.alpha, call.post_scale, tensors = scale_values(call.alpha, scaling)
    call.scale_a, call.scale_b, call.scale_c, call.amax = tensors


def _check_scalar_tensor(backend, t, name):
    if not isinstance(t, Tensor) or t.backend is not backend:
        raise TypeError(f"{name} must be a float32 tensor of the same factory (or a Python "
                        f"number), not {type(t).__name__}")
    if t.dtype != np.float32 or t.size != 1 or t.ndim > 1:
        raise ValueError(f"{name} must be a float32 tensor of one element, shape () or (1,), "
                         f"got {t.dtype} {shapes.shape_str(t.shape)}")


def real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating, StepNumber)):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)


def product_node(backend, a, b, batched, precision):
    """The lazy ``dot(A, B)`` / ``batched_dot(A, B)`` op-tree node."""
    what = "batched_dot" if batched else "dot"
    a, b = check_inputs(backend, a, b, what)
    if a.dtype in dtypes.FLOAT8:
        raise ValueError(f"{what} of FP8 operands runs with an output tensor C and the "
                         f"scales: ng.{what}(A, B, C, scale_a=..., scale_b=...)")
    precision = check_precision(precision, a.dtype)
    shape = batched_shape(a, b) if batched else dot_shape(a, b)
    op = "batched_dot" if batched else "dot"
    return new_node(backend, op, (a, b), (precision,), shape, a.dtype)


def epilogue_tree(backend, call, product):
    """``relu(alpha * product + bias) + beta * C`` as an op-tree over ``call.c``.

    Used where no GEMM kernel runs: K = 0 (the product is 0), and on the GPU
    when C overlaps an operand (the product is then a temporary).
    """
    value = backend.multiply(product, call.alpha)
    if call.bias is not None:
        value = value + call.bias
    if call.relu:
        value = backend.relu(value)
    if call.beta != 0:
        value = value + call.c * call.beta
    return value


def fp8_zero_product(backend, call):
    """An FP8 call whose product is 0 (K = 0, or no batches summed), by fused
    kernels: the epilogue, the amax, the output scale and FP8 saturation."""
    value = backend.empty(call.c.shape, np.float32)
    value[...] = epilogue_tree(backend, call, Scalar(0.0))
    if call.amax is not None:
        call.amax[...] = backend.max(backend.absolute(value.reshape(-1)))
    scaled = value * call.post_scale
    if call.scale_c is not None:
        scaled = scaled * call.scale_c.reshape(())
    if call.c.dtype in FP8_LARGEST:
        top = FP8_LARGEST[call.c.dtype]
        scaled = backend.clip(scaled, -top, top)
    call.c[...] = scaled


def stats_by_reduction(backend, c, stats):
    """Fill ``stats`` from ``c`` with reductions: ``[max abs(C) over finite values, non-finite count]``."""
    flat = c.reshape(-1)
    finite = backend.isfinite(flat)
    stats[0:1] = backend.max(backend.where(finite, backend.absolute(flat), 0), axis=0, keepdims=True)
    stats[1:2] = backend.sum(backend.logical_not(finite), axis=0, keepdims=True)
