"""numpy's shape functions that return views: squeeze, expand_dims,
broadcast_to, broadcast_arrays, moveaxis, swapaxes, permute_dims,
atleast_1d/2d/3d, ravel, split, array_split and unstack.

In: a tensor of one factory (an op-tree is evaluated first, host data is
copied in, as numpy's ``asanyarray``), and numpy's arguments.  Out: views
of the input's memory -- new (shape, strides, offset) descriptions, no
kernel and no copy -- wherever numpy returns a view; ``ravel`` copies only
where numpy does.  Shapes, axes and error messages are numpy's, most of
them by calling numpy's own axis and broadcast helpers.

numpy marks ``broadcast_to``'s views read-only; tensors have no such flag,
so write to a broadcast view only knowing that it repeats elements.  Mixed into
both factories through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import itertools

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import shapes
from .array import Tensor
from .optree import Expression


class ShapingFunctions:
    """Mixin: numpy's view-returning shape functions."""

    def squeeze(self, a, axis=None):
        """A view of ``a`` without axes of length one, as ``numpy.squeeze``.

        Parameters
        ----------
        a : array_like
            Input.
        axis : None, int or tuple of ints
            The axes to drop (each of length one); None drops them all.

        Raises
        ------
        ValueError
            A selected axis is not of length one.
        numpy.exceptions.AxisError
            An axis out of range.
        """
        x = self._view_source(a)
        if axis is None:
            drop = {i for i, d in enumerate(x.shape) if d == 1}
        else:
            drop = set(shapes.reduction_axes(axis, x.ndim))  # 0-d takes axis 0 and -1, as numpy
            if any(x.shape[i] != 1 for i in drop):
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        keep = [i for i in range(x.ndim) if i not in drop]
        return x._view(tuple(x.shape[i] for i in keep), tuple(x.strides[i] for i in keep), x.offset)

    def expand_dims(self, a, axis):
        """A view of ``a`` with axes of length one inserted, as ``numpy.expand_dims``.

        Parameters
        ----------
        a : array_like
            Input.
        axis : int or tuple of ints
            Positions of the new axes in the result.

        Raises
        ------
        numpy.exceptions.AxisError
            A position out of range of the result's dimensions.
        ValueError
            A repeated position.
        """
        x = self._view_source(a)
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        new = normalize_axis_tuple(axes, x.ndim + len(axes))
        key = tuple(None if i in new else slice(None) for i in range(x.ndim + len(axes)))
        return x[key]

    def broadcast_to(self, array, shape):
        """A view of ``array`` broadcast to ``shape``, as ``numpy.broadcast_to``.

        Parameters
        ----------
        array : array_like
            Input.
        shape : int or tuple of ints
            The shape to broadcast to (non-negative).

        Raises
        ------
        ValueError
            A negative dimension or a shape ``array`` does not broadcast to.
        """
        x = self._view_source(array)
        # numpy checks on a stand-in of x's shape (no memory), for its messages
        target = np.broadcast_to(np.broadcast_to(np.empty((), np.bool_), x.shape), shape).shape
        return x._view(target, shapes.broadcast_strides(x.shape, x.strides, target), x.offset)

    def broadcast_arrays(self, *args):
        """Views of the inputs broadcast to their common shape, as ``numpy.broadcast_arrays``.

        Parameters
        ----------
        *args : array_like
            Inputs.

        Returns
        -------
        tuple of Tensor
            One view per input (an input already of that shape is returned itself).

        Raises
        ------
        ValueError
            Shapes that do not broadcast together.
        """
        items = [self._view_source(a) for a in args]
        shape = np.broadcast_shapes(*(x.shape for x in items))
        return tuple(x if x.shape == shape else self.broadcast_to(x, shape) for x in items)

    def moveaxis(self, a, source, destination):
        """A view of ``a`` with axes moved to new positions, as ``numpy.moveaxis``.

        Parameters
        ----------
        a : array_like
            Input.
        source, destination : int or sequence of ints
            Original and new positions of the moved axes (as many of each);
            the other axes keep their order.

        Raises
        ------
        numpy.exceptions.AxisError
            A position out of range.
        ValueError
            Repeated positions, or ``source`` and ``destination`` of different lengths.
        """
        x = self._view_source(a)
        source = normalize_axis_tuple(source, x.ndim, "source")
        destination = normalize_axis_tuple(destination, x.ndim, "destination")
        if len(source) != len(destination):
            raise ValueError("`source` and `destination` arguments must have the same number of elements")
        order = [n for n in range(x.ndim) if n not in source]
        for dest, src in sorted(zip(destination, source)):
            order.insert(dest, src)
        return x.transpose(order)

    def swapaxes(self, a, axis1, axis2):
        """A view of ``a`` with two axes interchanged, as ``numpy.swapaxes``.

        Parameters
        ----------
        a : array_like
            Input.
        axis1, axis2 : int
            The axes to interchange.

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis1`` or ``axis2`` out of range.
        """
        x = self._view_source(a)
        axis1 = normalize_axis_index(axis1, x.ndim, "axis1")
        axis2 = normalize_axis_index(axis2, x.ndim, "axis2")
        order = list(range(x.ndim))
        order[axis1], order[axis2] = axis2, axis1
        return x.transpose(order)

    def permute_dims(self, a, axes=None):
        """A view of ``a`` with its axes permuted, as ``numpy.permute_dims``
        (the array API's name of ``transpose``).

        Parameters
        ----------
        a : array_like
            Input.
        axes : tuple of ints, optional
            A permutation of the axes; None reverses them.

        Raises
        ------
        ValueError
            ``axes`` is not a permutation of the axes.
        """
        x = self._view_source(a)
        return x.transpose() if axes is None else x.transpose(tuple(axes))

    def atleast_1d(self, *arys):
        """Inputs as views of at least one dimension, as ``numpy.atleast_1d``.

        Parameters
        ----------
        *arys : array_like
            Inputs.

        Returns
        -------
        Tensor or tuple of Tensor
            One tensor for one input, else a tuple; a 0-d input becomes ``(1,)``.
        """
        return _one_or_tuple([self._at_least(a, 1) for a in arys])

    def atleast_2d(self, *arys):
        """Inputs as views of at least two dimensions, as ``numpy.atleast_2d``.

        Parameters
        ----------
        *arys : array_like
            Inputs.

        Returns
        -------
        Tensor or tuple of Tensor
            A 1-D ``(n,)`` input becomes a row ``(1, n)``, a 0-d one ``(1, 1)``.
        """
        return _one_or_tuple([self._at_least(a, 2) for a in arys])

    def atleast_3d(self, *arys):
        """Inputs as views of at least three dimensions, as ``numpy.atleast_3d``.

        Parameters
        ----------
        *arys : array_like
            Inputs.

        Returns
        -------
        Tensor or tuple of Tensor
            ``(n,)`` becomes ``(1, n, 1)``, ``(m, n)`` becomes ``(m, n, 1)``,
            a 0-d input ``(1, 1, 1)``.
        """
        return _one_or_tuple([self._at_least(a, 3) for a in arys])

    def ravel(self, a, order="C"):
        """The elements of ``a`` as a 1-D tensor, as ``numpy.ravel``: a view
        where the order asked walks memory contiguously, else a copy.

        Parameters
        ----------
        a : array_like
            Input.
        order : {'C', 'F', 'A', 'K'}
            Row-major, column-major, column-major for column-major inputs
            only ('A'), or the order of the elements in memory ('K').

        Raises
        ------
        ValueError
            An unknown ``order``.
        """
        x = self._view_source(a)
        order = "C" if order is None else order
        if not isinstance(order, str) or order.upper() not in ("C", "F", "A", "K"):
            raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
        order = order.upper()
        f_contiguous = x.T.is_contiguous
        if order == "F" or (order == "A" and f_contiguous and not x.is_contiguous):
            return x.T.reshape(-1)
        if order == "K" and not x.is_contiguous:
            return x.transpose(_memory_order(x)).reshape(-1)
        return x.reshape(-1)

    def split(self, ary, indices_or_sections, axis=0):
        """Views of ``ary`` split along ``axis`` into equal pieces or at indices,
        as ``numpy.split``.

        Parameters
        ----------
        ary, indices_or_sections, axis
            As :meth:`array_split`'s.

        Returns
        -------
        list of Tensor

        Raises
        ------
        ValueError
            A number of pieces that does not divide the axis.
        """
        x = self._view_source(ary)
        axis = shapes.normalize_axis(axis, x.ndim)
        if not _is_sequence(indices_or_sections) and x.shape[axis] % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
        return self.array_split(x, indices_or_sections, axis)

    def array_split(self, ary, indices_or_sections, axis=0):
        """Views of ``ary`` split along ``axis``, as ``numpy.array_split``: a
        number of pieces that does not divide the axis makes the first
        pieces one element longer.

        Parameters
        ----------
        ary : array_like
            Input.
        indices_or_sections : int or sequence of ints
            The number of pieces (positive), or the indices where pieces
            begin (taken as slice bounds: out of order or out of range give
            empty pieces).
        axis : int
            The axis to split along.

        Returns
        -------
        list of Tensor

        Raises
        ------
        ValueError
            A number of pieces below one.
        numpy.exceptions.AxisError
            ``axis`` out of range.
        """
        x = self._view_source(ary)
        axis = shapes.normalize_axis(axis, x.ndim)
        total = x.shape[axis]
        if _is_sequence(indices_or_sections):
            bounds = [0] + list(indices_or_sections) + [total]
        else:
            sections = int(indices_or_sections)  # numpy truncates a float count
            if sections <= 0:
                raise ValueError("number sections must be larger than 0.")
            each, extras = divmod(total, sections)
            sizes = [each + 1] * extras + [each] * (sections - extras)
            bounds = [0, *itertools.accumulate(sizes)]
        lead = (slice(None),) * axis
        return [x[lead + (slice(start, stop),)] for start, stop in zip(bounds, bounds[1:])]

    def unstack(self, x, /, *, axis=0):
        """Views of the sub-arrays of ``x`` along ``axis``, as ``numpy.unstack``.

        Parameters
        ----------
        x : array_like
            Input of at least one dimension.
        axis : int
            The axis to unstack along.

        Returns
        -------
        tuple of Tensor
            ``x.shape[axis]`` views, each without that axis.

        Raises
        ------
        ValueError
            A 0-d input.
        numpy.exceptions.AxisError
            ``axis`` out of range.
        """
        t = self._view_source(x)
        if t.ndim == 0:
            raise ValueError("Input array must be at least 1-d.")
        return tuple(self.moveaxis(t, axis, 0))

    # -- helpers --------------------------------------------------------
    def _view_source(self, a):
        """``a`` as a tensor of this factory to take views of: a lazy array
        gives its value (evaluated once, then kept), host data is copied in,
        another factory's tensor refused."""
        if isinstance(a, Expression):
            a = self.operand(a)
            return a if isinstance(a, Tensor) else a._evaluated()
        return self.asarray(a)

    def _at_least(self, a, ndim):
        """``a`` viewed with ``ndim`` axes when it has fewer, new axes where numpy puts them."""
        x = self._view_source(a)
        if x.ndim >= ndim:
            return x
        return x[(None,) * ndim if x.ndim == 0 else _RAISE_KEYS[ndim, x.ndim]]


#: (wanted, actual dimensions) -> where ``atleast_2d``/``atleast_3d`` add axes
_RAISE_KEYS = {
    (2, 1): (None, Ellipsis),          # (n,) -> (1, n): a row
    (3, 1): (None, Ellipsis, None),    # (n,) -> (1, n, 1)
    (3, 2): (Ellipsis, None),          # (m, n) -> (m, n, 1)
}


def _is_sequence(value):
    """True for split indices, False for a number of sections (numpy's test: ``len``)."""
    try:
        len(value)
    except TypeError:
        return False
    return True


def _one_or_tuple(items):
    """numpy's ``atleast_*`` return: the one result itself, else a tuple."""
    return items[0] if len(items) == 1 else tuple(items)


def _memory_order(x):
    """The axes of ``x`` from the largest memory step to the smallest, as
    numpy's 'K' order: a stable insertion sort on the absolute strides, in
    which an axis of length one or of stride 0 is never moved (it has no
    memory order; numpy's iterator leaves it in place)."""
    steps = [0 if d == 1 else abs(s) for d, s in zip(x.shape, x.strides)]
    order = list(range(x.ndim))[::-1]  # innermost first, as numpy's iterator sorts
    for i in range(1, len(order)):
        axis, at = order[i], i
        for j in range(i - 1, -1, -1):
            if steps[axis] == 0 or steps[order[j]] == 0:
                continue  # ambiguous: look further in
            if steps[order[j]] <= steps[axis]:
                break
            at = j
        order.insert(at, order.pop(i))
    return order[::-1]
