"""numpy's index helpers: ``unravel_index``, ``ravel_multi_index``, ``indices``, ``ix_``,
``tril_indices``, ``triu_indices``, ``diag_indices`` (and their ``_from`` forms).

In: indices (host data, tensors or op-trees of one factory), shapes and
numpy's ``order`` and ``mode``.  Out: int64 tensors (tuples of them where
numpy returns tuples), with numpy's errors.  Flat and multi-indices
convert with fused integer arithmetic (``//``, ``%``, multiply-add); the
range checks read one flag back where the indices live on the device.
The triangle indices are made by numpy on the host and copied in (their
size is the triangle's).  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import operator

import numpy as np

from . import dtypes
from .optree import Expression

I64 = np.dtype(np.int64)
_MODES = ("raise", "wrap", "clip")


class IndexTrickFunctions:
    """Mixin: numpy's index helpers (see the module docstring)."""

    def unravel_index(self, indices, shape, order="C"):
        """The multi-index of each flat index into ``shape``, as ``numpy.unravel_index``.

        Raises
        ------
        ValueError
            An index outside ``[0, prod(shape))``.
        TypeError
            Non-integer indices.
        """
        shape = tuple(operator.index(n) for n in np.atleast_1d(shape))
        flat = self._integer_indices(indices)
        size = int(np.prod(shape, dtype=np.int64))
        self._refuse_outside(flat, 0, size, lambda v: f"index {v} is out of bounds for array with "
                             f"size {size}")
        result = []
        for axis in range(len(shape)):
            inner = _stride(shape, axis, order)
            index = flat // inner if inner > 1 else flat
            result.append(self.evaluate(index % shape[axis]) if flat.size else flat)
        return tuple(result)

    def ravel_multi_index(self, multi_index, dims, mode="raise", order="C"):
        """The flat index of each multi-index into ``dims``, as ``numpy.ravel_multi_index``.

        ``mode`` is "raise", "wrap" or "clip", or one of them per axis.

        Raises
        ------
        ValueError
            An entry outside its axis (mode "raise"), an unknown mode, or as
            many index arrays as there are not axes.
        """
        dims = tuple(operator.index(n) for n in np.atleast_1d(dims))
        modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
        for m in modes:
            check_clip_mode(m)
        if len(multi_index) != len(dims):
            raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
        total = None
        for axis, (index, size, m) in enumerate(zip(multi_index, dims, modes)):
            index = self._integer_indices(index)
            if m == "raise":
                self._refuse_outside(index, 0, size, lambda v: "invalid entry in coordinates array")
            elif m == "wrap":
                index = index % size
            else:
                index = self.clip(index, 0, size - 1)
            term = index * _stride(dims, axis, order)
            total = term if total is None else total + term
        return self.evaluate(self.astype(total, I64))

    def indices(self, dimensions, dtype=int, sparse=False):
        """The grid of each axis' index over ``dimensions``, as ``numpy.indices``."""
        dimensions = tuple(operator.index(n) for n in dimensions)
        dtype = dtypes.as_dtype(dtype)
        grids = []
        for axis, size in enumerate(dimensions):
            shape = [1] * len(dimensions)
            shape[axis] = size
            grid = self.arange(size, dtype=dtype).reshape(shape)
            grids.append(grid if sparse else self.broadcast_to(grid, dimensions))
        if sparse:
            return tuple(grids)
        return self.stack(grids) if grids else self.empty((0,), dtype)

    def ix_(self, *args):
        """An open mesh of 1-D index sequences (booleans as their true positions),
        as ``numpy.ix_``."""
        result = []
        for axis, seq in enumerate(args):
            index = seq if isinstance(seq, Expression) else self.array(np.asarray(seq))
            if index.ndim != 1:
                raise ValueError("Cross index must be 1 dimensional")
            if index.dtype == np.bool_:
                index = self.flatnonzero(index)
            shape = [1] * len(args)
            shape[axis] = index.size
            result.append(index.reshape(shape))
        return tuple(result)

    def tril_indices(self, n, k=0, m=None):
        """The indices of the lower triangle of an (n, m) array (``numpy.tril_indices``)."""
        return tuple(self.array(i) for i in np.tril_indices(n, k, m))

    def triu_indices(self, n, k=0, m=None):
        """The indices of the upper triangle of an (n, m) array (``numpy.triu_indices``)."""
        return tuple(self.array(i) for i in np.triu_indices(n, k, m))

    def tril_indices_from(self, arr, k=0):
        """:meth:`tril_indices` for the shape of the 2-D ``arr``."""
        rows, columns = _two_d(arr)
        return self.tril_indices(rows, k, columns)

    def triu_indices_from(self, arr, k=0):
        """:meth:`triu_indices` for the shape of the 2-D ``arr``."""
        rows, columns = _two_d(arr)
        return self.triu_indices(rows, k, columns)

    def diag_indices(self, n, ndim=2):
        """The indices of the main diagonal of an ``ndim``-d array of side n."""
        index = self.arange(operator.index(n), dtype=I64)
        return (index,) * ndim

    def diag_indices_from(self, arr):
        """:meth:`diag_indices` for ``arr`` (every side equal, at least 2-d)."""
        shape = np.shape(arr) if not isinstance(arr, Expression) else arr.shape
        if len(shape) < 2:
            raise ValueError("input array must be at least 2-d")
        if len(set(shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        return self.diag_indices(shape[0], len(shape))

    def _integer_indices(self, indices):
        """Indices as an int64 tensor (numpy's TypeError for others)."""
        index = indices if isinstance(indices, Expression) else self.array(np.asarray(indices))
        if dtypes.kind(index.dtype) not in "iu":
            raise TypeError("only int indices permitted")
        return index if index.dtype == I64 and hasattr(index, "strides") else \
            self.evaluate(self.astype(index, I64))

    def _refuse_outside(self, index, low, high, message):
        """ValueError ``message(value)`` for the first entry outside ``[low, high)``."""
        if not index.size:
            return
        outside = self.evaluate(self.logical_or(self.less(index, low),
                                                self.greater_equal(index, high)))
        if bool(self.evaluate(self.any(outside, axis=None, keepdims=False)).get()):
            first = int(np.argmax(outside.get().reshape(-1)))
            raise ValueError(message(int(index.get().reshape(-1)[first])))


def check_clip_mode(mode):
    """numpy's ValueError for an out-of-range ``mode`` other than "raise", "wrap", "clip"."""
    if mode not in _MODES:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")


def _stride(shape, axis, order):
    """How many flat positions one step along ``axis`` moves, in ``order``."""
    if order == "C":
        return int(np.prod(shape[axis + 1:], dtype=np.int64))
    if order == "F":
        return int(np.prod(shape[:axis], dtype=np.int64))
    raise ValueError("only 'C' or 'F' order is permitted")


def _two_d(arr):
    shape = arr.shape if isinstance(arr, Expression) else np.shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return shape
