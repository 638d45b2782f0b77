"""Counting: ``bincount``, ``histogram``, ``histogram2d``, ``histogramdd``,
``histogram_bin_edges``, ``digitize``.

In: tensors, op-trees or array_likes of one factory; numpy's ``weights``,
``minlength``, ``bins`` (a count or monotonic edges), ``range``,
``density`` and ``right``.  Out: new tensors -- int64 counts, or float64
sums of weights -- with numpy's values and errors.

How: ``bincount`` reads the smallest and largest value back (the result's
length depends on them, and numpy refuses negative values), then counts
with 64-bit integer atomics (exact, whatever the threads' order); with
weights it sorts the values, carrying their positions, and sums the
weights over runs of equal values with CUB's reduce-by-key, so the sums
do not depend on the GPU's scheduling either.  ``histogram`` computes
numpy's edges on the host (the range read back where it is not given);
one kernel then places each value with a binary search among the edges --
the last edge closes the last bin, as in numpy -- and counts the bins in
shared memory; with weights, the values' bins come from ``searchsorted``
and the sums from the weighted ``bincount``.
"""
import builtins
import operator

import numpy as np

from ..core import dtypes

I64 = np.dtype(np.int64)
F64 = np.dtype(np.float64)
#: the builtin, which ``histogram``'s numpy-named ``range`` argument shadows
builtins_range = builtins.range


class CountingFunctions:
    """Mixin: ``bincount``, ``histogram``, ``histogram2d``, ``histogramdd``,
    ``histogram_bin_edges``, ``digitize``."""

    def bincount(self, x, weights=None, minlength=0):
        """Occurrences of each value of the non-negative ints ``x``, as ``numpy.bincount``.

        Parameters
        ----------
        x : array_like of int
            1-D, non-negative.
        weights : array_like, optional
            Of ``x``'s length: each occurrence counts its weight (float64 sums).
        minlength : int
            The least length of the result.

        Returns
        -------
        Tensor
            int64 counts, or float64 sums, of length ``max(x.max() + 1, minlength)``.

        Raises
        ------
        ValueError
            ``x`` not 1-D, a negative value, a negative ``minlength``, or
            weights of another length.
        TypeError
            ``x`` not of an integer (or bool) dtype.
        """
        index = self._as_tensor(x)
        if index.ndim != 1:
            raise ValueError("object too deep for desired array")
        if dtypes.kind(index.dtype) not in "iub":
            raise TypeError(f"Cannot cast array data from {index.dtype!r} to dtype('int64') "
                            "according to the rule 'safe'")
        minlength = operator.index(minlength)
        if minlength < 0:
            raise ValueError("'minlength' must not be negative")
        length = minlength
        if index.size:
            lowest, highest = (int(v) for v in self._extremes(index))
            if lowest < 0:
                raise ValueError("'list' argument must have no negative elements")
            length = max(highest + 1, minlength)
        index = self._contiguous(self._as_index(index))
        if weights is None:
            counts = self.zeros((length,), I64)
            if index.size:
                self._algorithm("count_bins", index, counts)
            return counts
        weight = self._as_tensor(weights)
        if weight.shape != index.shape:
            raise ValueError("The weights and list don't have the same length.")
        return self._weighted_bins(index, weight, length)

    def _weighted_bins(self, index, weight, length):
        """float64 sums of ``weight`` per value of ``index`` (valid, non-negative)."""
        sums = self.zeros((length,), F64)
        if not index.size:
            return sums
        n = index.size
        positions = self.empty((n,), I64)
        self._algorithm("sort_rows", index, n, False, None, positions)
        ordered = self._pick(index, positions)
        weights = self._pick(self._contiguous(self._as_dtype(weight, F64)), positions)
        keys, totals = self._algorithm("sum_runs", ordered, weights)
        self._algorithm("scatter", totals, keys, sums)
        return sums

    def _extremes(self, x):
        """The smallest and largest value of ``x`` as numpy scalars of its dtype
        (read back: one wait for the device)."""
        both = self.empty((2,), x.dtype)
        both[0] = self.min(x, axis=None, keepdims=False)
        both[1] = self.max(x, axis=None, keepdims=False)
        lowest, highest = both.get()
        return lowest, highest

    def histogram(self, a, bins=10, range=None, density=None, weights=None):
        """The histogram of ``a``, as ``numpy.histogram``.

        Parameters
        ----------
        a : array_like
            Flattened.
        bins : int or array_like
            A number of equal bins over ``range``, or the edges (increasing).
            numpy's string estimators ("auto"...) raise NotImplementedError.
        range : (float, float), optional
            Of the equal bins; default: ``a``'s smallest and largest values.
        density : bool, optional
            Divide by the total and the bins' widths.
        weights : array_like, optional
            Of ``a``'s shape: each value counts its weight.

        Returns
        -------
        (Tensor, Tensor)
            The counts (int64; float64 with weights or density) and the edges.

        Raises
        ------
        ValueError
            Non-positive ``bins``, edges not increasing, an empty or infinite
            range, or weights of another shape.
        """
        x = self._as_tensor(a)
        edges = self._edges(x, bins, range)
        if weights is not None:
            weight = self._as_tensor(weights)
            if weight.shape != x.shape:
                raise ValueError("weights should have the same shape as a.")
            weight = self._contiguous(weight).reshape(-1)
        else:
            weight = None
        flat = self._contiguous(x).reshape(-1)
        nbins = edges.size - 1
        counts = self._bin_counts(flat, self.array(edges), nbins, weight)
        if density:
            widths = np.diff(edges).astype(F64)
            total = self.evaluate(self.sum(counts, axis=None, keepdims=False))
            counts = self.evaluate(self.astype(counts, F64) / total / self.array(widths))
        return counts, self.array(edges)

    def histogramdd(self, sample, bins=10, range=None, density=None, weights=None):
        """The D-dimensional histogram of ``sample`` (N, D) or of D arrays, as
        ``numpy.histogramdd``: float64 counts and the list of edges per dimension.

        Each value's bin per dimension comes from a binary search among that
        dimension's edges (the last edge closing the last bin); the bins
        combine into one flat index counted by ``bincount``, outliers in an
        extra bin at each end that is cut away.
        """
        columns = self._sample_columns(sample)
        count = len(columns)
        bins = list(bins) if isinstance(bins, (list, tuple)) or np.ndim(bins) else [bins] * count
        ranges = [None] * count if range is None else list(range)
        if len(bins) != count:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
        edges = [self._dd_edges(column, b, r, axis)
                 for axis, (column, b, r) in enumerate(zip(columns, bins, ranges))]
        sides = tuple(e.size + 1 for e in edges)
        places = []
        for column, edge in zip(columns, edges):
            where = self.searchsorted(edge, column, side="right")
            places.append(self.evaluate(self.where(self.equal(column, float(edge[-1])),
                                                   where - 1, where)))
        flat = self.ravel_multi_index(tuple(places), sides)
        total = int(np.prod(sides, dtype=np.int64))
        if weights is None:
            counts = self.bincount(flat, minlength=total)
        else:
            counts = self.bincount(flat, self._contiguous(self._as_tensor(weights))
                                   .reshape(-1), minlength=total)
        core = tuple(slice(1, -1) for _ in sides)
        hist = self.evaluate(self.astype(counts.reshape(sides)[core], F64))
        if density:
            hist = self._density(hist, edges)
        return hist, [self.array(e) for e in edges]

    def histogram2d(self, x, y, bins=10, range=None, density=None, weights=None):
        """The 2-D histogram of the points (x, y), as ``numpy.histogram2d``:
        (counts, x edges, y edges)."""
        hist, edges = self.histogramdd([x, y], bins, range, density, weights)
        return hist, edges[0], edges[1]

    def _sample_columns(self, sample):
        """The D coordinates of the N points, as D flat contiguous tensors."""
        if isinstance(sample, (list, tuple)):
            return [self._contiguous(self._as_tensor(c)).reshape(-1) for c in sample]
        points = self._as_tensor(sample)
        points = points.reshape(-1, 1) if points.ndim == 1 else points
        return [self._contiguous(points[:, d]) for d in builtins_range(points.shape[1])]

    def _dd_edges(self, column, bins, value_range, axis):
        """numpy's edges of one dimension of ``histogramdd``."""
        if np.ndim(bins) == 0:
            if bins < 1:
                raise ValueError(f"`bins[{axis}]` must be positive, when an integer")
            first, last = self._range(column, value_range)
            return np.linspace(first, last, operator.index(bins) + 1)
        if np.ndim(bins) != 1:
            raise ValueError(f"`bins[{axis}]` must be a scalar or 1d array")
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError(f"`bins[{axis}]` must be monotonically increasing, when an array")
        return edges

    def _density(self, hist, edges):
        """``hist`` divided by its total and each dimension's bin widths."""
        total = self.evaluate(self.sum(hist, axis=None, keepdims=False))
        for d, edge in enumerate(edges):
            shape = [1] * len(edges)
            shape[d] = edge.size - 1
            hist = hist / self.array(np.diff(edge).reshape(shape))
        return self.evaluate(hist / total)

    def histogram_bin_edges(self, a, bins=10, range=None, weights=None):
        """The edges :meth:`histogram` uses (``numpy.histogram_bin_edges``)."""
        return self.array(self._edges(self._as_tensor(a), bins, range))

    def digitize(self, x, bins, right=False):
        """The bin of each value of ``x``, as ``numpy.digitize`` (``bins`` monotonic, 1-D)."""
        edges = np.asarray(bins)
        if edges.ndim != 1:
            raise ValueError("object of too small depth for desired array" if edges.ndim == 0
                             else "object too deep for desired array")
        step = np.diff(edges)
        if not (np.all(step >= 0) or np.all(step <= 0)):
            raise ValueError("bins must be monotonically increasing or decreasing")
        side = "left" if right else "right"
        if edges.size and np.all(step <= 0) and not np.all(step >= 0):
            found = self.searchsorted(edges[::-1].copy(), x, side=side)
            return self.evaluate(edges.size - found)
        return self.searchsorted(edges, x, side=side)

    def _bin_counts(self, flat, edges, nbins, weight):
        """Counts (or weight sums) of ``flat``'s values in the bins between ``edges``."""
        if weight is None:
            counts = self.zeros((nbins,), I64)
            if flat.size:  # the 8-bit floats counted as float16 (exact; see _sortable)
                self._algorithm("histogram_counts", self._sortable(flat), self._as_dtype(edges, F64),
                                counts)
            return counts
        place = self.searchsorted(edges, flat, side="right")
        last = edges[-1:]
        values = self._as_dtype(flat, edges.dtype)
        # numpy: the last bin is closed; values outside the edges (and NaN) count nowhere
        place = self.where(self.equal(values, last), nbins, place) - 1
        inside = self.evaluate(self.logical_and(place >= 0, place < nbins))
        return self.bincount(self.evaluate(place)[inside], weight[inside], minlength=nbins)

    def _edges(self, x, bins, value_range):
        """numpy's bin edges (host float array) for ``x``, ``bins`` and ``range``."""
        if isinstance(bins, str):
            raise NotImplementedError(f"histogram bin estimators ({bins!r}) are not supported; "
                                      "pass a number of bins or the edges")
        if np.ndim(bins) == 1:
            edges = np.asarray(bins)
            if np.any(edges[:-1] > edges[1:]):
                raise ValueError("`bins` must increase monotonically, when an array")
            return edges
        if np.ndim(bins) != 0:
            raise ValueError("`bins` must be 1d, when an array")
        try:
            count = operator.index(bins)
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if count < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = self._range(x, value_range)
        kind = np.result_type(first, last, x.dtype if dtypes.kind(x.dtype) == "f" else F64)
        with np.errstate(over="ignore", invalid="ignore"):  # too many bins: raised below
            edges = np.linspace(first, last, count + 1, endpoint=True, dtype=kind)
        if np.any(edges[:-1] >= edges[1:]):
            raise ValueError(f"Too many bins for data range. Cannot create {count} "
                             "finite-sized bins.")
        return edges

    def _range(self, x, value_range):
        """numpy's range of the equal bins: given (checked), else the data's."""
        if value_range is not None:
            first, last = value_range
            if first > last:
                raise ValueError("max must be larger than min in range parameter.")
            if not (np.isfinite(first) and np.isfinite(last)):
                raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        elif x.size == 0:
            first, last = 0, 1
        else:
            first, last = self._extremes(x)  # numpy scalars: linspace computes in x's dtype
            if not (np.isfinite(first) and np.isfinite(last)):
                raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last
