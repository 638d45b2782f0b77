"""numpy's reductions that ignore NaN, and count_nonzero: nansum, nanprod,
nanmean, nanvar, nanstd, nanmax, nanmin, nanargmax, nanargmin.

In: a tensor, op-tree or scalar of one factory and numpy's ``axis`` (None,
an int or a tuple), ``keepdims``, ``ddof`` and ``out``.  Out: a lazy
op-tree -- each NaN replaced inside the tree by the reduction's identity
(``where(isnan(a), 0, a)``), then the library's fused reductions -- or
``out`` evaluated.  The one exception is ``nanargmax``/``nanargmin``,
which read one bool back to raise numpy's ValueError for an all-NaN slice
(numpy's answer depends on the data).

As every reduction of this library (:mod:`gpuarray.core.functions`), these
drop the reduced axes unless ``keepdims=True`` is asked for, as numpy's.
Dtypes are numpy's: integer and bool inputs (which hold no NaN) give what
the plain reductions give (``nanmean`` of integers is float64), fp16/bf16
results stay fp16/bf16, ``count_nonzero`` counts in int64.  An all-NaN
slice gives NaN for ``nanmean``, ``nanvar``, ``nanstd``, ``nanmax`` and
``nanmin``, 0 for ``nansum`` and 1 for ``nanprod``; ``nanvar`` gives NaN
where ``ddof`` leaves no degrees of freedom.  Mixed into both factories
through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

from . import dtypes, shapes


class NanReductionFunctions:
    """Mixin: numpy's NaN-ignoring reductions and ``count_nonzero``."""

    def nansum(self, a, axis=None, keepdims=False, out=None):
        """Sum over ``axis``, NaN taken as 0, as ``numpy.nansum``.

        Parameters
        ----------
        a : array_like
            Input.
        axis : None, int or tuple of ints
            Axes to reduce (None: all).
        keepdims : bool
            Keep the reduced axes with length one (default False, as numpy's).
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy; 0 for an all-NaN or empty slice.

        Raises
        ------
        numpy.exceptions.AxisError
            An axis out of range.
        """
        return self.sum(self._nan_to(a, 0), axis, keepdims, out)

    def nanprod(self, a, axis=None, keepdims=False, out=None):
        """Product over ``axis``, NaN taken as 1, as ``numpy.nanprod``.

        Parameters and errors as :meth:`nansum`'s; 1 for an all-NaN slice.
        """
        return self.prod(self._nan_to(a, 1), axis, keepdims, out)

    def nanmean(self, a, axis=None, keepdims=False, out=None):
        """Mean of the non-NaN values over ``axis``, as ``numpy.nanmean``.

        Parameters and errors as :meth:`nansum`'s.

        Returns
        -------
        Expression
            Lazy; NaN for an all-NaN slice, float64 for integer input.
        """
        x = self.operand(a)
        if not dtypes.is_inexact(x.dtype):
            return self.mean(x, axis, keepdims, out)
        total, count = self.sum(self._nan_to(x, 0), axis, keepdims=True), self._not_nan_count(x, axis)
        return self._reduced(self.astype(total / count, x.dtype), x, axis, keepdims, out)

    def nanvar(self, a, axis=None, keepdims=False, out=None, ddof=0):
        """Variance of the non-NaN values over ``axis``, as ``numpy.nanvar``.

        Parameters
        ----------
        a, axis, keepdims, out
            As :meth:`nansum`'s.
        ddof : int or float
            Delta degrees of freedom: the divisor is (non-NaN count - ddof).

        Returns
        -------
        Expression
            Lazy; NaN for an all-NaN slice or where ``ddof`` leaves no
            degrees of freedom; integer input gives ``var``'s result.
        """
        x = self.operand(a)
        if not dtypes.is_inexact(x.dtype):
            return self.var(x, axis, keepdims, out, ddof)
        return self._reduced(self._nan_variance(x, axis, ddof), x, axis, keepdims, out)

    def nanstd(self, a, axis=None, keepdims=False, out=None, ddof=0):
        """Standard deviation of the non-NaN values, as ``numpy.nanstd``.

        Parameters, result and errors as :meth:`nanvar`'s (its square root).
        """
        x = self.operand(a)
        if not dtypes.is_inexact(x.dtype):
            return self.std(x, axis, keepdims, out, ddof)
        node = self.sqrt(self._nan_variance(x, axis, ddof))
        return self._reduced(node, x, axis, keepdims, out)

    def nanmax(self, a, axis=None, keepdims=False, out=None):
        """Maximum over ``axis`` ignoring NaN, as ``numpy.nanmax``.

        Parameters as :meth:`nansum`'s.

        Returns
        -------
        Expression
            Lazy; NaN for an all-NaN slice.

        Raises
        ------
        ValueError
            An empty slice (numpy's ``fmax`` message).
        numpy.exceptions.AxisError
            An axis out of range.
        """
        return self._nan_extreme("max", a, axis, keepdims, out)

    def nanmin(self, a, axis=None, keepdims=False, out=None):
        """Minimum over ``axis`` ignoring NaN, as ``numpy.nanmin``.

        Parameters, result and errors as :meth:`nanmax`'s (``fmin``).
        """
        return self._nan_extreme("min", a, axis, keepdims, out)

    def nanargmax(self, a, axis=None, keepdims=False, out=None):
        """Index of the first maximum ignoring NaN, as ``numpy.nanargmax``.

        Parameters
        ----------
        a, keepdims, out
            As :meth:`nansum`'s.
        axis : None or int
            The axis (None: the flat index).

        Returns
        -------
        Expression
            Lazy int64 indices (NaN counts as -inf, as numpy replaces it).

        Raises
        ------
        ValueError
            An all-NaN slice (found by one host read of a bool), or an
            empty one.
        TypeError
            A tuple ``axis``.
        numpy.exceptions.AxisError
            An axis out of range.
        """
        return self._nan_arg("argmax", -np.inf, a, axis, keepdims, out)

    def nanargmin(self, a, axis=None, keepdims=False, out=None):
        """Index of the first minimum ignoring NaN, as ``numpy.nanargmin``.

        Parameters, result and errors as :meth:`nanargmax`'s (NaN counts as +inf).
        """
        return self._nan_arg("argmin", np.inf, a, axis, keepdims, out)

    def count_nonzero(self, a, axis=None, keepdims=False, out=None):
        """Number of nonzero elements over ``axis``, as ``numpy.count_nonzero``.

        Parameters as :meth:`nansum`'s (NaN is nonzero).

        Returns
        -------
        Expression
            Lazy int64 counts (numpy's intp); with ``axis=None`` and
            ``keepdims=False`` a 0-d result where numpy gives a Python int.
        """
        x = self.operand(a)
        return self.sum(self.not_equal(x, 0), axis, keepdims, out)

    # -- helpers --------------------------------------------------------
    def _nan_to(self, a, value):
        """``a`` with NaN replaced by ``value`` (lazy); non-floats hold no NaN."""
        x = self.operand(a)
        if not dtypes.is_inexact(x.dtype):
            return x
        return self.where(self.isnan(x), value, x)

    def _not_nan_count(self, x, axis):
        """Non-NaN elements over ``axis`` (keepdims), in the dtype ``x`` is computed in."""
        count = self.sum(self.logical_not(self.isnan(x)), axis, keepdims=True)
        return self.astype(count, _compute_float(x.dtype))

    def _nan_variance(self, x, axis, ddof):
        """numpy's nanvar of a float operand, keepdims, in ``x``'s dtype."""
        missing = self.isnan(x)
        count = self._not_nan_count(x, axis)
        mean = self.sum(self.where(missing, 0, x), axis, keepdims=True) / count
        centred = self.where(missing, 0, self.subtract(x, mean))
        dof = count - ddof
        squares = self.sum(centred * centred, axis, keepdims=True)
        return self.astype(self.where(dof <= 0, np.nan, squares / dof), x.dtype)

    def _nan_extreme(self, name, a, axis, keepdims, out):
        """nanmax / nanmin: NaN replaced by the identity, NaN for all-NaN slices."""
        x = self.operand(a)
        axes = shapes.reduction_axes(axis, x.ndim)
        if any(x.shape[i] == 0 for i in axes):
            what = "fmax" if name == "max" else "fmin"
            raise ValueError(f"zero-size array to reduction operation {what} which has no identity")
        if not dtypes.is_inexact(x.dtype):
            return getattr(self, name)(x, axis, keepdims, out)
        missing = self.isnan(x)
        identity = -np.inf if name == "max" else np.inf
        extreme = getattr(self, name)(self.where(missing, identity, x), axis, keepdims=True)
        node = self.where(self.all(missing, axis, keepdims=True), np.nan, extreme)
        return self._reduced(node, x, axis, keepdims, out)

    def _nan_arg(self, name, identity, a, axis, keepdims, out):
        """nanargmax / nanargmin: numpy's replacement of NaN, and its error."""
        x = self.operand(a)
        if not dtypes.is_inexact(x.dtype):
            return getattr(self, name)(x, axis, keepdims, out)
        missing = self.isnan(x)
        node = getattr(self, name)(self.where(missing, identity, x), axis, keepdims)
        if 0 not in x.shape and self._any_true(self.all(missing, axis)):
            raise ValueError("All-NaN slice encountered")
        return self._finish(node, out, "unsafe")

    def _any_true(self, condition):
        """Whether any element of a bool tree is true: one kernel and a host read."""
        return bool(self.evaluate(self.any(condition)).get().any())

    def _reduced(self, node, x, axis, keepdims, out):
        """A keepdims reduction tree with numpy's ``keepdims`` and ``out=`` applied."""
        return self._finish(self._keepdims(node, x, axis, keepdims), out, "unsafe")


def _compute_float(dtype):
    """The float dtype ``dtype``'s values are computed in (fp32 for fp16/bf16)."""
    return np.dtype(np.float32) if dtypes.is_low_precision(dtype) else np.dtype(dtype)
