"""Order statistics: ``quantile``, ``percentile``, ``median`` and their NaN-ignoring forms.

In: a tensor, op-tree or array_like of one factory, quantiles (a host
scalar or array; percentiles for ``percentile``), numpy's ``axis`` (None,
an int or a tuple), ``method``, ``keepdims`` and ``out``.  Out: a new
tensor (or ``out``) of shape ``q.shape`` + the reduced shape, of numpy's
dtype: the input's for the methods that pick an element ("lower",
"higher", "nearest"), else float64 for integer and bool input or a
``q`` given as an array, else the float input's own.  The reduced axes
are dropped unless ``keepdims=True``, as numpy's.

How: the reduced axes are moved last and merged, each row is sorted once
(:mod:`.sorting`: NaN last), and each quantile is read off the sorted rows
as numpy reads it -- the virtual index ``q * (n - 1)`` (numpy's formula),
the two neighbours around it, and numpy's interpolation in the result
dtype -- in one fused kernel per quantile.  A row holding a NaN
gives NaN.  The NaN-ignoring forms count each row's non-NaN values (the
sorted prefix) and gather the neighbours at per-row positions.  Methods:
"linear" (the default), "lower", "higher", "nearest", "midpoint".
"""
import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..core import dtypes

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
_NUMPY_ONLY = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
               "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
               "normal_unbiased")


class OrderStatisticFunctions:
    """Mixin: ``quantile``, ``percentile``, ``median``, ``nanquantile``,
    ``nanpercentile``, ``nanmedian``."""

    def quantile(self, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False):
        """The ``q``-th quantiles of ``a`` over ``axis``, as ``numpy.quantile``.

        Parameters
        ----------
        a : array_like
        q : float or array_like of float
            In [0, 1] (host values).
        axis : None, int or tuple of ints
            Axes to reduce (None: all).
        out : Tensor, optional
            Receives the result.
        overwrite_input : bool
            Accepted; the input is never modified.
        method : {"linear", "lower", "higher", "nearest", "midpoint"}
        keepdims : bool
            Keep the reduced axes with length one (default False, as numpy's).

        Returns
        -------
        Tensor

        Raises
        ------
        ValueError
            A quantile outside [0, 1] or an unknown method.
        NotImplementedError
            One of numpy's other methods ("hazen", "weibull"...).
        """
        return self._order_statistic(a, _quantiles(q, 1, "Quantiles"), axis, out, method,
                                     keepdims, False, _strong(q))

    def percentile(self, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                   keepdims=False):
        """As :meth:`quantile` with ``q`` in percent (``numpy.percentile``)."""
        return self._order_statistic(a, _quantiles(q, 100, "Percentiles"), axis, out, method,
                                     keepdims, False, _strong(q))

    def median(self, a, axis=None, out=None, overwrite_input=False, keepdims=False):
        """The median over ``axis`` (``numpy.median``; see :meth:`quantile`)."""
        return self._order_statistic(a, np.float64(0.5), axis, out, "linear", keepdims, False,
                                     False)

    def nanquantile(self, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                    keepdims=False):
        """As :meth:`quantile`, ignoring NaN (``numpy.nanquantile``); NaN for an all-NaN slice."""
        return self._order_statistic(a, _quantiles(q, 1, "Quantiles"), axis, out, method,
                                     keepdims, True, _strong(q))

    def nanpercentile(self, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                      keepdims=False):
        """As :meth:`percentile`, ignoring NaN (``numpy.nanpercentile``)."""
        return self._order_statistic(a, _quantiles(q, 100, "Percentiles"), axis, out, method,
                                     keepdims, True, _strong(q))

    def nanmedian(self, a, axis=None, out=None, overwrite_input=False, keepdims=False):
        """As :meth:`median`, ignoring NaN (``numpy.nanmedian``)."""
        return self._order_statistic(a, np.float64(0.5), axis, out, "linear", keepdims, True,
                                     False)

    def _order_statistic(self, a, qs, axis, out, method, keepdims, ignore_nan, strong_q):
        _check_method(method)
        x = self._as_tensor(a)
        axes = tuple(range(x.ndim)) if axis is None else normalize_axis_tuple(axis, x.ndim)
        kept = tuple(d for d in range(x.ndim) if d not in axes)
        rows_shape = tuple(x.shape[d] for d in kept)
        length = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
        if length == 0:
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        rows = self._contiguous(self.permute_dims(x, kept + axes)).reshape(rows_shape + (length,))
        ordered = self.sort(rows, axis=-1)
        result_dtype = _result_dtype(x.dtype, method, strong_q)
        reduced = tuple(1 if d in axes else n for d, n in enumerate(x.shape)) if keepdims \
            else rows_shape
        result = self.empty(qs.shape + reduced, result_dtype)
        flat = result.reshape((qs.size,) + rows_shape)
        for k, q in enumerate(qs.reshape(-1)):
            value = (self._nan_quantile(ordered, float(q), method, result_dtype) if ignore_nan
                     else self._quantile_of_sorted(ordered, float(q), method, result_dtype))
            flat[k] = value
        return result if out is None else self._finish(result, out)

    def _quantile_of_sorted(self, ordered, q, method, dtype):
        """Op-tree: quantile ``q`` of rows sorted along the last axis (all the same length)."""
        n = ordered.shape[-1]
        lo, hi, gamma = _neighbours(n, q, method)
        if gamma is not None:  # numpy rounds the weight to the result dtype first
            gamma = np.asarray(gamma, dtype)
            gamma = (float(gamma), float(np.asarray(1, dtype) - gamma))
        value = _lerp(self, ordered[..., lo], ordered[..., hi], gamma, dtype)
        if dtypes.kind(ordered.dtype) == "f":
            value = self.where(self.isnan(ordered[..., n - 1]), np.nan, value)
        return value

    def _nan_quantile(self, ordered, q, method, dtype):
        """Op-tree: quantile ``q`` of each row's non-NaN prefix (NaNs sort last)."""
        if dtypes.kind(ordered.dtype) != "f":
            return self._quantile_of_sorted(ordered, q, method, dtype)
        counts = self.evaluate(self.sum(self.logical_not(self.isnan(ordered)), axis=-1,
                                        keepdims=True))
        virtual = self.evaluate(_virtual_index(self.astype(counts, F64), q))
        floor = self.floor(virtual)
        first = {"higher": self.ceil(virtual), "nearest": self.rint(virtual)}.get(method, floor)
        below = self._pick_along(ordered, first, counts)
        if method in ("lower", "higher", "nearest"):
            value = self.astype(below, dtype)
        else:
            above = self._pick_along(ordered, floor + 1, counts)
            row = virtual[..., 0]
            gamma = row - self.floor(row) if method == "linear" else \
                self.where(row == self.floor(row), 0.0, 0.5)
            value = _lerp(self, below, above, self.astype(gamma, dtype), dtype)
        return self.where(counts[..., 0] == 0, np.nan, value)

    def _pick_along(self, ordered, position, counts):
        """``ordered[..., p]`` per row, ``p`` the float op-tree ``position`` clamped to
        the row's ``counts`` values."""
        index = self.evaluate(self.maximum(self.minimum(self.astype(position, I64), counts - 1),
                                           0))
        picked = self.empty(index.shape, ordered.dtype)
        rows, n = index.size, ordered.shape[-1]
        self._gather(ordered, index, picked, (rows, 1, n, 1), (1, 0, 0), -1, None, False)
        return picked[..., 0]


def _quantiles(q, scale, what):
    """Host quantiles in [0, 1] (float64), with numpy's range error."""
    qs = np.asarray(q, dtype=np.float64)
    fractions = qs / scale if scale != 1 else qs
    if not np.all((fractions >= 0) & (fractions <= 1)):
        raise ValueError(f"{what} must be in the range [0, {scale}]")
    return fractions


def _strong(q):
    """Whether numpy promotes with ``q``'s float64 (an array or numpy scalar; a
    Python number is weak and leaves float32 input float32)."""
    return type(q) not in (int, float)


def _result_dtype(dtype, method, strong_q):
    """numpy's result dtype: the input's for the methods that pick an element,
    else float64 for integers and bool, the float input's own unless ``q`` is strong."""
    if method in ("lower", "higher", "nearest"):
        return dtype
    if not dtypes.is_float(dtype) or strong_q:
        return F64
    return dtype


def _check_method(method):
    if method in _NUMPY_ONLY:
        raise NotImplementedError(f"method {method!r} is not supported; use one of {_METHODS}")
    if method not in _METHODS:
        raise ValueError(f"'{method}' is not a valid method. Use one of: "
                         f"{_METHODS + _NUMPY_ONLY}")


def _virtual_index(n, q):
    """numpy's virtual index of quantile ``q`` among ``n`` sorted values (its formula
    for the five methods here)."""
    return (n - 1) * q


def _neighbours(n, q, method):
    """Static positions below and above quantile ``q`` of ``n`` sorted values, and
    the interpolation weight (None: take the lower one)."""
    virtual = _virtual_index(float(n), q)
    lower = min(max(int(np.floor(virtual)), 0), n - 1)
    upper = min(lower + 1, n - 1)
    if method == "lower":
        return lower, lower, None
    if method == "higher":
        ceiling = min(max(int(np.ceil(virtual)), 0), n - 1)
        return ceiling, ceiling, None
    if method == "nearest":
        nearest = min(max(int(np.around(virtual)), 0), n - 1)
        return nearest, nearest, None
    if method == "midpoint":
        return lower, upper, 0.0 if virtual == np.floor(virtual) else 0.5
    return lower, upper, virtual - np.floor(virtual)


def _lerp(ng, below, above, gamma, dtype):
    """numpy's ``_lerp`` into ``dtype``: from the nearer end, so a weight of 1 gives
    ``above`` exactly; a float input's difference is taken in its own dtype, as
    numpy's (integers are converted first)."""
    if not dtypes.is_float(below.dtype):
        below, above = ng.astype(below, dtype), ng.astype(above, dtype)
    if gamma is None:
        return ng.astype(below, dtype)
    diff = ng.astype(above - below, dtype)
    below, above = ng.astype(below, dtype), ng.astype(above, dtype)
    if isinstance(gamma, tuple):  # a host weight and its complement, rounded as numpy's
        weight, complement = gamma
        return above - diff * complement if weight >= 0.5 else below + diff * weight
    return ng.where(gamma >= 0.5, above - diff * (1 - gamma), below + diff * gamma)
