"""Sorting: ``sort``, ``argsort``, ``partition``, ``argpartition``, with numpy's and the
array API's arguments.

In: a tensor, op-tree or array_like of one factory; an axis (None: the
flattened array); numpy's ``kind``/``order``/``stable`` and the array API's
``descending``/``stable``.  Out: a new contiguous tensor of the sorted
values, or of their int64 positions along the axis.

How: the axis is moved last and copied contiguous where it is not; the
factory's engine sorts each row by radix keys (:mod:`.keys`: numpy's order,
NaN last).  The sort is always stable, so every ``kind`` numpy accepts
gives numpy's stable result; a partition is a full sort.
"""
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core import dtypes

I64 = np.dtype(np.int64)


class SortFunctions:
    """Mixin: ``sort``, ``argsort``, ``partition``, ``argpartition``."""

    def sort(self, a, axis=-1, kind=None, order=None, *, descending=False, stable=None):
        """A sorted copy of ``a``, as ``numpy.sort`` (stable; NaN last).

        Parameters
        ----------
        a : array_like
        axis : int or None
            The axis to sort along (default: the last); None sorts the
            flattened array.
        kind : {None, "quicksort", "mergesort", "heapsort", "stable"}
            Accepted for numpy's sake: every kind runs the same stable radix sort.
        order : None
            Arrays have no fields: any other value raises ValueError, as numpy does.
        descending : bool
            The array API's: largest first (NaN first), equal elements in
            their original order.
        stable : bool, optional
            The array API's (and numpy 2's) keyword; the sort is stable either way.

        Returns
        -------
        Tensor

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis`` out of range.
        ValueError
            An unknown ``kind``, an ``order``, or ``kind`` and ``stable`` together.
        TypeError
            A dtype with no order.
        """
        return self._sort(a, axis, kind, order, stable, descending, False)

    def argsort(self, a, axis=-1, kind=None, order=None, *, descending=False, stable=None):
        """The int64 positions that sort ``a`` along ``axis``, as ``numpy.argsort``.

        Arguments as :meth:`sort`.  Equal elements (-0.0 and 0.0 among them)
        keep their original order.
        """
        return self._sort(a, axis, kind, order, stable, descending, True)

    def partition(self, a, kth, axis=-1, kind="introselect", order=None):
        """``a`` partitioned around the ``kth`` elements, as ``numpy.partition``.

        Every element before position ``kth`` is no larger than the one there
        and every element after it no smaller: here the whole axis is sorted
        (a valid partition for every ``kth`` at once), NaN last.

        Raises
        ------
        ValueError
            A ``kth`` outside the axis.
        TypeError
            A ``kth`` that is not an integer.
        """
        x = self._as_tensor(a)
        _check_kth(kth, x, axis)
        return self._sort(x, axis, None, order, None, False, False)

    def argpartition(self, a, kth, axis=-1, kind="introselect", order=None):
        """The positions that partition ``a`` (``numpy.argpartition``; see :meth:`partition`)."""
        x = self._as_tensor(a)
        _check_kth(kth, x, axis)
        return self._sort(x, axis, None, order, None, False, True)

    def _sort(self, a, axis, kind, order, stable, descending, positions):
        _check_options(kind, order, stable)
        x = self._as_tensor(a)
        if axis is None:
            x, axis = self._contiguous(x).reshape(-1), 0
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        moved = self._sortable(self.moveaxis(x, axis, -1))
        result = self.empty(moved.shape, I64 if positions else moved.dtype)
        if result.size:
            self._algorithm("sort_rows", self._contiguous(moved), moved.shape[-1],
                            bool(descending), None if positions else result,
                            result if positions else None)
        if not positions and result.dtype != x.dtype:  # back from _sortable's widening
            result = self.astype(result, x.dtype)
        return self._contiguous(self.moveaxis(result, -1, axis))

    def _sortable(self, t):
        """``t`` in a dtype the engines sort: the 8-bit floats as float16,
        which holds each of their values exactly (sort keys are 16 bits at least)."""
        return self.evaluate(self.astype(t, np.float16)) if t.dtype in dtypes.FLOAT8 else t


def _check_kth(kth, x, axis):
    """numpy's checks of ``partition``'s ``kth`` (an int or a sequence of ints)."""
    size = x.size if axis is None else x.shape[normalize_axis_index(operator.index(axis), x.ndim)]
    for k in np.atleast_1d(np.asarray(kth)).reshape(-1):
        if not isinstance(k, (int, np.integer)):
            raise TypeError("Partition index must be integer")
        if not -size <= k < size:
            raise ValueError(f"kth(={k + size if k < 0 else k}) out of bounds ({size})")


def _check_options(kind, order, stable):
    """numpy's checks of ``kind``, ``order`` and ``stable``, in numpy's words."""
    if kind is not None:
        if stable is not None:
            raise ValueError("`kind` and keyword parameters can't be provided at the same "
                             "time. Use only one of them.")
        if not isinstance(kind, str) or kind[:1].lower() not in ("q", "m", "h", "s"):
            raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' "
                             f"(got {kind!r})")
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
