"""numpy's functions that rearrange or select elements: roll, tile, repeat,
meshgrid, diag, diagonal, trace, tril and triu.

In: tensors, op-trees or host data of one factory, and numpy's arguments.
Out, with no kernel of their own:

* views: ``diagonal`` (and ``diag`` of a matrix), ``meshgrid(copy=False)``;
* lazy op-trees, which fuse into whatever assignment consumes them:
  ``tril``/``triu`` (a ``where`` on row and column index comparisons),
  ``trace`` (a sum over the diagonal view);
* new tensors filled by fused copy kernels from views: ``roll`` (one copy
  per block, two blocks per rolled axis), ``tile`` (one broadcast copy into
  the result seen as ``(reps0, n0, reps1, n1, ...)``), ``repeat`` (one
  broadcast copy per run of equal counts: one for a scalar count), ``diag``
  of a vector (a fill, then a copy into the diagonal view), ``meshgrid``.

Values, shapes, dtypes and error messages are numpy's.  Mixed into both
factories through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import itertools
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import shapes
from .optree import Expression


class ArrangementFunctions:
    """Mixin: numpy functions that rearrange or select elements (diagonal views,
    lazy trees, fused copies); it takes its inputs through the shaping mixin."""

    def roll(self, a, shift, axis=None):
        """``a`` with its elements shifted cyclically along ``axis``, as ``numpy.roll``.

        Parameters
        ----------
        a : array_like
            Input.
        shift : int or sequence of ints
            Places to shift by (elements leaving one end come back at the other).
        axis : None, int or sequence of ints
            Axes to shift along, paired with ``shift`` (broadcast); a repeated
            axis adds its shifts.  None shifts the flattened array.

        Returns
        -------
        Tensor
            A new tensor.

        Raises
        ------
        numpy.exceptions.AxisError
            An axis out of range.
        ValueError
            ``shift`` and ``axis`` that do not pair up.
        """
        x = self._view_source(a)
        if axis is None:
            return self.roll(self.ravel(x), shift, 0).reshape(x.shape)
        axes = normalize_axis_tuple(axis, x.ndim, allow_duplicate=True)
        pairs = np.broadcast(shift, axes)
        if pairs.ndim > 1:
            raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
        offsets = [0] * x.ndim
        for step, ax in pairs:
            offsets[ax] += int(step)  # numpy truncates a float shift
        out = self.empty(x.shape, x.dtype)
        # each block of the product is one copy: source slices -> result slices
        for block in itertools.product(*map(_roll_blocks, x.shape, offsets)):
            source, dest = zip(*block)
            out[dest] = x[source]
        return out

    def tile(self, A, reps):
        """``A`` repeated ``reps`` times along each axis, as ``numpy.tile``.

        Parameters
        ----------
        A : array_like
            Input.
        reps : int or sequence of ints
            Repetitions per axis; the shorter of ``A.shape`` and ``reps`` is
            padded with ones on the left.

        Returns
        -------
        Tensor
            A new tensor of ``max(A.ndim, len(reps))`` dimensions.

        Raises
        ------
        ValueError
            A negative repetition of a non-empty ``A``.
        """
        x = self._view_source(A)
        try:
            reps = tuple(reps)
        except TypeError:  # not iterable: one count (numpy's test)
            reps = (reps,)
        reps = tuple(operator.index(r) for r in reps)
        if x.size and any(r < 0 for r in reps):
            raise ValueError("negative dimensions are not allowed")
        ndim = max(len(reps), x.ndim)
        x = x[(None,) * (ndim - x.ndim) + (Ellipsis,)]
        reps = (1,) * (ndim - len(reps)) + reps
        out = self.empty(tuple(d * r for d, r in zip(x.shape, reps)), x.dtype)
        if out.size:
            # the result seen as (reps0, n0, reps1, n1, ...): x broadcast over the reps axes
            blocks = out
            for axis in reversed(range(ndim)):
                blocks = _split_axis(blocks, axis, reps[axis], x.shape[axis])
            blocks[...] = x[(None, slice(None)) * ndim]
        return out

    def repeat(self, a, repeats, axis=None):
        """Each element of ``a`` repeated along ``axis``, as ``numpy.repeat``.

        Parameters
        ----------
        a : array_like
            Input.
        repeats : int or 1-D sequence of ints
            Count for every element, or one count per element along ``axis``
            (host values; a tensor is read back).
        axis : int, optional
            The axis to repeat along; None repeats the flattened array.

        Returns
        -------
        Tensor
            A new tensor: one copy kernel per run of equal counts.

        Raises
        ------
        ValueError
            Negative counts, or as many counts as neither 1 nor the axis length.
        numpy.exceptions.AxisError
            ``axis`` out of range.
        """
        x = self._view_source(a)
        x = x.reshape(1) if x.ndim == 0 else x  # numpy treats a 0-d input as 1-d
        if axis is None:
            x, axis = self.ravel(x), 0
        axis = shapes.normalize_axis(axis, x.ndim)
        runs = _repeat_runs(repeats, x.shape[axis])
        shape = list(x.shape)
        shape[axis] = sum((stop - start) * count for start, stop, count in runs)
        out = self.empty(tuple(shape), x.dtype)
        lead, at = (slice(None),) * axis, 0
        for start, stop, count in runs:
            length = (stop - start) * count
            if length and out.size:
                dest = _split_axis(out[lead + (slice(at, at + length),)], axis, stop - start, count)
                dest[...] = x[lead + (slice(start, stop), None)]  # broadcast over the copies
            at += length
        return out

    def meshgrid(self, *xi, copy=True, sparse=False, indexing="xy"):
        """Coordinate grids from coordinate vectors, as ``numpy.meshgrid``.

        Parameters
        ----------
        *xi : array_like
            Coordinate vectors (flattened).
        copy : bool
            New tensors (True) or broadcast views of the inputs (False).
        sparse : bool
            Leave each grid of length one off its own axis (no broadcast).
        indexing : {'xy', 'ij'}
            Cartesian ('xy': the first two axes swapped) or matrix indexing.

        Returns
        -------
        tuple of Tensor

        Raises
        ------
        ValueError
            An unknown ``indexing``.
        """
        if indexing not in ("xy", "ij"):
            raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
        ndim = len(xi)
        grids = []
        for i, x in enumerate(xi):
            shape = [1] * ndim
            shape[1 - i if indexing == "xy" and ndim > 1 and i < 2 else i] = -1
            grids.append(self._view_source(x).reshape(tuple(shape)))
        if not sparse:
            grids = self.broadcast_arrays(*grids)
        return tuple(g.copy() for g in grids) if copy else tuple(grids)

    def diag(self, v, k=0):
        """A diagonal of a matrix, or a matrix with a vector on a diagonal, as ``numpy.diag``.

        Parameters
        ----------
        v : array_like
            A 1-D input (placed on diagonal ``k`` of a new square tensor of
            zeros) or a 2-D one (whose diagonal ``k`` is returned as a view).
        k : int
            Diagonal: 0 the main one, positive above, negative below.

        Raises
        ------
        ValueError
            An input of neither 1 nor 2 dimensions.
        """
        x = self._lazy_operand(v)
        k = operator.index(k)
        if x.ndim == 2:
            return self.diagonal(x, k)
        if x.ndim != 1:
            raise ValueError("Input must be 1- or 2-d.")
        n = x.shape[0] + abs(k)
        out = self.zeros((n, n), x.dtype)
        self.diagonal(out, k)[...] = x  # a tree is evaluated straight into the view
        return out

    def diagonal(self, a, offset=0, axis1=0, axis2=1):
        """A view of the diagonal ``offset`` of ``a``, as ``numpy.diagonal``.

        The two axes are removed and the diagonal becomes the last axis.

        Parameters
        ----------
        a : array_like
            Input of at least two dimensions.
        offset : int
            Diagonal: 0 the main one, positive above, negative below.
        axis1, axis2 : int
            The axes of the 2-D sub-arrays whose diagonals are taken.

        Raises
        ------
        ValueError
            Fewer than two dimensions, or ``axis1`` and ``axis2`` the same axis.
        numpy.exceptions.AxisError
            An axis out of range.
        """
        x = self._view_source(a)
        offset = operator.index(offset)
        if x.ndim < 2:
            raise ValueError("diag requires an array of at least two dimensions")
        axis1 = normalize_axis_index(axis1, x.ndim, "axis1")
        axis2 = normalize_axis_index(axis2, x.ndim, "axis2")
        if axis1 == axis2:
            raise ValueError("axis1 and axis2 cannot be the same")
        rows, cols = x.shape[axis1], x.shape[axis2]
        row_step, col_step = x.strides[axis1], x.strides[axis2]
        first_row, first_col = max(-offset, 0), max(offset, 0)
        length = max(0, min(rows - first_row, cols - first_col))
        start = x.offset + (first_row * row_step + first_col * col_step if length else 0)
        rest = [i for i in range(x.ndim) if i not in (axis1, axis2)]
        # one step along the diagonal is one step along both axes
        return x._view(tuple(x.shape[i] for i in rest) + (length,),
                       tuple(x.strides[i] for i in rest) + (row_step + col_step,), start)

    def trace(self, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Sum along a diagonal, as ``numpy.trace`` (a lazy tree, or ``out``).

        Parameters
        ----------
        a : array_like
            Input of at least two dimensions.
        offset, axis1, axis2 : int
            The diagonal, as :meth:`diagonal`'s.
        dtype : dtype-like, optional
            Type of the elements summed and of the result (default: numpy's
            sum dtype, int64 for small integers and bool).
        out : Tensor, optional
            Where to evaluate the result.
        """
        values = self.diagonal(a, offset, axis1, axis2)
        if dtype is not None:
            values = self.astype(values, dtype)
        total = self.sum(values, axis=-1, keepdims=False)
        if dtype is not None and total.dtype != values.dtype:
            total = self.astype(total, dtype)  # integer sums run wider, then wrap as numpy's
        return self._finish(total, out, "unsafe")

    def tril(self, m, k=0):
        """``m`` with the elements above diagonal ``k`` zeroed, as ``numpy.tril``.

        Parameters
        ----------
        m : array_like
            Input (a tree stays lazy); the last two axes are the matrix, and
            a 1-D ``m`` is broadcast to a square.
        k : int
            Diagonal: 0 the main one, positive above, negative below.

        Returns
        -------
        Expression
            A lazy tree: a ``where`` on row and column index comparisons.

        Raises
        ------
        TypeError
            A 0-d input (numpy's ``tri`` message).
        """
        x = self._lazy_operand(m)
        return self.where(self._lower_mask(x, k), x, self.astype(0, x.dtype))

    def triu(self, m, k=0):
        """``m`` with the elements below diagonal ``k`` zeroed, as ``numpy.triu``.

        Parameters and result as :meth:`tril`'s.
        """
        x = self._lazy_operand(m)
        return self.where(self._lower_mask(x, k - 1), self.astype(0, x.dtype), x)

    # -- helpers --------------------------------------------------------
    def _lazy_operand(self, a):
        """``a`` as a tensor or tree of this factory, not evaluated (host data copied in)."""
        return self.operand(a) if isinstance(a, Expression) else self.asarray(a)

    def _lower_mask(self, x, k):
        """Lazy bool tree, True where column <= row + k over ``x``'s last two axes
        (numpy's ``tri``)."""
        if x.ndim == 0:
            raise TypeError("tri() missing 1 required positional argument: 'N'")
        rows, cols = x.shape[-2:] if x.ndim > 1 else x.shape * 2
        # floor gives numpy's mask for a float k; clipping keeps row + k in int64
        k = min(max(math.floor(k), -rows), cols)
        return self.less_equal(self.arange(cols)[None, :], self.arange(rows)[:, None] + k)


def _roll_blocks(length, offset):
    """(source slice, result slice) pairs rolling one axis by ``offset`` (numpy's)."""
    offset %= length or 1
    if not offset:
        return ((slice(None), slice(None)),)
    return ((slice(None, -offset), slice(offset, None)), (slice(-offset, None), slice(None, offset)))


def _split_axis(t, axis, outer, inner):
    """A view of ``t`` with ``axis`` (of length ``outer * inner``) seen as two axes."""
    step = t.strides[axis]
    return t._view(t.shape[:axis] + (outer, inner) + t.shape[axis + 1:],
                   t.strides[:axis] + (inner * step, step) + t.strides[axis + 1:], t.offset)


def _repeat_runs(repeats, length):
    """numpy's repeat counts as ``(start, stop, count)`` runs of equal counts along an
    axis of ``length`` elements, with numpy's errors."""
    counts = np.asarray(repeats)
    if counts.ndim > 1:
        # numpy's words differ for an array and for nested sequences
        raise ValueError("object too deep for desired array" if isinstance(repeats, np.ndarray) else
                         "setting an array element with a sequence. The requested array would "
                         "exceed the maximum number of dimension of 1.")
    counts = counts.astype(np.intp).reshape(-1)  # numpy casts the counts unsafely
    if counts.size == 1:  # one count for every element
        if counts[0] < 0:
            raise ValueError("negative dimensions are not allowed")
        return [(0, length, int(counts[0]))]
    if counts.size != length:
        raise ValueError(f"operands could not be broadcast together with shape ({length},) "
                         f"({counts.size},)")
    if (counts < 0).any():
        raise ValueError("repeats may not contain negative values.")
    runs, start = [], 0
    for count, group in itertools.groupby(counts.tolist()):
        stop = start + len(list(group))
        runs.append((start, stop, count))
        start = stop
    return runs
