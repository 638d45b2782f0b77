"""Searching: ``searchsorted``, ``nonzero``, ``flatnonzero``, ``argwhere``, ``where(cond)``.

In: tensors, op-trees or array_likes of one factory.  Out: int64 tensors
-- insertion points (the needles' shape), or the positions of the nonzero
elements (one array per axis, a flat array, or a (count, ndim) table).

How: ``searchsorted`` binary-searches radix keys (:mod:`.keys`), so NaN
sorts last and -0.0 equals 0.0, as in numpy.  The nonzero family counts
the true elements of ``x != 0`` (one fused reduction, read back: the call
waits for the device), then compacts their flat positions into a tensor
of that size (CUB's select on the GPU) and splits them into per-axis
indices with one fused kernel per axis.
"""
import numpy as np

from ..core import ops

I64 = np.dtype(np.int64)


class SearchFunctions:
    """Mixin: ``searchsorted``, ``nonzero``, ``flatnonzero``, ``argwhere``."""

    def searchsorted(self, a, v, side="left", sorter=None):
        """Where ``v``'s elements would go in the sorted 1-D ``a``, as ``numpy.searchsorted``.

        Parameters
        ----------
        a : array_like
            1-D, sorted ascending (NaN last) unless ``sorter`` sorts it.
        v : array_like or scalar
            The values to place; the result has its shape.
        side : {"left", "right"}
            The first suitable position, or one past the last.
        sorter : array_like of int, optional
            Positions that sort ``a`` (``argsort(a)``).

        Returns
        -------
        Tensor of int64

        Raises
        ------
        ValueError
            ``a`` not 1-D, or an unknown ``side``.
        """
        if side not in ("left", "right"):
            raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
        haystack = self._as_tensor(a)
        if haystack.ndim != 1:
            raise ValueError("object too deep for desired array")
        if sorter is not None:
            haystack = self.take(haystack, sorter)
        needles = self._as_tensor(v)
        common = ops.promote(haystack.dtype, needles.dtype)
        haystack = self._contiguous(self._sortable(self._as_dtype(haystack, common)))
        needles = self._contiguous(self._sortable(self._as_dtype(needles, common)))
        out = self.empty(needles.shape, I64)
        if out.size:
            if haystack.size:
                self._algorithm("search", haystack, needles, side == "right", out)
            else:
                out[:] = 0
        return out

    def nonzero(self, a):
        """Indices of the nonzero elements, one int64 tensor per axis (``numpy.nonzero``).

        Raises
        ------
        ValueError
            ``a`` is 0-d (numpy 2's rule).
        """
        x = self._as_tensor(a)
        if x.ndim == 0:
            raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                             "np.atleast_1d(scalar).nonzero() instead.")
        flat = self._flat_nonzero(x)
        return tuple(self._axis_index(flat, x.shape, axis) for axis in range(x.ndim))

    def flatnonzero(self, a):
        """Positions of the nonzero elements of the flattened ``a`` (``numpy.flatnonzero``)."""
        return self._flat_nonzero(self._as_tensor(a))

    def argwhere(self, a):
        """The (count, ndim) int64 table of nonzero elements' indices (``numpy.argwhere``)."""
        x = self._as_tensor(a)
        if x.ndim == 0:
            return self.empty((int(bool(x.get())), 0), I64)
        flat = self._flat_nonzero(x)
        table = self.empty((flat.size, x.ndim), I64)
        if flat.size:
            for axis in range(x.ndim):
                table[:, axis] = self._split_index(flat, x.shape, axis)
        return table

    def _flat_nonzero(self, x):
        """int64 flat positions of ``x``'s nonzero elements, in order."""
        mask = self._mask(x)
        found = self.empty((self._count_true(mask),), I64)
        if found.size:
            self._algorithm("flatnonzero", mask, found)
        return found

    def _mask(self, x):
        """``x != 0`` as a flat contiguous bool tensor (``x`` itself where it is one)."""
        if x.dtype == np.bool_ and x.is_contiguous:
            return x.reshape(-1)
        mask = self.empty(x.shape, np.bool_)
        if mask.size:
            mask[...] = x if x.dtype == np.bool_ else self.not_equal(x, 0)
        return mask.reshape(-1)

    def _count_true(self, mask):
        """How many elements of the bool tensor ``mask`` are true (read back: the
        size of what depends on it)."""
        if not mask.size:
            return 0
        return int(self.evaluate(self.sum(mask, axis=None, keepdims=False)).get())

    def _split_index(self, flat, shape, axis):
        """The op-tree of the ``axis`` index of flat C-order positions into ``shape``."""
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        index = flat // inner if inner > 1 else flat
        return index % shape[axis] if axis else index

    def _axis_index(self, flat, shape, axis):
        if len(shape) == 1:
            return flat
        return self.evaluate(self._split_index(flat, shape, axis)) if flat.size else flat

    def _as_dtype(self, x, dtype):
        return x if x.dtype == dtype else self.evaluate(self.astype(x, dtype))
