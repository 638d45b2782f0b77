"""numpy's functional helpers: ``apply_along_axis``, ``apply_over_axes``,
``fromfunction``, and ``copyto``.

In: a Python function and tensors, op-trees or array_likes of one factory.
Out: numpy's results as new tensors (``copyto`` writes into its
destination).  ``apply_along_axis`` calls the function once per 1-D slice,
as numpy does: a Python loop, fine for a few slices, and the slices are
views so nothing is copied to call it; the results are stacked with one
fused copy each.  ``fromfunction`` calls the function once, on the index
grids (``indices``), so whatever it computes runs as fused operations.
``copyto`` is ``dst[...] = where(where, src, dst)``, one kernel, with
numpy's casting check.  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import itertools

import numpy as np

from . import dtypes, shapes
from .optree import Expression


class FunctionalFunctions:
    """Mixin: numpy's functional helpers and ``copyto``."""

    def apply_along_axis(self, func1d, axis, arr, *args, **kwargs):
        """``func1d`` applied to every 1-D slice of ``arr`` along ``axis``, as
        ``numpy.apply_along_axis`` (its results, of one shape, replace the axis).

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis`` out of range.
        ValueError
            ``arr`` with a zero-length dimension other than ``axis`` (numpy's message).
        """
        x = self._as_tensor(arr)
        axis = shapes.normalize_axes((axis,), x.ndim)[0]
        moved = self.moveaxis(x, axis, -1)
        outer = moved.shape[:-1]
        if 0 in outer:
            raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
        results = [self._as_tensor(func1d(moved[index], *args, **kwargs))
                   for index in itertools.product(*map(range, outer))]
        stacked = self.stack(results).reshape(outer + results[0].shape)
        # numpy puts the result's own axes where the reduced axis was
        return self.moveaxis(stacked, tuple(range(len(outer), stacked.ndim)),
                             tuple(range(axis, axis + results[0].ndim)))

    def apply_over_axes(self, func, a, axes):
        """``func(a, axis)`` for each axis in turn, keeping each reduced axis
        (``numpy.apply_over_axes``).

        Raises
        ------
        ValueError
            ``func`` returning a result that has neither ``a``'s number of
            dimensions nor one fewer (numpy's message).
        """
        result = self._as_tensor(a)
        for axis in np.atleast_1d(axes):
            axis = int(axis) + result.ndim if axis < 0 else int(axis)
            reduced = func(result, axis)
            if reduced.ndim == result.ndim - 1:
                reduced = self.expand_dims(reduced, axis)
            elif reduced.ndim != result.ndim:
                raise ValueError("function is not returning an array of the correct shape")
            result = self._as_tensor(reduced)
        return result

    def fromfunction(self, function, shape, *, dtype=float, **kwargs):
        """``function`` called once on the index grids of ``shape`` (``numpy.fromfunction``)."""
        grids = self.indices(shapes.as_shape(shape), dtype=dtypes.as_dtype(dtype))
        return function(*grids, **kwargs)

    def copyto(self, dst, src, casting="same_kind", where=True):
        """Copy ``src`` into ``dst`` where ``where`` holds, broadcasting, as ``numpy.copyto``.

        Raises
        ------
        TypeError
            ``dst`` not a tensor, or a cast ``casting`` forbids (numpy's message).
        ValueError
            Shapes that do not broadcast to ``dst``'s.
        """
        if not isinstance(dst, Expression) or not hasattr(dst, "strides"):
            raise TypeError("copyto() argument 1 must be a tensor")
        if isinstance(src, (list, tuple, np.ndarray)):
            src = self.array(np.asarray(src))
        value = self.operand(src)
        if not isinstance(value, Expression):
            # a scalar: numpy judges it on a 0-d stand-in (NEP 50's weak scalars)
            np.copyto(np.empty((), dst.dtype), src, casting=casting)
        elif not np.can_cast(value.dtype, dst.dtype, casting):
            raise TypeError(f"Cannot cast array data from {value.dtype!r} to {dst.dtype!r} "
                            f"according to the rule {casting!r}")
        if where is True:
            dst[...] = value
        else:
            dst[...] = self.where(where, value, dst)
