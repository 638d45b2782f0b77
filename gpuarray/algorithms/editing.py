"""Editing by position: ``append``, ``insert``, ``delete``, ``fill_diagonal``, ``putmask``.

In: tensors, op-trees or array_likes of one factory and numpy's ``obj``
(an int, a slice, a sequence of ints, or for ``delete`` a boolean mask),
``values`` and ``axis``; ``fill_diagonal`` writes into a tensor.  Out: new
tensors (or the tensor filled), with numpy's values and errors.

How: the positions are worked out on the host by numpy itself, on an
index array of the axis alone (its other sides 1, so it is as small as the
axis): ``numpy.delete`` of ``arange(n)`` gives the positions kept, and
``numpy.insert`` of ``arange(n)`` with the placeholders ``n, n + 1...``
gives each output position's source in ``arr`` followed by the new values.
One gather along the axis then builds the result; numpy's own errors
(naming the axis) come from that host step.  ``putmask`` gathers the
values repeated over ``a``'s flat positions and writes them with one fused
``where``.
"""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import Tensor
from ..core.optree import Expression


class EditingFunctions:
    """Mixin: ``append``, ``insert``, ``delete``, ``fill_diagonal``, ``putmask``."""

    def append(self, arr, values, axis=None):
        """``values`` appended to ``arr`` along ``axis`` (both flattened for None),
        as ``numpy.append``."""
        x, v = self._as_tensor(arr), self._as_tensor(values)
        if axis is None:
            return self.concatenate([self._contiguous(x).reshape(-1),
                                     self._contiguous(v).reshape(-1)])
        return self.concatenate([x, v], axis=axis)

    def delete(self, arr, obj, axis=None):
        """``arr`` without the entries ``obj`` along ``axis``, as ``numpy.delete``.

        Raises
        ------
        IndexError
            An index out of range.
        ValueError
            A boolean ``obj`` not matching the axis.
        """
        x, axis = self._edit_axis(arr, axis)
        kept = np.delete(_axis_positions(x.shape, axis), _host(obj), axis=axis).reshape(-1)
        return self.take(x, kept, axis=axis, mode="wrap")

    def insert(self, arr, obj, values, axis=None):
        """``values`` inserted before the entries ``obj`` along ``axis``, as
        ``numpy.insert`` (an int ``obj`` inserts ``values`` as a block).

        Raises
        ------
        IndexError
            An index out of range.
        """
        x, axis = self._edit_axis(arr, axis)
        where = _host(obj)
        block = self._as_tensor(values)
        block = block.reshape((1,) * (x.ndim - block.ndim) + tuple(block.shape))
        if isinstance(where, slice):
            count = len(range(*where.indices(x.shape[axis])))
        elif np.ndim(where) == 0:
            count = None
        else:
            count = np.asarray(where).size
        single = count is None
        if single:  # numpy: an int obj inserts the values' first axis at axis
            block = self.moveaxis(block, 0, axis)
            count = block.shape[axis]
        shape = list(x.shape)
        shape[axis] = count
        block = self.broadcast_to(self.astype(block, x.dtype), tuple(shape))
        n = x.shape[axis]
        marker = [1] * x.ndim
        marker[0 if single else axis] = count
        order = np.insert(_axis_positions(x.shape, axis), where,
                          np.arange(n, n + count).reshape(marker), axis=axis).reshape(-1)
        joined = self.concatenate([x, block], axis=axis)
        return self.take(joined, order, axis=axis, mode="wrap")

    def putmask(self, a, mask, values):
        """``a.flat[n] = values[n % len(values)]`` where ``mask.flat[n]``, as
        ``numpy.putmask`` (in place).

        Raises
        ------
        TypeError
            ``a`` not a tensor of this factory.
        ValueError
            ``mask`` of another size than ``a`` (numpy's message).
        """
        if not (isinstance(a, Expression) and hasattr(a, "strides")) or a.backend is not self:
            raise TypeError("putmask: first argument must be a tensor of this factory")
        chosen = self.astype(self._as_tensor(mask), np.bool_)
        if chosen.size != a.size:
            raise ValueError("putmask: mask and data must be the same size")
        flat = self._as_tensor(values).reshape(-1)
        if a.size and flat.size:
            repeated = self.take(flat, self.arange(a.size), mode="wrap").reshape(a.shape)
            a[...] = self.where(chosen.reshape(a.shape), repeated, a)

    def fill_diagonal(self, a, val, wrap=False):
        """The main diagonal of ``a`` set to ``val`` (repeated when shorter), in
        place, as ``numpy.fill_diagonal``; ``wrap`` continues below a tall matrix.

        Raises
        ------
        ValueError
            ``a`` below 2-d, or of unequal sides beyond two dimensions.
        """
        if not isinstance(a, Tensor) or a.backend is not self:
            raise TypeError(f"fill_diagonal writes into a tensor of this factory, not "
                            f"{type(a).__name__}")
        if a.ndim < 2:
            raise ValueError("array must be at least 2-d")
        if a.ndim == 2:
            step, end = a.shape[1] + 1, None if wrap else a.shape[1] * a.shape[1]
        else:
            if len(set(a.shape)) != 1:
                raise ValueError("All dimensions of input must be of equal length")
            step, end = 1 + int(np.sum(np.cumprod(a.shape[:-1]))), None
        positions = np.arange(a.size)[:end:step]
        if positions.size:
            self.put(a, positions, val)

    def _edit_axis(self, arr, axis):
        x = self._as_tensor(arr)
        if axis is None:
            return self._contiguous(x).reshape(-1), 0
        return x, normalize_axis_index(axis, x.ndim)


def _axis_positions(shape, axis):
    """``arange(n)`` of the axis, shaped with every other side 1."""
    sides = [1] * len(shape)
    sides[axis] = shape[axis]
    return np.arange(shape[axis]).reshape(sides)


def _host(obj):
    """``obj`` as numpy takes it (tensors read back: positions are decided on the host)."""
    if isinstance(obj, Expression):
        return obj.get()
    return obj
