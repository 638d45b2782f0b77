"""One-dimensional linear interpolation: ``interp``.

In: the points ``x`` (a tensor, op-tree or array_like of one factory), the
increasing sample points ``xp`` and their values ``fp`` (1-D, same
length), numpy's ``left`` and ``right``.  Out: a new float64 tensor of
``x``'s shape, numpy's values: ``left``/``right`` (default ``fp[0]``,
``fp[-1]``) outside the samples, a sample's value where ``x`` equals it,
else ``slope * (x - xp[j]) + fp[j]`` (and numpy's fall-backs where that is
NaN); NaN for NaN.

How: a binary search places each point (``searchsorted``), two gathers
read its neighbours, and one fused kernel interpolates.  ``period`` is
not supported (NotImplementedError).
"""
import numpy as np

F64 = np.dtype(np.float64)


class InterpolationFunctions:
    """Mixin: ``interp``."""

    def interp(self, x, xp, fp, left=None, right=None, period=None):
        """Linear interpolation of ``fp`` over ``xp`` at ``x``, as ``numpy.interp``.

        Raises
        ------
        ValueError
            ``xp`` empty, or ``xp`` and ``fp`` of different lengths or not 1-D.
        NotImplementedError
            ``period``.
        """
        if period is not None:
            raise NotImplementedError("interp with a period is not supported")
        points = self._as_dtype(self._as_tensor(x), F64)
        samples = self._contiguous(self._as_dtype(self._as_tensor(xp), F64))
        values = self._contiguous(self._as_dtype(self._as_tensor(fp), F64))
        if samples.ndim != 1 or values.ndim != 1:
            raise ValueError("object too deep for desired array")
        if samples.size != values.size:
            raise ValueError("fp and xp are not of the same length.")
        if samples.size == 0:
            raise ValueError("array of sample points is empty")
        n = samples.size
        first, last = samples[:1], samples[n - 1:]
        below = values[:1] if left is None else left
        above = values[n - 1:] if right is None else right
        if n == 1:
            inside = values[:1]
        else:
            inside = self._between(points, samples, values)
        result = self.where(self.less(points, first), below,
                            self.where(self.greater(points, last), above, inside))
        return self.evaluate(self.where(self.isnan(points), np.nan, result))

    def _between(self, points, samples, values):
        """Op-tree: the interpolation between the two samples around each point."""
        n = samples.size
        place = self.clip(self.searchsorted(samples, points, side="right") - 1, 0, n - 2)
        place = self.evaluate(place)
        x0, x1 = self.take(samples, place, mode="clip"), self.take(samples, place + 1, mode="clip")
        f0, f1 = self.take(values, place, mode="clip"), self.take(values, place + 1, mode="clip")
        slope = (f1 - f0) / (x1 - x0)
        value = slope * (points - x0) + f0
        # numpy's fall-backs where the slope is not finite
        value = self.where(self.isnan(value), slope * (points - x1) + f1, value)
        value = self.where(self.logical_and(self.isnan(value), self.equal(f0, f1)), f0, value)
        return self.where(self.equal(points, x1), f1, self.where(self.equal(points, x0), f0, value))
