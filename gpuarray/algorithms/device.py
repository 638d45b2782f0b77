"""The algorithms engine of the GPU factory: CUB and the kernels around it.

In: contiguous device tensors and the sizes of one primitive, as
:mod:`gpuarray.algorithms.host` takes them.  Out: the work queued on the
current stream (:mod:`gpuarray.cuda.algorithms` makes the calls), results
written into the given tensors; :meth:`~DeviceAlgorithms.gather` reads an
error flag back, so it waits for the stream.

Scratch -- keys, positions, CUB's temporary storage -- comes from the
factory's memory pool; every scratch tensor is held in a local until the
call using it is queued (the pool may hand a freed block to the next
allocation at once, ordered on the stream).
``ng.stats()["kernels_launched"]`` counts one per library call (a CUB
radix sort runs a few kernels per 8-bit digit).

A row of floats sorts as floats (CUB's order is numpy's but for NaNs with
the sign bit set, moved to the end afterwards on the device).  Sorting a
batch of rows is one radix sort of 64-bit keys -- the row number above
the element's key -- where both fit in 64 bits; else (8-byte elements)
two stable radix sorts: by key, carrying each element's flat position,
then by the row of that position (only the bits rows need), which keeps
the first's order within a row.
"""
import numpy as np

from ..cuda import algorithms as lib
from ..cuda import driver, stream
from . import keys

I64 = np.dtype(np.int64)


class DeviceAlgorithms:
    """See the module docstring; ``backend`` is the GPU factory."""

    def __init__(self, backend):
        self.backend = backend

    def _call(self, name, *args):
        lib.call(name, *args, stream.current_handle())
        self.backend._stats["kernels_launched"] += 1

    def _cub(self, name, *args):
        """A CUB entry point, its scratch from the pool."""
        handle = stream.current_handle()
        nbytes = lib.scratch_bytes(name, *args, handle)
        scratch = self.backend.empty((max(nbytes, 1),), np.uint8)
        lib.run_with_scratch(name, (scratch.ptr, nbytes), *args, handle)
        self.backend._stats["kernels_launched"] += 1

    def _iota(self, n):
        positions = self.backend.empty((n,), I64)
        self._call("ga_iota", positions.ptr, n)
        return positions

    def _keys(self, src, merge_zeros, descending):
        kind, width = keys.key_kind(src.dtype)
        encoded = self.backend.empty((src.size,), keys.key_dtype(src.dtype))
        self._call("ga_encode_keys", width, kind, src.ptr, encoded.ptr, src.size,
                   int(merge_zeros), int(descending))
        return encoded

    def sort_rows(self, src, length, descending, values, indices):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.sort_rows`."""
        g, n = self.backend, src.size
        rows = n // length
        kind, width = keys.key_kind(src.dtype)
        if rows > 1 and 8 * width + (rows - 1).bit_length() <= 64:
            self._sort_composite(src, length, descending, values, indices)
            return
        if indices is None and rows == 1 and not descending and kind in (lib.FLOAT, lib.BFLOAT):
            self._sort_floats(src, values, kind, width)
            return
        bits = keys.key_bits(src.dtype)
        encoded = self._keys(src, indices is not None, descending)
        ordered = g.empty((n,), encoded.dtype)
        if indices is None and rows == 1:
            self._cub("ga_sort_keys", width, encoded.ptr, ordered.ptr, n, 0, bits)
            self._call("ga_decode_keys", width, kind, ordered.ptr, values.ptr, n, int(descending))
            return
        single = indices is not None and rows == 1
        positions = indices if single else g.empty((n,), I64)
        start = self._iota(n)
        self._cub("ga_sort_pairs", width, encoded.ptr, ordered.ptr, start.ptr, positions.ptr, n,
                  0, bits)
        if rows > 1:
            positions = self._group_rows(positions, length, rows)
        self._finish_rows(src, length, rows, positions, values, indices, single)

    def _sort_floats(self, src, values, kind, width):
        """A row of floats sorted as floats by CUB, then its leading negative NaNs
        (if any) moved to the end on the device."""
        n = src.size
        self._cub("ga_sort_floats", width, kind, src.ptr, values.ptr, n)
        scratch = self.backend.empty((n,), values.dtype)
        moved = self.backend.empty((1,), np.int32)
        self._call("ga_move_nans", width, kind, values.ptr, scratch.ptr, moved.ptr, n)

    def _sort_composite(self, src, length, descending, values, indices):
        """One radix sort of 64-bit keys: the row above the element's key."""
        g, n = self.backend, src.size
        kind, width = keys.key_kind(src.dtype)
        end_bit = 8 * width + (n // length - 1).bit_length()
        composite = g.empty((n,), np.uint64)
        self._call("ga_compose_keys", width, kind, src.ptr, composite.ptr, n, length,
                   int(indices is not None), int(descending))
        ordered = g.empty((n,), np.uint64)
        if indices is None:
            self._cub("ga_sort_keys", 8, composite.ptr, ordered.ptr, n, 0, end_bit)
            self._call("ga_decompose_keys", width, kind, ordered.ptr, values.ptr, n,
                       int(descending))
            return
        start = self._iota(n)
        positions = g.empty((n,), I64)
        self._cub("ga_sort_pairs", 8, composite.ptr, ordered.ptr, start.ptr, positions.ptr, n, 0,
                  end_bit)
        self._finish_rows(src, length, n // length, positions, values, indices, False)

    def _finish_rows(self, src, length, rows, positions, values, indices, single):
        """From the sorted flat ``positions``: the positions within each row, and
        the values (gathered: the keys of an argsort merge -0.0 into 0.0)."""
        n = src.size
        if indices is not None and not single:
            indices.reshape(-1)[:] = positions % length if rows > 1 else positions
        if values is not None:
            self.gather(src.reshape(-1), positions, values.reshape(-1), (1, n, n, 1), (0, 1, 0),
                        False)

    def _group_rows(self, positions, length, rows):
        """Stable-sort flat ``positions`` by their row: rows in order, each row's
        positions in the order the key sort left them."""
        g, n = self.backend, positions.size
        row_dtype = np.dtype(np.uint32 if rows <= 2 ** 32 else np.uint64)
        row = g.empty((n,), row_dtype)
        row[:] = positions // length
        row_ordered = g.empty((n,), row_dtype)
        grouped = g.empty((n,), I64)
        self._cub("ga_sort_pairs", row_dtype.itemsize, row.ptr, row_ordered.ptr, positions.ptr,
                  grouped.ptr, n, 0, max((rows - 1).bit_length(), 1))
        return grouped

    def flatnonzero(self, mask, out):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.flatnonzero`."""
        count = self.backend.empty((1,), I64)
        self._cub("ga_select_flagged", mask.ptr, out.ptr, count.ptr, mask.size)

    def select(self, values, mask, out):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.select`."""
        count = self.backend.empty((1,), I64)
        self._cub("ga_select_values", values.itemsize, values.ptr, mask.ptr, out.ptr, count.ptr,
                  mask.size)

    def count_bins(self, idx, counts):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.count_bins`."""
        self._call("ga_count_bins", idx.ptr, idx.size, counts.ptr)

    def histogram_counts(self, values, edges, counts):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.histogram_counts`."""
        self._call("ga_histogram", lib.VALUE_TYPES[values.dtype.name], values.ptr, values.size,
                   edges.ptr, edges.size - 1, counts.ptr)

    def sum_runs(self, keys, values):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.sum_runs` (reads the
        number of runs back)."""
        g, n = self.backend, keys.size
        run_keys, sums, runs = g.empty((n,), I64), g.empty((n,), np.float64), g.empty((1,), I64)
        self._cub("ga_sum_runs_f64", keys.ptr, run_keys.ptr, values.ptr, sums.ptr, runs.ptr, n)
        count = int(runs.get()[0])
        return run_keys[:count], sums[:count]

    def scan_rows(self, src, dst, length, op):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.scan_rows`."""
        self._cub("ga_scan", lib.SCAN_TYPES[src.dtype.name], lib.SCAN_OPS[op], src.ptr, dst.ptr,
                  src.size, length)

    def gather(self, src, idx, out, sizes, idx_strides, check=True):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.gather`; without
        ``check`` (indices known to be in range) nothing is read back."""
        if not check:
            self._call("ga_gather", src.itemsize, src.ptr, idx.ptr, out.ptr, *sizes,
                       *idx_strides, None)
            return None
        bad = self.backend.empty((1,), np.uint64)
        driver.memset_d32(bad.ptr, 0xFFFFFFFF, 2)
        self._call("ga_gather", src.itemsize, src.ptr, idx.ptr, out.ptr, *sizes, *idx_strides,
                   bad.ptr)
        position = int(bad.get()[0])
        return None if position == 2 ** 64 - 1 else position

    def scatter(self, src, idx, dst):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.scatter`."""
        self._call("ga_scatter", src.itemsize, src.ptr, idx.ptr, dst.ptr, src.size)

    def search(self, sorted_values, needles, right, out):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.search`."""
        haystack = self._keys(sorted_values, True, False)
        wanted = self._keys(needles, True, False)
        self._call("ga_search", haystack.itemsize, haystack.ptr, haystack.size, wanted.ptr,
                   wanted.size, out.ptr, int(right))

    def running_sum(self, src, out):
        """See :meth:`gpuarray.algorithms.host.HostAlgorithms.running_sum`."""
        self.scan_rows(src, out, src.size, "add")
