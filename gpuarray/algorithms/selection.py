"""Selection by position or condition: ``compress``, ``extract``, ``put``,
``put_along_axis``, ``place``, ``lexsort``.

In: tensors, op-trees or array_likes of one factory (``put``,
``put_along_axis`` and ``place`` write into a tensor of the factory, in
place) with numpy's arguments.  Out: new tensors, or the target updated;
numpy's results and errors.

How: ``compress`` and ``extract`` are a gather at the condition's true
positions and a selection of the flattened array; ``put`` and
``put_along_axis`` number every destination in the flattened target and
scatter, the last of repeated positions winning (numpy's order); ``put``
and ``place`` repeat their values cyclically when there are fewer than
destinations, as numpy's do.  ``lexsort`` sorts by the last key, then the
one before..., as stable sorts from the first key to the last.
"""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core import dtypes
from ..core.array import Tensor
from ..core.index_tricks import check_clip_mode
from .gathering import _along_shape

I64 = np.dtype(np.int64)


class SelectionFunctions:
    """Mixin: ``compress``, ``extract``, ``put``, ``put_along_axis``, ``place``, ``lexsort``."""

    def compress(self, condition, a, axis=None, out=None):
        """The slices of ``a`` along ``axis`` where the 1-D ``condition`` is true,
        as ``numpy.compress`` (a shorter condition leaves the rest out).

        Raises
        ------
        ValueError
            ``condition`` not 1-D.
        IndexError
            A true entry beyond the axis.
        """
        keep = self._as_tensor(condition)
        if keep.ndim != 1:
            raise ValueError("condition must be a 1-d array")
        x = self._as_tensor(a)
        if axis is None:
            x, axis = self._contiguous(x).reshape(-1), 0
        axis = normalize_axis_index(axis, x.ndim)
        positions = self._flat_nonzero(keep)
        result = self._take(x, positions, axis, "raise", axis, False)
        return result if out is None else self._finish(result, out)

    def extract(self, condition, arr):
        """The elements of the flattened ``arr`` where the flattened ``condition`` is
        non-zero (``numpy.extract``)."""
        x = self._contiguous(self._as_tensor(arr)).reshape(-1)
        positions = self._flat_nonzero(self._as_tensor(condition))
        return self._take(x, positions, 0, "raise", 0, False)

    def put(self, a, ind, v, mode="raise"):
        """``a.flat[ind] = v`` in place, as ``numpy.put`` (``v`` repeated when shorter).

        Raises
        ------
        IndexError
            An index out of range (mode "raise").
        ValueError
            An unknown ``mode``.
        """
        check_clip_mode(mode)
        target = _target(self, a, "put")
        positions, checked = self._index_operand(ind, target.size, mode, 0)
        positions = positions.reshape(-1)
        if not positions.size:
            return
        if mode == "raise" and not checked:
            self._check_device_indices(positions, target.size, 0)
        positions = self._in_range(positions, target.size, mode)
        self._put_flat(target, positions, self._cycled(v, positions.size, target.dtype))

    def put_along_axis(self, arr, indices, values, axis):
        """``arr`` along ``axis`` at ``indices`` set to ``values``, as
        ``numpy.put_along_axis`` (in place; other axes broadcast).

        Raises
        ------
        IndexError
            Non-integer indices, or one out of range.
        ValueError
            ``indices`` and ``arr`` of different numbers of dimensions.
        """
        target = _target(self, arr, "put_along_axis")
        index = self._as_tensor(indices)
        if dtypes.kind(index.dtype) not in "iu":
            raise IndexError("`indices` must be an integer array")
        shape_of = (target.size,) if axis is None else target.shape
        axis = 0 if axis is None else normalize_axis_index(axis, target.ndim)
        if index.ndim != len(shape_of):
            raise ValueError("`indices` and `arr` must have the same number of dimensions")
        shape = _along_shape(shape_of, index.shape, axis)
        if any(n != m for d, (n, m) in enumerate(zip(shape, shape_of)) if d != axis):
            raise ValueError(f"shape mismatch: indices of shape {tuple(index.shape)} do not fit "
                             f"the array's shape {tuple(shape_of)} off axis {axis}")
        size = shape_of[axis]
        index = self._contiguous(self._as_index(self.broadcast_to(index, shape)))
        self._check_device_indices(index, size, axis)
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        outer = self.arange(int(np.prod(shape[:axis], dtype=np.int64))).reshape(
            shape[:axis] + (1,) * (len(shape) - axis))
        within = self.arange(inner).reshape(shape[axis + 1:]) if inner > 1 else 0
        index = self.where(self.less(index, 0), index + size, index)
        flat = self.empty(shape, I64)
        flat[...] = (outer * size + index) * inner + within
        data = self.empty(shape, target.dtype)
        data[...] = self._as_tensor(values) if np.ndim(values) else values
        self._put_flat(target, flat.reshape(-1), data.reshape(-1))

    def place(self, arr, mask, vals):
        """``arr`` where ``mask`` is true set to ``vals`` in order, repeated when
        shorter, as ``numpy.place`` (in place).

        Raises
        ------
        ValueError
            ``mask`` of another size, or no values for a true mask.
        """
        target = _target(self, arr, "place")
        flags = self._mask(self._contiguous(self._as_tensor(mask)).reshape(-1))
        if flags.size != target.size:
            raise ValueError("place: mask and data must be the same size")
        positions = self._flat_nonzero(flags)
        if not positions.size:
            return
        if np.size(vals) == 0:
            raise ValueError("Cannot insert from an empty array!")
        self._put_flat(target, positions, self._cycled(vals, positions.size, target.dtype))

    def lexsort(self, keys, axis=-1):
        """The positions that sort by the last key, then the one before..., as
        ``numpy.lexsort`` (stable; int64).

        Raises
        ------
        ValueError
            Keys of different shapes.
        """
        keys = [self._as_tensor(k) for k in
                (keys if isinstance(keys, (list, tuple)) else self._as_tensor(keys))]
        if any(k.shape != keys[0].shape for k in keys):
            raise ValueError("all keys need to be the same shape")
        order = self.argsort(keys[0], axis=axis)
        for key in keys[1:]:
            ordered = self.take_along_axis(key, order, axis=axis)
            order = self.take_along_axis(order, self.argsort(ordered, axis=axis), axis=axis)
        return order

    def _in_range(self, positions, size, mode):
        """Flat positions made valid by ``mode`` (checked already for "raise")."""
        if mode == "wrap":
            return self.evaluate(self.mod(positions, size))
        if mode == "clip":
            return self.evaluate(self.clip(positions, 0, size - 1))
        return self.evaluate(self.where(self.less(positions, 0), positions + size, positions))

    def _cycled(self, values, count, dtype):
        """``count`` values: ``values`` flattened and repeated (``numpy.resize``)."""
        source = self._contiguous(self._as_tensor(values)).reshape(-1)
        if source.size == 0:
            raise ValueError("Cannot insert from an empty array!")
        cycled = self.empty((count,), dtype)
        cycled[...] = self.take(source, self.arange(count), mode="wrap")
        return cycled

    def _put_flat(self, target, positions, values):
        """``target.flat[positions] = values``, the last of repeated positions winning."""
        in_place = target.is_contiguous
        flat = self._contiguous(target).reshape(-1)
        self._scatter(flat, 0, positions, values)
        if not in_place:
            target[...] = flat.reshape(target.shape)


def _target(ng, a, name):
    """The tensor a function writes into, or numpy's kind of TypeError."""
    if not isinstance(a, Tensor) or a.backend is not ng:
        raise TypeError(f"{name} writes into a tensor of this factory, not {type(a).__name__}")
    return a
