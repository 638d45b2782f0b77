"""The algorithms engine of the CPU factory: the device primitives in numpy.

In: contiguous CPU tensors and the sizes of one primitive -- row sort,
compaction, gather, scatter, binary search, running sum -- as
:mod:`gpuarray.algorithms.device` takes them.  Out: the results written
into the given tensors (or a new tensor), computed the way the device
computes them (the same sort keys, a stable sort), so that the shared code
in :mod:`gpuarray.algorithms` is tested against numpy on any machine.
"""
import numpy as np

from . import keys


def _np(t):
    """The numpy array behind a contiguous CPU tensor, flattened."""
    return t.numpy_view().reshape(-1)


class HostAlgorithms:
    """See the module docstring; ``backend`` is the CPU factory."""

    def __init__(self, backend):
        self.backend = backend

    def sort_rows(self, src, length, descending, values, indices):
        """Sort each row of ``length`` elements of ``src`` into ``values``
        (the sorted elements) and/or ``indices`` (their int64 positions in the row)."""
        rows = _np(src).reshape(-1, length)
        order = np.argsort(keys.encode(rows, indices is not None, descending), axis=-1,
                           kind="stable")
        if indices is not None:
            _np(indices)[:] = order.reshape(-1)
        if values is not None:
            _np(values)[:] = np.take_along_axis(rows, order, axis=-1).reshape(-1)

    def flatnonzero(self, mask, out):
        """The int64 positions of the true elements of the bool tensor ``mask``
        into ``out`` (of their count)."""
        _np(out)[:] = np.flatnonzero(_np(mask))

    def select(self, values, mask, out):
        """The elements of ``values`` where the bool tensor ``mask`` is true, in
        order, into ``out`` (of their count)."""
        _np(out)[:] = _np(values)[_np(mask)]

    def gather(self, src, idx, out, sizes, idx_strides, check=True):
        """``out[o, j, i] = src[o, idx[o*so + j*sj + i*si], i]`` for sizes ``(outer, J, A,
        inner)``; returns the first flat position of ``out`` whose index is outside
        ``[-A, A)`` (that element is left zero), or None.  ``check`` False says
        the indices are known to be in range (the device then reads nothing back)."""
        outer, count, axis_len, inner = sizes
        table = _np(idx)
        step = table.itemsize
        index = np.lib.stride_tricks.as_strided(
            table, (outer, count, inner), tuple(s * step for s in idx_strides))
        index = np.where(index < 0, index + axis_len, index)
        bad = (index < 0) | (index >= axis_len)
        source = _np(src).reshape(outer, axis_len, inner)
        result = np.take_along_axis(source, np.where(bad, 0, index), axis=1)
        result[bad] = 0
        _np(out)[:] = result.reshape(-1)
        return int(np.flatnonzero(bad)[0]) if bad.any() else None

    def scatter(self, src, idx, dst):
        """``dst[idx[i]] = src[i]`` (indices in range and distinct)."""
        _np(dst)[_np(idx)] = _np(src)

    def search(self, sorted_values, needles, right, out):
        """Insertion points of ``needles`` in the sorted 1-D ``sorted_values``."""
        side = "right" if right else "left"
        haystack = keys.encode(_np(sorted_values), True, False)
        _np(out)[:] = np.searchsorted(haystack, keys.encode(_np(needles), True, False), side)

    def count_bins(self, idx, counts):
        """``counts[idx[i]] += 1`` for every ``i`` (int64 counts; indices in range)."""
        np.add.at(_np(counts), _np(idx), 1)

    def histogram_counts(self, values, edges, counts):
        """``counts[b]`` += how many of ``values`` lie in bin ``b`` of the float64
        ``edges`` (numpy's bins: the last closed, NaN and outsiders nowhere)."""
        found = np.histogram(_np(values).astype(np.float64), bins=_np(edges))[0]
        _np(counts)[:] += found

    def sum_runs(self, keys, values):
        """The keys of the runs of equal int64 ``keys`` and the float64 sums of
        ``values`` over each run, as two new tensors."""
        flat = _np(keys)
        starts = np.flatnonzero(np.concatenate(([True], flat[1:] != flat[:-1])))
        sums = np.add.reduceat(_np(values), starts) if flat.size else np.zeros(0)
        return self.backend.array(flat[starts]), self.backend.array(sums)

    def scan_rows(self, src, dst, length, op):
        """Running sums (``op`` "add") or products ("multiply") along rows of ``length``."""
        scan = np.cumsum if op == "add" else np.cumprod
        with np.errstate(all="ignore"):  # inf - inf gives NaN quietly, as on the device
            scan(_np(src).reshape(-1, length), axis=-1, out=_np(dst).reshape(-1, length))

    def running_sum(self, src, out):
        """Inclusive running sums of the int64 tensor ``src``."""
        np.cumsum(_np(src), out=_np(out))
