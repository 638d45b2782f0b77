"""numpy's ``gradient``: central differences inside, one-sided at the ends.

In: a tensor, op-tree or array_like of one factory, the spacing per axis
(none: 1; a scalar; or the coordinates along the axis, host data), ``axis``
and ``edge_order`` (1 or 2).  Out: one new tensor per axis (a tuple for
several, as numpy's), float64 for integer input, with numpy's formulas --
second-order accurate inside (uneven spacing included), first- or
second-order at the ends -- each an elementwise tree over shifted views,
so an axis costs three fused kernels (four for integer input, converted
first).  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

from . import dtypes, shapes
from .optree import Expression

F64 = np.dtype(np.float64)


class CalculusFunctions:
    """Mixin: ``gradient``."""

    def gradient(self, f, *varargs, axis=None, edge_order=1):
        """The gradient of ``f`` by differences, as ``numpy.gradient``.

        Raises
        ------
        ValueError
            ``edge_order`` above 2, or an axis shorter than ``edge_order + 1``.
        TypeError
            A number of spacings that is neither 0, 1 nor one per axis.
        """
        x = f if isinstance(f, Expression) else self.array(np.asarray(f))
        x = x if hasattr(x, "strides") else self.evaluate(x)
        axes = tuple(range(x.ndim)) if axis is None else shapes.normalize_axes(
            axis if isinstance(axis, tuple) else (axis,), x.ndim)
        if edge_order > 2:
            raise ValueError("'edge_order' greater than 2 not supported")
        if len(varargs) == 0:
            spacings = [1.0] * len(axes)
        elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
            spacings = [varargs[0]] * len(axes)
        elif len(varargs) == len(axes):
            spacings = list(varargs)
        else:
            raise TypeError("invalid number of arguments")
        kind = x.dtype if dtypes.is_inexact(x.dtype) else F64
        results = tuple(self._gradient_along(x, a, s, edge_order, kind)
                        for a, s in zip(axes, spacings))
        return results[0] if len(results) == 1 else results

    def _gradient_along(self, x, axis, spacing, edge_order, kind):
        n = x.shape[axis]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        values = self.moveaxis(x, axis, -1)
        values = values if values.dtype == kind else self.evaluate(self.astype(values, kind))
        out = self.empty(self.moveaxis(x, axis, -1).shape, kind)
        steps = _steps(spacing, n)
        if steps is None:
            self._uniform_gradient(out, values, float(spacing if np.ndim(spacing) == 0 else
                                                      np.diff(np.asarray(spacing))[0]),
                                   edge_order)
        else:
            self._uneven_gradient(out, values, steps, edge_order)
        return self.evaluate(self.moveaxis(out, -1, axis))

    def _uniform_gradient(self, out, f, h, edge_order):
        """numpy's formulas for an even spacing ``h`` (its order of operations)."""
        out[..., 1:-1] = (f[..., 2:] - f[..., :-2]) / (2.0 * h)
        if edge_order == 1:
            out[..., :1] = (f[..., 1:2] - f[..., :1]) / h
            out[..., -1:] = (f[..., -1:] - f[..., -2:-1]) / h
        else:
            a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
            out[..., :1] = a * f[..., :1] + b * f[..., 1:2] + c * f[..., 2:3]
            a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
            out[..., -1:] = a * f[..., -3:-2] + b * f[..., -2:-1] + c * f[..., -1:]

    def _uneven_gradient(self, out, f, dx, edge_order):
        """numpy's formulas for the uneven steps ``dx`` (host float64)."""
        dx1, dx2 = dx[:-1], dx[1:]
        a = self.array(-dx2 / (dx1 * (dx1 + dx2)))
        b = self.array((dx2 - dx1) / (dx1 * dx2))
        c = self.array(dx1 / (dx2 * (dx1 + dx2)))
        out[..., 1:-1] = a * f[..., :-2] + b * f[..., 1:-1] + c * f[..., 2:]
        if edge_order == 1:
            out[..., :1] = (f[..., 1:2] - f[..., :1]) / float(dx[0])
            out[..., -1:] = (f[..., -1:] - f[..., -2:-1]) / float(dx[-1])
            return
        d1, d2 = float(dx[0]), float(dx[1])
        a, b, c = -(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
        out[..., :1] = a * f[..., :1] + b * f[..., 1:2] + c * f[..., 2:3]
        d1, d2 = float(dx[-2]), float(dx[-1])
        a, b, c = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))
        out[..., -1:] = a * f[..., -3:-2] + b * f[..., -2:-1] + c * f[..., -1:]


def _steps(spacing, n):
    """The uneven steps of coordinates ``spacing`` (host float64), or None where the
    spacing is one number (a scalar, or evenly spaced coordinates, as numpy treats them)."""
    if np.ndim(spacing) == 0:
        return None
    coordinates = np.asarray(spacing, F64)
    if coordinates.ndim != 1:
        raise ValueError("distances must be either scalars or 1d")
    if coordinates.size != n:
        raise ValueError("when 1d, distances must match the length of the corresponding "
                         "dimension")
    steps = np.diff(coordinates)
    return None if (steps == steps[0]).all() else steps
