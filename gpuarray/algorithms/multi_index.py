"""Keys with several index arrays: ``t[i, j]``, ``t[i, :, j] = v`` (numpy's advanced indexing).

In: a tensor of one factory and a key holding two or more integer or
boolean arrays (host data, tensors or op-trees) among integers, slices,
``None`` and ``...``; for assignment, a value that broadcasts to the
result.  Out: a new contiguous tensor, or the tensor updated in place.

How, by numpy's rules for such keys: a boolean array stands for the index
arrays of its true elements (``nonzero``), and integers count as 0-d
index arrays.  Every index is checked against its axis (on the host for
host data; by one fused test read back for device data) and made
non-negative; their shapes broadcast to B.  The indexed axes of the basic
view are moved last and merged into one, where the flat position
``i * d_j + j`` (for two arrays) names each element, and one gather (or
one scatter, the last of repeated positions winning) does the rest.  B
takes the indexed axes' place where the index entries are adjacent in
the key, else it comes first.
"""
import numpy as np

from ..core import dtypes
from ..core.array import Tensor
from ..core.optree import Expression
from .gathering import _check_mask, check_host, host_index

I64 = np.dtype(np.int64)


class _Plan:
    """The basic view, its indexed axes, their index tensors and where B goes."""

    def __init__(self, view, axes, indices, position):
        self.view, self.axes, self.indices, self.position = view, axes, indices, position
        self.shape = np.broadcast_shapes(*(tuple(t.shape) for t in indices)) if indices else ()
        self.rest = tuple(n for d, n in enumerate(view.shape) if d not in axes)


class MultiIndexFunctions:
    """Mixin: keys with several index arrays, to read and to assign."""

    def _index_with_arrays(self, x, key):
        """``x[key]`` for a key with several integer or boolean arrays."""
        plan = self._multi_plan(x, key)
        flat = self._flat_positions(plan)
        merged = self._merged_axes(plan)
        result = self._take(merged, flat, merged.ndim - 1, "raise", 0, True)
        return self._contiguous(self.moveaxis(result, _range(len(plan.rest), len(plan.shape)),
                                              _range(plan.position, len(plan.shape))))

    def _assign_with_arrays(self, x, key, value):
        """``x[key] = value`` for a key with several integer or boolean arrays."""
        plan = self._multi_plan(x, key)
        flat = self._flat_positions(plan)
        count = len(plan.shape)
        numpy_shape = plan.rest[:plan.position] + plan.shape + plan.rest[plan.position:]
        values = self.empty(numpy_shape, x.dtype)
        values[...] = self._as_tensor(value) if np.ndim(value) else value
        values = self._contiguous(self.moveaxis(values, _range(plan.position, count),
                                                _range(len(plan.rest), count)))
        values = values.reshape(plan.rest + (flat.size,))
        moved = self.moveaxis(plan.view, list(plan.axes), _range(len(plan.rest), len(plan.axes)))
        target = self._contiguous(moved)
        merged = target.reshape(plan.rest + (int(np.prod(moved.shape[len(plan.rest):])),))
        self._scatter(merged, len(plan.rest), flat.reshape(-1), values)
        if target is not moved:
            moved[...] = target

    def _merged_axes(self, plan):
        """The view with its indexed axes moved last and merged (contiguous)."""
        moved = self.moveaxis(plan.view, list(plan.axes), _range(len(plan.rest), len(plan.axes)))
        size = int(np.prod(moved.shape[len(plan.rest):], dtype=np.int64))
        return self._contiguous(moved).reshape(plan.rest + (size,))

    def _flat_positions(self, plan):
        """int64 tensor of shape B: each element's flat position in the merged axes."""
        sizes = [plan.view.shape[a] for a in plan.axes]
        flat = self.empty(plan.shape, I64)
        expression, stride = None, 1
        for index, size in zip(reversed(plan.indices), reversed(sizes)):
            term = index if stride == 1 else index * stride
            expression = term if expression is None else expression + term
            stride *= size
        flat[...] = expression
        return flat

    def _multi_plan(self, x, key):
        """Read the key: the basic view, the indexed axes (in the view) with their
        checked non-negative int64 index tensors, and B's place in the result."""
        items = _expand(list(key) if type(key) is tuple else [key], x.ndim)
        basic, axes, indices, entries = [], [], [], []
        axis = view_axis = 0
        for k, item in enumerate(items):
            if item is None or isinstance(item, slice):
                basic.append(item)
                view_axis += 1
                axis += item is not None
                continue
            for index in self._index_arrays(item, x.shape[axis:], axis):
                size = x.shape[axis]
                indices.append(self._checked_index(index, size, axis))
                axes.append(view_axis)
                entries.append(k)
                basic.append(slice(None))
                axis += 1
                view_axis += 1
        try:
            np.broadcast_shapes(*(tuple(t.shape) for t in indices))
        except ValueError:
            shapes = " ".join(str(tuple(t.shape)).replace(" ", "") for t in indices)
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             f"with shapes {shapes} ") from None
        adjacent = all(b - a <= 1 for a, b in zip(entries, entries[1:]))
        view = x[tuple(basic)]
        position = sum(1 for d in range(axes[0]) if d not in axes) if adjacent else 0
        return _Plan(view, tuple(axes), indices, position)

    def _index_arrays(self, item, shape, axis):
        """The index arrays an entry stands for: itself, or a mask's nonzero()."""
        if isinstance(item, (Tensor, Expression)):
            index = self._as_tensor(item)
        else:
            index = host_index(item)
        if dtypes.kind(index.dtype) != "b":
            return [index]
        _check_mask(index.shape, shape[:index.ndim], axis)
        if isinstance(index, np.ndarray):
            return list(np.nonzero(index))
        return list(self.nonzero(index))

    def _checked_index(self, index, size, axis):
        """``index`` as an int64 tensor in [0, size), or numpy's IndexError."""
        if isinstance(index, np.ndarray):
            host = index.astype(np.int64)
            check_host(host, size, axis)
            return self.array(np.where(host < 0, host + size, host))
        index = self._as_index(index)
        self._check_device_indices(index, size, axis)
        return self.evaluate(self.where(self.less(index, 0), index + size, index))


def _range(start, count):
    return list(range(start, start + count))


def _width(item):
    """How many axes an entry indexes (a mask: its dimensions)."""
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, (bool, np.bool_)):
        raise IndexError("gpuarray supports basic indexing only (integers, slices, '...', "
                         "None) beside index arrays; got a bool scalar")
    dtype = item.dtype if hasattr(item, "dtype") else np.asarray(item).dtype
    return max(np.ndim(item), 1) if dtypes.kind(dtype) == "b" else 1


def _expand(items, ndim):
    """The key with its Ellipsis replaced by full slices (each mask covering its
    dimensions), or numpy's IndexError for too many indices."""
    used = sum(_width(item) for item in items)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    ellipses = [k for k, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if not ellipses:
        return items + [slice(None)] * (ndim - used)
    at = ellipses[0]
    return items[:at] + [slice(None)] * (ndim - used) + items[at + 1:]
