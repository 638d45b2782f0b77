"""Running sums and products along rows: the single-pass scan behind ``cumsum``.

In: from :mod:`gpuarray.core.scans`, an operation ("add" or "multiply"),
a view whose last axis is scanned, and the target view of the result
dtype.  Out: the target filled, and True; False for a bool result (left
to the log-step scan there).

How: integers accumulate in uint64 -- sums and products modulo 2**64, cut
to the result's width on the store, which is exactly numpy's wrapping
arithmetic in that width -- and floats in float64 or float32 (16-bit
results in float32, rounded once).  The input, converted to the result
dtype as numpy converts it, is copied into a contiguous buffer of that
type when it is not one already, the engine
scans it row by row (CUB's decoupled look-back scan, by row key when
there are several rows), and the result is stored into the target.
"""
import numpy as np

from ..core import dtypes

_WORK = {"f8": np.float64, "f4": np.float32, "f2": np.float32}


def scan_dtype(result_dtype):
    """The engine's accumulation dtype for ``result_dtype``, or None (bool)."""
    result_dtype = np.dtype(result_dtype)
    if result_dtype.kind in "iu":
        return np.dtype(np.uint64)
    if dtypes.kind(result_dtype) == "f":
        return np.dtype(_WORK.get(f"f{result_dtype.itemsize}", np.float32))
    return None


class ScanRowFunctions:
    """Mixin: the ``_scan_rows`` hook of :mod:`gpuarray.core.scans`."""

    def _scan_rows(self, op, x, target):
        work = scan_dtype(target.dtype)
        if work is None:
            return False
        if x.dtype == work and x.is_contiguous:
            source = x
        else:
            source = self._cast_copy(x, target.dtype, work)
        direct = target.dtype == work and target.is_contiguous \
            and getattr(x, "buffer", None) is not target.buffer
        result = target if direct else self.empty(target.shape, work)
        self._algorithm("scan_rows", source, result, x.shape[-1], op)
        if not direct:
            target[...] = result
        return True

    def _cast_copy(self, x, result_dtype, work):
        """``x`` in the result dtype (numpy converts the input first: -7.5 sums as -7
        into integers), then in ``work``, contiguous: one fused kernel."""
        copy = self.empty(x.shape, work)
        copy[...] = x if x.dtype == result_dtype else self.astype(x, result_dtype)
        return copy
