"""Set functions: ``unique`` (numpy's), the array API's ``unique_*``, and
``isin``, ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``.

In: a tensor, op-tree or array_like of one factory.  Out: the sorted
distinct values of the flattened input (or the distinct slices along an
axis), and on request the position of each value's first occurrence, the
input's inverse (the value each element maps to, in the input's shape;
1-D along an axis) and the counts -- int64 tensors.

How: one stable sort of the flattened input (carrying positions when
first occurrences or the inverse are wanted); a flag where a sorted
element differs from the one before (NaNs equal one another with
``equal_nan``, as numpy's ``unique`` has it; the array API's ``unique_*``
keep every NaN distinct, as numpy's do); the flags' positions are the
groups' starts (the values, the first occurrences, and by differences the
counts); their running sum numbers each sorted element's group, which
the sort's positions scatter back into the inverse.  Along an axis, the
slices are flattened into rows and sorted lexicographically (``lexsort``:
a stable sort per column), and a row starts a group where any element
differs from the row before.  Membership
(``isin`` and the ``*1d`` functions built on it) sorts the test values
once and binary-searches each element among them.
"""
import operator
from collections import namedtuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core import dtypes

I64 = np.dtype(np.int64)

UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


class SetFunctions:
    """Mixin: ``unique``, ``unique_values``, ``unique_counts``, ``unique_inverse``,
    ``unique_all``, ``isin``, ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``."""

    def unique(self, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None, *, equal_nan=True, sorted=True):
        """The sorted distinct elements of ``ar``, as ``numpy.unique``.

        Parameters
        ----------
        ar : array_like
            Flattened.
        return_index, return_inverse, return_counts : bool
            Also return each value's first position, the inverse (``ar``'s
            shape) and the counts, in that order after the values.
        axis : int, optional
            The distinct sub-arrays along ``axis`` (sorted lexicographically,
            NaN last; a sub-array holding NaN equals no other, as in numpy);
            the inverse is then 1-D.
        equal_nan : bool
            Collapse NaNs into one value (numpy's default; flattened input only).
        sorted : bool
            Accepted; the values are sorted either way.

        Returns
        -------
        Tensor, or a tuple of tensors
        """
        x = self._as_tensor(ar)
        if axis is None:
            values, index, inverse, counts = self._unique(x, return_index, return_inverse,
                                                          return_counts, equal_nan)
        else:
            values, index, inverse, counts = self._unique_slices(x, axis)
        extra = [part for part, wanted in ((index, return_index), (inverse, return_inverse),
                                           (counts, return_counts)) if wanted]
        return (values, *extra) if extra else values

    def unique_values(self, x, /):
        """The array API's distinct values (every NaN distinct)."""
        return self._unique(self._as_tensor(x), False, False, False, False)[0]

    def unique_counts(self, x, /):
        """The array API's ``(values, counts)`` (every NaN distinct)."""
        values, _, _, counts = self._unique(self._as_tensor(x), False, False, True, False)
        return UniqueCountsResult(values, counts)

    def unique_inverse(self, x, /):
        """The array API's ``(values, inverse_indices)`` (every NaN distinct)."""
        values, _, inverse, _ = self._unique(self._as_tensor(x), False, True, False, False)
        return UniqueInverseResult(values, inverse)

    def unique_all(self, x, /):
        """The array API's ``(values, indices, inverse_indices, counts)``."""
        return UniqueAllResult(*self._unique(self._as_tensor(x), True, True, True, False))

    def isin(self, element, test_elements, assume_unique=False, invert=False, *, kind=None):
        """Whether each element of ``element`` is in ``test_elements``, as ``numpy.isin``.

        Parameters
        ----------
        element, test_elements : array_like
            The result has ``element``'s shape; ``test_elements`` is flattened.
        assume_unique, kind
            Accepted; the test elements are always sorted and searched.
        invert : bool
            Whether each element is *not* in ``test_elements``.

        Returns
        -------
        Tensor of bool
            NaN is in nothing (NaN != NaN); -0.0 is where 0.0 is.
        """
        x = self._as_tensor(element)
        found = self._found(x, self._as_tensor(test_elements))
        return self.evaluate(self.logical_not(found)) if invert else found

    def intersect1d(self, ar1, ar2, assume_unique=False, return_indices=False):
        """The sorted values in both ``ar1`` and ``ar2`` (``numpy.intersect1d``).

        With ``return_indices``, also the positions of their first
        occurrences in the flattened ``ar1`` and ``ar2``.
        """
        first, index1 = self._distinct(ar1, return_indices)
        second, index2 = self._distinct(ar2, return_indices)
        common = self._found(first, second)
        values = first[common]
        if not return_indices:
            return values
        where2 = self.searchsorted(second, values)
        return values, index1[common], self.take(index2, where2)

    def union1d(self, ar1, ar2):
        """The sorted values in either array (``numpy.union1d``)."""
        joined = self.concatenate([self._flat_of(ar1), self._flat_of(ar2)])
        return self.unique(joined)

    def setdiff1d(self, ar1, ar2, assume_unique=False):
        """The sorted values of ``ar1`` not in ``ar2`` (``numpy.setdiff1d``); with
        ``assume_unique``, ``ar1``'s values in their order."""
        first = self._flat_of(ar1) if assume_unique else self._distinct(ar1, False)[0]
        return first[self.isin(first, ar2, invert=True)]

    def setxor1d(self, ar1, ar2, assume_unique=False):
        """The sorted values in exactly one of the arrays (``numpy.setxor1d``)."""
        first, second = self._distinct(ar1, False)[0], self._distinct(ar2, False)[0]
        only = self.concatenate([first[self.isin(first, second, invert=True)],
                                 second[self.isin(second, first, invert=True)]])
        return self.sort(only)

    def _found(self, x, pool):
        """bool tensor: whether each element of ``x`` equals one of ``pool``'s."""
        if not pool.size or not x.size:
            return self.zeros(x.shape, np.bool_)
        haystack = self.sort(self._flat_of(pool))
        place = self.searchsorted(haystack, x)
        nearest = self.take(haystack, self.minimum(place, haystack.size - 1))
        return self.evaluate(self.equal(nearest, x))

    def _distinct(self, a, with_index):
        """The sorted distinct values of the flattened ``a`` (and their first positions)."""
        if with_index:
            return self.unique(self._as_tensor(a), return_index=True)
        return self.unique(self._as_tensor(a)), None

    def _flat_of(self, a):
        return self._contiguous(self._as_tensor(a)).reshape(-1)

    def _unique(self, x, want_index, want_inverse, want_counts, equal_nan):
        if x.dtype in dtypes.FLOAT8:  # sorted as float16 (see _sortable), exactly
            values, *rest = self._unique(self._sortable(x), want_index, want_inverse,
                                         want_counts, equal_nan)
            return (self.evaluate(self.astype(values, x.dtype)), *rest)
        flat, n = self._contiguous(x).reshape(-1), x.size
        if n == 0:
            empty = self.empty((0,), I64)
            return self.empty((0,), x.dtype), empty, self.empty(x.shape, I64), empty
        positions = self.empty((n,), I64) if want_index or want_inverse else None
        ordered = self.empty((n,), x.dtype)
        self._algorithm("sort_rows", flat, n, False, ordered, positions)
        starts_flag = self.empty((n,), np.bool_)
        starts_flag[:1] = True
        if n > 1:
            starts_flag[1:] = self._differs(ordered[1:], ordered[:-1], equal_nan)
        starts = self._flat_nonzero(starts_flag)
        values = self._pick(ordered, starts)
        index = self._pick(positions, starts) if want_index else None
        counts = self._counts(starts, n) if want_counts else None
        inverse = self._inverse(starts_flag, positions, x.shape) if want_inverse else None
        return values, index, inverse, counts

    def _unique_slices(self, x, axis):
        """``unique`` along ``axis``: a lexicographic sort of the slices (flattened
        into rows), then the rows that differ from the one before."""
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        moved = self.moveaxis(x, axis, 0)
        n, width = moved.shape[0], int(np.prod(moved.shape[1:], dtype=np.int64))
        rows = self._contiguous(moved).reshape(n, width)
        if n == 0:
            empty = self.empty((0,), I64)
            return x, empty, empty, empty
        order = self.lexsort([rows[:, c] for c in range(width - 1, -1, -1)]) if width else \
            self.arange(n, dtype=I64)
        ordered = self.take(rows, order, axis=0, mode="wrap")
        starts_flag = self.empty((n,), np.bool_)
        starts_flag[:1] = True
        if n > 1:
            starts_flag[1:] = self.any(self.not_equal(ordered[1:], ordered[:-1]), axis=1,
                                       keepdims=False) if width else False
        starts = self._flat_nonzero(starts_flag)
        values = self.take(ordered, starts, axis=0, mode="wrap").reshape(
            (starts.size,) + moved.shape[1:])
        values = self._contiguous(self.moveaxis(values, 0, axis))
        positions = self._contiguous(order)
        return (values, self._pick(positions, starts), self._inverse(starts_flag, positions, (n,)),
                self._counts(starts, n))

    def _differs(self, a, b, equal_nan):
        """Op-tree: ``a != b``, NaN equal to NaN with ``equal_nan``."""
        differs = self.not_equal(a, b)
        if equal_nan and dtypes.kind(a.dtype) == "f":
            both_nan = self.logical_and(self.isnan(a), self.isnan(b))
            differs = self.logical_and(differs, self.logical_not(both_nan))
        return differs

    def _pick(self, source, positions):
        """``source[positions]`` (positions known to be in range)."""
        result = self.empty((positions.size,), source.dtype)
        self._algorithm("gather", source, positions, result,
                        (1, positions.size, source.size, 1), (0, 1, 0), False)
        return result

    def _counts(self, starts, n):
        counts = self.empty((starts.size,), I64)
        counts[:-1] = starts[1:] - starts[:-1]
        counts[-1:] = n - starts[-1:]
        return counts

    def _inverse(self, starts_flag, positions, shape):
        """Each input element's group: the running count of group starts up to its
        sorted place, scattered to its original place."""
        n = starts_flag.size
        flags = self.empty((n,), I64)
        flags[:] = starts_flag
        group = self.empty((n,), I64)
        self._algorithm("running_sum", flags, group)
        group[:] = group - 1
        inverse = self.empty(shape, I64)
        self._algorithm("scatter", group, positions, inverse.reshape(-1))
        return inverse
