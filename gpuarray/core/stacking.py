"""numpy's stacking, splitting and flipping helpers: ``column_stack``, ``dstack``,
``hsplit``, ``vsplit``, ``dsplit``, ``fliplr``, ``flipud``, ``rot90``, ``block``,
and the ``rollaxis`` view.

In: tensors, op-trees or array_likes of one factory and numpy's
arguments.  Out: numpy's results -- new tensors for the stacks, lists of
views for the splits, views for the flips and rotations -- with numpy's
errors.  Each is a few lines over :mod:`gpuarray.core.creation`'s
``concatenate`` and :mod:`gpuarray.core.shaping`'s views, as in numpy.
Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import operator

from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_index


class StackingFunctions:
    """Mixin: ``column_stack``, ``dstack``, ``hsplit``, ``vsplit``, ``dsplit``,
    ``fliplr``, ``flipud``, ``rot90``."""

    def rollaxis(self, a, axis, start=0):
        """A view with ``axis`` moved to before ``start``, as ``numpy.rollaxis``.

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis`` or ``start`` out of range (numpy's messages).
        """
        x = self._view_source(a)
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        start = operator.index(start)
        if not -x.ndim <= start <= x.ndim:
            raise AxisError(f"'start' arg requires {-x.ndim} <= start < {x.ndim + 1}, "
                            f"but {start} was passed in")
        start += x.ndim if start < 0 else 0
        if axis < start:
            start -= 1
        return x if axis == start else self.moveaxis(x, axis, start)

    def block(self, arrays):
        """Arrays assembled from nested lists of blocks, as ``numpy.block``: the
        innermost lists join along the last axis, the next along the one before.

        Raises
        ------
        TypeError
            A tuple where a list is expected (numpy's message).
        ValueError
            An empty list, or lists nested to different depths.
        """
        depth = _block_depth(arrays, "arrays")
        leaves = []
        _block_leaves(arrays, leaves)
        ndim = max([depth] + [self._as_tensor(x).ndim for x in leaves])
        return self._block(arrays, depth, ndim)

    def _block(self, arrays, depth, ndim):
        if not isinstance(arrays, list):
            x = self._as_tensor(arrays)
            return x.reshape((1,) * (ndim - x.ndim) + tuple(x.shape))
        parts = [self._block(a, depth - 1, ndim) for a in arrays]
        return self.concatenate(parts, axis=-depth)

    def column_stack(self, tup):
        """1-D arrays as columns, 2-D ones as they are, side by side (``numpy.column_stack``)."""
        columns = []
        for a in tup:
            x = self._as_tensor(a)
            columns.append(x.reshape(x.size, 1) if x.ndim < 2 else x)
        return self.concatenate(columns, axis=1)

    def dstack(self, tup):
        """Arrays stacked along a third axis (``numpy.dstack``)."""
        return self.concatenate([self.atleast_3d(self._as_tensor(a)) for a in tup], axis=2)

    def hsplit(self, ary, indices_or_sections):
        """Split along the second axis (the first of 1-D arrays), as ``numpy.hsplit``."""
        x = self._as_tensor(ary)
        if x.ndim == 0:
            raise ValueError("hsplit only works on arrays of 1 or more dimensions")
        return self.split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)

    def vsplit(self, ary, indices_or_sections):
        """Split along the first axis of an array of 2 or more dimensions (``numpy.vsplit``)."""
        x = self._as_tensor(ary)
        if x.ndim < 2:
            raise ValueError("vsplit only works on arrays of 2 or more dimensions")
        return self.split(x, indices_or_sections, axis=0)

    def dsplit(self, ary, indices_or_sections):
        """Split along the third axis (``numpy.dsplit``)."""
        x = self._as_tensor(ary)
        if x.ndim < 3:
            raise ValueError("dsplit only works on arrays of 3 or more dimensions")
        return self.split(x, indices_or_sections, axis=2)

    def fliplr(self, m):
        """A view with the columns reversed (``numpy.fliplr``)."""
        x = self._as_tensor(m)
        if x.ndim < 2:
            raise ValueError("Input must be >= 2-d.")
        return x[:, ::-1]

    def flipud(self, m):
        """A view with the rows reversed (``numpy.flipud``)."""
        x = self._as_tensor(m)
        if x.ndim < 1:
            raise ValueError("Input must be >= 1-d.")
        return x[::-1]

    def rot90(self, m, k=1, axes=(0, 1)):
        """A view rotated by 90 degrees ``k`` times in the plane of ``axes``, from
        the first axis towards the second (``numpy.rot90``)."""
        x = self._as_tensor(m)
        axes = tuple(axes)
        if len(axes) != 2:
            raise ValueError("len(axes) must be 2.")
        if axes[0] == axes[1] or abs(axes[0] - axes[1]) == x.ndim:
            raise ValueError("Axes must be different.")
        if not all(-x.ndim <= a < x.ndim for a in axes):
            raise ValueError(f"Axes={axes} out of range for array of ndim={x.ndim}.")
        k = operator.index(k) % 4
        if k == 0:
            return x[...]
        if k == 2:
            return self.flip(self.flip(x, axes[0]), axes[1])
        order = list(range(x.ndim))
        order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
        if k == 1:
            return self.flip(x, axes[1]).transpose(order)
        return self.flip(x.transpose(order), axes[1])


def _block_depth(arrays, where):
    """How deep ``arrays`` nests lists, with numpy's errors for tuples, empty
    lists and uneven depths."""
    if isinstance(arrays, tuple):
        raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, and "
                        "np.block does not allow implicit conversion from tuple to ndarray.")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ValueError(f"List at {where} cannot be empty")
    depths = [_block_depth(a, f"{where}[{k}]") for k, a in enumerate(arrays)]
    if len(set(depths)) > 1:
        raise ValueError(f"List depths are mismatched. First element was at depth "
                         f"{depths[0] + 1}, but there is an element at depth "
                         f"{max(depths) + 1} ({where}[{depths.index(max(depths))}]...)")
    return depths[0] + 1


def _block_leaves(arrays, leaves):
    """The blocks of a nested list, in order."""
    if isinstance(arrays, list):
        for a in arrays:
            _block_leaves(a, leaves)
    else:
        leaves.append(arrays)
