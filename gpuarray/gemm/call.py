"""Matrix products as users ask for them: ``ng.dot`` and ``ng.batched_dot``.

In: the user's operands and epilogue options.  Out: either a lazy op-tree
node (no ``C`` given), or a checked :class:`GemmCall` -- every operand a
3-D view ``(batches, rows, cols)``, the bias a 2-D view broadcast to
``(M, N)`` -- that the factory runs with its ``_gemm`` (numpy on the CPU,
:mod:`gpuarray.gemm.plan` on the GPU).  Every misuse is caught here, with
numpy's wording where numpy has one, before anything runs.

The product computed is ``C = relu(alpha * op(A) @ op(B) + bias) + beta * C``
where op() is whatever view (``A.T``...) the user passed.
"""
from dataclasses import dataclass

import numpy as np

from ..core import dtypes, shapes
from ..core.array import Tensor
from ..core.optree import OpTreeNode, Scalar

#: operand dtypes the GEMM kernels read
INPUT_DTYPES = dtypes.KERNEL_FLOATS
#: dtypes of C and of the bias
OUTPUT_DTYPES = INPUT_DTYPES
PRECISIONS = ("fp32", "tf32")


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
    scale_a: Tensor = None
    scale_b: Tensor = None
    scale_c: Tensor = None
    amax: Tensor = None

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
    a, b = backend.operands((a, b))
    if isinstance(a, Scalar) or isinstance(b, Scalar):
        raise TypeError(f"{what} needs tensors (or expressions), not scalars")
    a, b = (x if isinstance(x, Tensor) else backend.evaluate(x) for x in (a, b))
    if a.dtype not in INPUT_DTYPES or b.dtype not in INPUT_DTYPES:
        raise TypeError(f"{what} supports float16, bfloat16 and float32 operands, "
                        f"not {_name(a.dtype)} and {_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise TypeError(f"{what} needs A and B of one dtype, got {_name(a.dtype)} and "
                        f"{_name(b.dtype)}; convert one with astype()")
    return a, b


def check_precision(precision, dtype):
    """Normalise ``precision``: "fp32" (exact, the default) or "tf32"."""
    precision = "fp32" if precision in (None, "float32", "highest") else precision
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be 'fp32' or 'tf32', not {precision!r}")
    if precision == "tf32" and dtype != np.float32:
        raise ValueError(f"precision='tf32' applies to float32 operands, not {_name(dtype)}")
    return precision


def dot_shape(a, b):
    """numpy's result shape of ``dot(a, b)`` for 1-D and 2-D operands."""
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise ValueError(f"dot supports 1-D and 2-D operands (use batched_dot for stacks), "
                         f"got {a.ndim}-D and {b.ndim}-D")
    ka, kb = a.shape[-1], b.shape[0]
    if ka != kb:
        raise ValueError(f"shapes {shapes.shape_str(a.shape)} and {shapes.shape_str(b.shape)} "
                         f"not aligned: {ka} (dim {a.ndim - 1}) != {kb} (dim 0)")
    return a.shape[:-1] + b.shape[1:]


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


def _check_output(c, shape, what):
    if not isinstance(c, Tensor):
        raise TypeError(f"{what}: C must be a tensor, not {type(c).__name__}")
    if c.dtype not in OUTPUT_DTYPES:
        raise TypeError(f"{what}: C must be float16, bfloat16 or float32, not {_name(c.dtype)}")
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
              stats=None, precision=None):
    """Check a full GEMM request and build its :class:`GemmCall`."""
    what = "batched_dot" if batched else "dot"
    a, b = check_inputs(backend, a, b, what)
    precision = check_precision(precision, a.dtype)
    if batched:
        batches, m, n = batched_shape(a, b)
        k = a.shape[-1]
        accumulate = isinstance(c, Tensor) and c.ndim == 2
        _check_output(c, (m, n) if accumulate else (batches, m, n), what)
        c3 = c._view((1, m, n), (0,) + c.strides, c.offset) if accumulate else c
    else:
        shape = dot_shape(a, b)
        _check_output(c, shape, what)
        batches, accumulate = 1, False
        m = a.shape[0] if a.ndim == 2 else 1
        n = b.shape[1] if b.ndim == 2 else 1
        k = a.shape[-1]
        c3 = _as_3d(c, m, n, 1)
    if c.backend is not backend:
        raise ValueError("C belongs to a different factory than A and B")
    if max(m, n, k, batches) >= 2**31:
        raise ValueError(f"{what}: dimensions must be below 2**31, got M={m} N={n} K={k}")
    return GemmCall(_as_3d(a, m, k, batches), _as_3d(b, k, n, batches), c3,
                    alpha=real(alpha, "alpha"), beta=real(beta, "beta"), relu=bool(relu),
                    bias=_check_bias(bias, m, n, backend), stats=_check_stats(stats, backend),
                    precision=precision, accumulate=accumulate)


def real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    return float(value)


def product_node(backend, a, b, batched, precision):
    """The lazy ``dot(A, B)`` / ``batched_dot(A, B)`` op-tree node."""
    what = "batched_dot" if batched else "dot"
    a, b = check_inputs(backend, a, b, what)
    precision = check_precision(precision, a.dtype)
    shape = batched_shape(a, b) if batched else dot_shape(a, b)
    op = "batched_dot" if batched else "dot"
    return OpTreeNode(backend, op, (a, b), (precision,), shape, a.dtype)


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


def stats_by_reduction(backend, c, stats):
    """Fill ``stats`` from ``c`` with reductions: ``[max abs(C) over finite values, non-finite count]``."""
    flat = c.reshape(-1)
    finite = backend.isfinite(flat)
    stats[0:1] = backend.max(backend.where(finite, backend.absolute(flat), 0), axis=0, keepdims=True)
    stats[1:2] = backend.sum(backend.logical_not(finite), axis=0, keepdims=True)
