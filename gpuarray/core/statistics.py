"""numpy's descriptive statistics built on the fused reductions: ``average``,
``cov``, ``corrcoef``, ``trapezoid``, ``ediff1d``.

In: tensors, op-trees or array_likes of one factory and numpy's arguments.
Out: new tensors (``average`` keeps the reduced axes by default, as every
reduction of this library; the others have numpy's shapes), numpy's dtypes
(float64 for integers; ``cov`` and ``corrcoef`` at least float64) and
errors.  ``cov`` sums the outer products of the centred rows in one fused
reduction (O(p**2 * N) work, no matrix product, so every dtype works);
``fweights`` and ``aweights`` are not supported (NotImplementedError).
Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

from . import dtypes, shapes

F64 = np.dtype(np.float64)


class StatisticsFunctions:
    """Mixin: ``average``, ``cov``, ``corrcoef``, ``trapezoid``, ``ediff1d``."""

    def average(self, a, axis=None, weights=None, returned=False, *, keepdims=False):
        """The weighted mean over ``axis``, as ``numpy.average``.

        Parameters
        ----------
        a : array_like
        axis : None, int or tuple of ints
        weights : array_like, optional
            Of ``a``'s shape, or 1-D along a single ``axis``.
        returned : bool
            Also return the sum of the weights.
        keepdims : bool
            Keep the reduced axes (default False, as numpy's).

        Raises
        ------
        TypeError
            Weights of another shape without an axis.
        ValueError
            Weights not matching the axis.
        ZeroDivisionError
            Weights summing to zero (read back).
        """
        x = self._as_tensor(a)
        if weights is None:
            mean = self.evaluate(self.mean(x, axis, keepdims))
            if not returned:
                return mean
            count = x.size // max(mean.size, 1)
            return mean, self.full(mean.shape, count, mean.dtype)
        w = self._as_tensor(weights)
        kind = np.result_type(x.dtype, w.dtype, *(() if dtypes.is_inexact(x.dtype) else (F64,)))
        w = self._aligned_weights(x, w, axis)
        total = self.evaluate(self.astype(self.sum(w, axis, keepdims=True), kind))
        if not bool(self.evaluate(self.all(self.not_equal(total, 0), axis=None,
                                           keepdims=False)).get()):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        mean = self.sum(self.astype(x, kind) * w, axis, keepdims=True) / total
        shape = mean.shape if keepdims else _dropped(x.shape, axis)
        result = self.evaluate(mean).reshape(shape)
        return (result, self.evaluate(self.broadcast_to(total, mean.shape)).reshape(shape)) \
            if returned else result

    def cov(self, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
            *, dtype=None):
        """The covariance matrix of the variables in the rows of ``m`` (and ``y``),
        as ``numpy.cov``; a single variable gives a 0-d result.

        Raises
        ------
        ValueError
            More than two dimensions.
        NotImplementedError
            ``fweights`` or ``aweights``.
        """
        if fweights is not None or aweights is not None:
            raise NotImplementedError("cov with fweights or aweights is not supported")
        rows = self._variables(m, rowvar)
        if y is not None:
            rows = self.concatenate([rows, self._variables(y, rowvar)], axis=0)
        kind = np.result_type(rows.dtype, F64) if dtype is None else dtypes.as_dtype(dtype)
        ddof = (0 if bias else 1) if ddof is None else ddof
        samples = rows.shape[1]
        centred = self.astype(rows, kind) - self.mean(self.astype(rows, kind), axis=1,
                                                      keepdims=True)
        centred = self.evaluate(centred)
        products = self.sum(centred[:, None, :] * centred[None, :, :], axis=2, keepdims=False)
        result = self.evaluate(self.astype(products / max(samples - ddof, 0), kind))
        return result.reshape(()) if result.shape == (1, 1) else result

    def corrcoef(self, x, y=None, rowvar=True, *, dtype=None):
        """Pearson correlation coefficients, as ``numpy.corrcoef`` (clipped to [-1, 1])."""
        c = self.cov(x, y, rowvar, dtype=dtype)
        if c.ndim == 0:
            return self.evaluate(c / c)
        scale = self.evaluate(self.sqrt(self.diagonal(c)))
        r = c / scale[:, None] / scale[None, :]
        return self.evaluate(self.clip(r, -1, 1))

    def trapezoid(self, y, x=None, dx=1.0, axis=-1):
        """The integral of ``y`` along ``axis`` by the trapezoidal rule, as
        ``numpy.trapezoid`` (``x`` 1-D or of ``y``'s shape; else the spacing ``dx``)."""
        values = self._as_tensor(y)
        axis = shapes.normalize_axis(axis, values.ndim)
        moved = self.moveaxis(values, axis, -1)
        if x is None:
            step = dx
        else:
            points = self._as_tensor(x)
            points = self.moveaxis(points, axis, -1) if points.ndim > 1 else points
            step = points[..., 1:] - points[..., :-1]
        area = self.sum(step * (moved[..., 1:] + moved[..., :-1]) / 2.0, axis=-1, keepdims=False)
        return self.evaluate(area)

    def ediff1d(self, ary, to_end=None, to_begin=None):
        """Differences of the flattened array, with values before and after
        (``numpy.ediff1d``)."""
        flat = self._contiguous(self._as_tensor(ary)).reshape(-1)
        parts = [] if to_begin is None else [self._flat_part(to_begin, flat.dtype)]
        parts.append(self.evaluate(flat[1:] - flat[:-1]))
        if to_end is not None:
            parts.append(self._flat_part(to_end, flat.dtype))
        return self.concatenate(parts) if len(parts) > 1 else parts[0]

    def _flat_part(self, values, dtype):
        if not np.ndim(values):
            return self.full((1,), values, dtype)
        return self.evaluate(self.astype(self._as_tensor(values), dtype)).reshape(-1)

    def _variables(self, m, rowvar):
        """The variables of ``m`` as the rows of a 2-D tensor (numpy's reading)."""
        data = self._as_tensor(m)
        if data.ndim > 2:
            raise ValueError("m has more than 2 dimensions")
        data = data.reshape(1, -1) if data.ndim < 2 else data
        return data if rowvar or data.shape[0] == 1 and data.ndim == 1 else data.T

    def _aligned_weights(self, x, w, axis):
        """``w`` broadcast against ``x`` as numpy's ``average`` reads it."""
        if w.shape == x.shape:
            return w
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = shapes.normalize_axes(axis if isinstance(axis, tuple) else (axis,), x.ndim)
        if w.shape != tuple(x.shape[d] for d in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        shape = [1] * x.ndim
        for d, n in zip(axes, w.shape):
            shape[d] = n
        return w.reshape(shape)


def _dropped(shape, axis):
    """``shape`` without the reduced axes (all for None)."""
    if axis is None:
        return ()
    axes = shapes.normalize_axes(axis if isinstance(axis, tuple) else (axis,), len(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)
