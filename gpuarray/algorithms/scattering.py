"""Assignment through an integer or boolean array: ``t[key] = value``.

In: a tensor of one factory, a key holding one integer or boolean array
among basic entries (as :mod:`.gathering` reads them) and a value that
broadcasts to ``t[key]``'s shape.  Out: ``t`` updated in place.

How: a boolean mask with a scalar value is one fused ``where`` over the
masked axes.  Otherwise the destinations are numbered in a contiguous
(outer, axis, inner) frame -- the tensor itself, or a copy written back --
from the mask's true positions or the checked indices, and one scatter
kernel stores the values there.  Repeated indices keep the last value
assigned, as numpy does: a stable sort of the indices finds each one's last
occurrence, and only those are stored, so the result never depends on the
order the GPU's threads write in.
"""
import numpy as np

from ..core import dtypes
from ..core.optree import Expression
from .gathering import (_array_entry, _check_mask, _merged, _split_advanced, array_count,
                        expand_boolean_scalars)

I64 = np.dtype(np.int64)


class ScatterFunctions:
    """Mixin: array keys of ``t[key] = value``."""

    def _assign_with_array(self, x, key, value):
        """``x[key] = value`` (see the module docstring)."""
        x, key = expand_boolean_scalars(x, key)
        if array_count(key) > 1:
            self._assign_with_arrays(x, key, value)
            return
        items, at, index = _array_entry(key)
        view, axis, label, covered = self._indexed_axes(x, items, at, index)
        if dtypes.kind(index.dtype) == "b":
            mask = self._contiguous(self._as_tensor(index))
            _check_mask(mask.shape, view.shape[axis:axis + covered], label)
            if np.ndim(value) == 0 and not isinstance(value, Expression):
                shaped = mask.reshape((1,) * axis + mask.shape
                                      + (1,) * (view.ndim - axis - covered))
                self.assign(view, self.where(shaped, value, view))
                return
            view = view.reshape(_merged(view.shape, axis, covered))
            positions = self._flat_nonzero(mask)
        else:
            positions, _ = self._index_operand(index, view.shape[axis], "raise", label)
            if not _host(index):
                self._check_device_indices(positions, view.shape[axis], label)
            positions = self.evaluate(self.mod(positions, max(view.shape[axis], 1)))
        values = self._scatter_values(value, view, axis, positions, _split_advanced(items, at))
        self._scatter(view, axis, positions.reshape(-1), values)

    def _scatter_values(self, value, view, axis, positions, split):
        """``value`` broadcast to the assigned elements, contiguous, in take's axis order."""
        added = positions.ndim
        shape = view.shape[:axis] + positions.shape + view.shape[axis + 1:]
        numpy_shape = (positions.shape + shape[:axis] + shape[axis + added:]) if split and axis \
            else shape
        source = self._as_tensor(value) if np.ndim(value) else value
        values = self.empty(numpy_shape, view.dtype)
        values[...] = source
        if split and axis:
            values = self.moveaxis(values, list(range(added)), list(range(axis, axis + added)))
        return self._contiguous(values).reshape(view.shape[:axis] + (positions.size,)
                                                + view.shape[axis + 1:])

    def _scatter(self, view, axis, positions, values):
        """``view[..., positions[j], ...] = values[..., j, ...]`` along ``axis``, the
        last of repeated positions winning."""
        if not positions.size:
            return
        positions, values = self._last_occurrences(positions, values, axis)
        target = self._contiguous(view)
        outer = int(np.prod(view.shape[:axis], dtype=np.int64))
        inner = int(np.prod(view.shape[axis + 1:], dtype=np.int64))
        size = view.shape[axis]
        o = self.arange(outer, dtype=I64).reshape(outer, 1, 1)
        i = self.arange(inner, dtype=I64).reshape(1, 1, inner)
        flat = self.empty((outer, positions.size, inner), I64)
        flat[...] = (o * size + positions.reshape(1, -1, 1)) * inner + i
        self._algorithm("scatter", values.reshape(-1), flat.reshape(-1), target.reshape(-1))
        if target is not view:
            view[...] = target

    def _last_occurrences(self, positions, values, axis):
        """Keep each position's last value: a stable sort groups repeats in order."""
        n = positions.size
        if n == 1:
            return positions, values
        order = self.argsort(positions)
        ordered = self._take(positions, order, 0, "raise", 0, True)
        last = self.empty((n,), np.bool_)
        last[:-1] = self.not_equal(ordered[:-1], ordered[1:])
        last[-1:] = True
        keep = self._take(order, self._flat_nonzero(last), 0, "raise", 0, True)
        if keep.size == n:
            return positions, values
        return (self._take(positions, keep, 0, "raise", 0, True),
                self._take(values, keep, axis, "raise", axis, True))

    def _check_device_indices(self, positions, size, label):
        """numpy's IndexError for device indices outside ``[-size, size)`` (reads one flag)."""
        wrong = self.logical_or(self.less(positions, -size),
                                self.greater_equal(positions, size))
        if positions.size and bool(self.any(wrong).get()):
            first = self._flat_nonzero(self.evaluate(wrong))
            value = int(positions.reshape(-1)[int(first[:1].get()[0])].get())
            raise IndexError(f"index {value} is out of bounds for axis {label} with size {size}")


def _host(index):
    return isinstance(index, np.ndarray)
