"""numpy's product functions: matmul, tensordot, vecdot, inner, vdot, kron,
cross (and einsum, from :mod:`gpuarray.core.einsum`).

In: tensors, op-trees or host data of one factory (host data is copied
in) and numpy's arguments.  Out: numpy's shapes and dtypes -- operands of
different dtypes are promoted first, and the result has the promoted
dtype, integers and bool included -- as lazy trees or product nodes where
the computation allows, else tensors.

The contractions (matmul, tensordot, vecdot, inner, vdot) label their
operands' axes and run through :mod:`gpuarray.core.contraction`: a
batched GEMM through the factory's ``batched_dot``/``dot`` for float16,
bfloat16 and float32 (16-bit products accumulate in fp32), a fused
broadcast multiply and sum for the other dtypes -- so ``matmul`` (and the
``@`` operator, which calls it) takes any batch shape numpy broadcasts.  ``kron`` is one
broadcast multiply copied into the result, ``cross`` three fused
assignments of 3-vectors.  ``vecdot`` and ``vdot`` conjugate their first
operand, as numpy's (complex dtypes).  Errors are numpy's, with
its wording (gufunc core and broadcast errors included).  Mixed into both
factories through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from . import ops
from .contraction import GEMM_DTYPES, batch_labels, check_batches, dims_text
from .einsum import EinsumFunctions

_MATMUL = "(n?,k),(k,m?)->(n?,m?)"
_VECDOT = "(n),(n)->()"


class TensorProductFunctions(EinsumFunctions):
    """Mixin: numpy's product functions, composed of the factory's GEMMs and
    fused operations."""

    def matmul(self, x1, x2, /, out=None):
        """Matrix product with numpy's batching rules, as ``numpy.matmul``.

        Parameters
        ----------
        x1, x2 : array_like
            Operands of at least one dimension: a 1-D operand is a vector
            (its axis dropped from the result), the last two axes of the
            others are matrices and the axes before them batches, which
            broadcast.
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression or Tensor
            A lazy product node (one GEMM; it fuses with the assignment that
            consumes it) for float16/bfloat16/float32 with at most one batch
            axis, a fused tree for other dtypes, else a tensor.

        Raises
        ------
        ValueError
            A 0-d operand, core dimensions that differ, batch shapes that do
            not broadcast (numpy's gufunc messages).
        """
        gemm = _one_gemm(self, x1, x2)
        if gemm is not None:
            # the common cases in one step: the contraction's labelling would
            # arrive at the same product node (~30 us of host work, against 1-2)
            if x1.shape[-1] != x2.shape[-2]:
                raise _core_mismatch("matmul", _MATMUL, x2.shape[-2], x1.shape[-1])
            return self._finish(gemm(x1, x2), out)
        (a, b), _ = self._promoted(x1, x2)
        _check_core("matmul", _MATMUL, (a, b), 1)
        ka, kb = a.shape[-1], (b.shape[-2] if b.ndim > 1 else b.shape[0])
        if ka != kb:
            raise _core_mismatch("matmul", _MATMUL, kb, ka)
        core = a.shape[-2:-1] + b.shape[-1:] * (b.ndim > 1)
        check_batches((a.shape, b.shape), (a.shape[:-2], b.shape[:-2]), core)
        rows, cols = ("n",) * (a.ndim > 1), ("m",) * (b.ndim > 1)
        al = batch_labels(a.ndim - 2) + rows + ("k",)
        bl = batch_labels(b.ndim - 2) + ("k",) + cols
        result = batch_labels(max(a.ndim, b.ndim) - 2) + rows + cols
        return self._finish(self._contract([(a, al), (b, bl)], result), out)

    def tensordot(self, a, b, axes=2):
        """Sum of products over the given axes, as ``numpy.tensordot``.

        Parameters
        ----------
        a, b : array_like
            Operands.
        axes : int or (sequence, sequence)
            N: the last N axes of ``a`` with the first N of ``b``; or the
            axes of ``a`` and of ``b`` to sum over, paired in order.

        Returns
        -------
        Expression or Tensor
            The axes of ``a`` not summed, then those of ``b``.

        Raises
        ------
        ValueError
            Axes of different lengths or counts ("shape-mismatch for sum"),
            repeated axes.
        IndexError
            An axis out of range.
        """
        axes_a, axes_b = _tensordot_axes(axes)
        (x, y), _ = self._promoted(a, b)
        if len(axes_a) != len(axes_b) or any(
                x.shape[i] != y.shape[j] for i, j in zip(axes_a, axes_b)):
            raise ValueError("shape-mismatch for sum")
        axes_a = [i % x.ndim for i in axes_a]
        axes_b = [j % y.ndim for j in axes_b]
        if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
            raise ValueError("axes don't match array")  # numpy's transpose words it so
        xl = tuple(("k", axes_a.index(i)) if i in axes_a else ("a", i) for i in range(x.ndim))
        yl = tuple(("k", axes_b.index(j)) if j in axes_b else ("b", j) for j in range(y.ndim))
        result = [c for c in xl + yl if c[0] != "k"]
        return self._contract([(x, xl), (y, yl)], result)

    def vecdot(self, x1, x2, /, out=None, *, axis=-1):
        """Dot products of vectors along ``axis``, broadcast over the other axes,
        as ``numpy.vecdot`` (``conj(x1) * x2`` summed).

        Parameters
        ----------
        x1, x2 : array_like
            Operands of at least one dimension.
        out : Tensor, optional
            Where to evaluate the result.
        axis : int
            The axis of the vectors, in each operand.

        Raises
        ------
        ValueError
            A 0-d operand, vector lengths that differ, other axes that do
            not broadcast (numpy's gufunc messages).
        numpy.exceptions.AxisError
            ``axis`` out of range.
        """
        (a, b), _ = self._promoted(x1, x2)
        _check_core("vecdot", _VECDOT, (a, b), 1)
        a = self._conjugated(a)
        ia, ib = normalize_axis_index(axis, a.ndim), normalize_axis_index(axis, b.ndim)
        if a.shape[ia] != b.shape[ib]:
            raise _core_mismatch("vecdot", _VECDOT, b.shape[ib], a.shape[ia])
        batches = [x.shape[:i] + x.shape[i + 1:] for x, i in ((a, ia), (b, ib))]
        check_batches((a.shape, b.shape), batches, ())
        terms = [(x, _with_core(batch_labels(x.ndim - 1), i)) for x, i in ((a, ia), (b, ib))]
        return self._finish(self._contract(terms, batch_labels(max(map(len, batches)))), out)

    def inner(self, a, b, /):
        """Sums of products over the last axes, as ``numpy.inner`` (a 0-d operand
        multiplies).

        Returns
        -------
        Expression or Tensor
            Shape ``a.shape[:-1] + b.shape[:-1]``.

        Raises
        ------
        ValueError
            Last axes of different lengths (numpy's "not aligned" message).
        """
        (x, y), _ = self._promoted(a, b)
        if x.ndim == 0 or y.ndim == 0:
            return x * y
        if x.shape[-1] != y.shape[-1]:
            # numpy words it as dot(a, b.swapaxes(-1, -2))
            swapped = y.shape[:-2] + y.shape[-1:] + y.shape[-2:-1]
            raise ValueError(f"shapes {dims_text(x.shape)} and {dims_text(swapped)} not aligned: "
                             f"{x.shape[-1]} (dim {x.ndim - 1}) != {swapped[max(y.ndim - 2, 0)]} "
                             f"(dim {max(y.ndim - 2, 0)})")
        xl = tuple(("a", i) for i in range(x.ndim - 1)) + ("k",)
        yl = tuple(("b", j) for j in range(y.ndim - 1)) + ("k",)
        return self._contract([(x, xl), (y, yl)], xl[:-1] + yl[:-1])

    def vdot(self, a, b, /):
        """Dot product of the flattened operands, the first conjugated, as
        ``numpy.vdot``; a lazy 0-d tree.

        Raises
        ------
        ValueError
            Operands of different sizes (numpy's reshape message).
        """
        (x, y), _ = self._promoted(a, b)
        if x.size != y.size:
            raise ValueError(f"cannot reshape array of size {y.size} into shape ({x.size},)")
        x = self._conjugated(self.ravel(x))
        return self._contract([(x, ("k",)), (self.ravel(y), ("k",))], ())

    def _conjugated(self, x):
        """``x`` conjugated where it is complex (lazy), else ``x`` itself."""
        return self.conjugate(x) if x.dtype.kind == "c" else x

    def kron(self, a, b):
        """Kronecker product, as ``numpy.kron``: blocks of ``b`` scaled by each
        element of ``a`` (a 0-d operand multiplies).

        Returns
        -------
        Tensor
            Shape ``a.shape * b.shape`` elementwise (the shorter shape padded
            with ones in front), filled by one fused kernel.
        """
        x, y = self._lazy_operand(a), self._lazy_operand(b)
        if x.ndim == 0 or y.ndim == 0:
            return x * y
        ndim = max(x.ndim, y.ndim)
        x, y = (self._view_source(t)[(None,) * (ndim - t.ndim)] for t in (x, y))
        # element (i, j) of each axis pair is a[i] * b[j]: a's axes even, b's odd
        product = (x[(slice(None), None) * ndim] * y[(None, slice(None)) * ndim])
        out = self.empty(tuple(m * n for m, n in zip(x.shape, y.shape)), product.dtype)
        out.reshape(product.shape)[...] = product
        return out

    def cross(self, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        """Cross products of 3-vectors along an axis, as ``numpy.cross``.

        Parameters
        ----------
        a, b : array_like
            Vectors of 3 components along ``axisa`` / ``axisb``, broadcast
            over the other axes.  2-vectors are refused, as by numpy since
            their removal after the 2.0 deprecation, and by the array API.
        axisa, axisb, axisc : int
            The axes of the vectors in ``a``, ``b`` and the result.
        axis : int, optional
            Overrides all three.

        Returns
        -------
        Tensor
            A view of a new tensor with the vectors along ``axisc``.

        Raises
        ------
        ValueError
            A 0-d operand, vectors of other than 3 components, shapes
            that do not broadcast.
        numpy.exceptions.AxisError
            An axis out of range.
        """
        if axis is not None:
            axisa = axisb = axisc = axis
        x, y = self._view_source(a), self._view_source(b)
        if x.ndim < 1 or y.ndim < 1:
            raise ValueError("At least one array has zero dimension")
        x = self.moveaxis(x, normalize_axis_index(axisa, x.ndim, "axisa"), -1)
        y = self.moveaxis(y, normalize_axis_index(axisb, y.ndim, "axisb"), -1)
        if x.shape[-1] != 3 or y.shape[-1] != 3:
            raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                             f"but they are {x.shape[-1]} and {y.shape[-1]} dimensional instead.")
        shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        dtype = ops.promote(x.dtype, y.dtype)
        u, v = ([t[..., i] if t.dtype == dtype else self.astype(t[..., i], dtype)
                 for i in range(3)] for t in (x, y))
        axisc = normalize_axis_index(axisc, len(shape) + 1, "axisc")
        result = self.empty(shape + (3,), dtype)
        for i, (p, q) in enumerate(((1, 2), (2, 0), (0, 1))):
            result[..., i] = u[p] * v[q] - u[q] * v[p]
        return self.moveaxis(result, -1, axisc)

    def _promoted(self, *values):
        """The operands as tensors or trees of this factory (host data copied in),
        converted to their promoted dtype (lazily); and that dtype."""
        xs = [self._lazy_operand(v) for v in values]
        dtype = ops.promote(*(x.dtype for x in xs))
        return [x if x.dtype == dtype else self.astype(x, dtype) for x in xs], dtype


def _one_gemm(backend, x1, x2):
    """The factory method that runs ``x1 @ x2`` as one GEMM of ``backend``'s
    tensors of one dtype the GEMM kernels read, without the contraction's
    labelling: ``dot`` for two matrices, ``batched_dot`` for a stack of
    matrices times a matrix or times a stack of as many; None for the
    others (promotion, vectors, broadcast batches)."""
    cls = backend.tensor_class
    if not (type(x1) is cls and type(x2) is cls and x1.backend is backend
            and x2.backend is backend and x1.dtype == x2.dtype and x1.dtype in GEMM_DTYPES):
        return None
    if x1.ndim == 2 and x2.ndim == 2:
        return backend.dot
    if x1.ndim == 3 and (x2.ndim == 2 or (x2.ndim == 3 and x2.shape[0] == x1.shape[0])):
        return backend.batched_dot
    return None


def _check_core(name, signature, operands, needed):
    """numpy's gufunc error for an operand with fewer dimensions than its core."""
    for k, x in enumerate(operands):
        if x.ndim < needed:
            raise ValueError(f"{name}: Input operand {k} does not have enough dimensions (has "
                             f"{x.ndim}, gufunc core with signature {signature} requires {needed})")


def _core_mismatch(name, signature, got, expected):
    return ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with "
                      f"gufunc signature {signature} (size {got} is different from {expected})")


def _with_core(labels, axis):
    """``labels`` of the batch axes with the contracted label "k" inserted at ``axis``."""
    return labels[:axis] + ("k",) + labels[axis:]


def _tensordot_axes(axes):
    """numpy's reading of tensordot's ``axes``: two lists of axes."""
    try:
        iter(axes)
    except TypeError:
        return list(range(-axes, 0)), list(range(axes))
    axes_a, axes_b = axes
    axes_a = list(axes_a) if np.iterable(axes_a) else [axes_a]
    axes_b = list(axes_b) if np.iterable(axes_b) else [axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    return axes_a, axes_b
