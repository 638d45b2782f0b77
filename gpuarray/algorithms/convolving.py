"""Discrete linear convolution and correlation of two 1-D arrays: ``convolve``, ``correlate``.

In: two 1-D tensors, op-trees or array_likes of one factory and numpy's
``mode`` ("full", "same", "valid").  Out: a new tensor of numpy's length,
dtype (the operands' common one) and values.

How: the shorter array is the kernel; the result accumulates one shifted,
scaled copy of the longer array per kernel element -- ``out[k:k + n] +=
v[k] * a`` as a fused assignment that reads ``v[k]`` on the device --
so a kernel of M elements costs M launches over N elements (direct
convolution, O(N M), no workspace).  ``correlate`` convolves with the
reversed second array.
"""
from ..core import ops

_MODES = ("valid", "same", "full")


class ConvolvingFunctions:
    """Mixin: ``convolve``, ``correlate``."""

    def convolve(self, a, v, mode="full"):
        """The discrete linear convolution of two 1-D arrays, as ``numpy.convolve``.

        Raises
        ------
        ValueError
            An empty or multi-dimensional operand, or an unknown ``mode``.
        """
        first, second = self._sequence(a, "a"), self._sequence(v, "v")
        _check_mode(mode)
        if second.size > first.size:
            first, second = second, first
        return self._convolved(first, second, mode)

    def correlate(self, a, v, mode="valid"):
        """The cross-correlation of two 1-D arrays, as ``numpy.correlate``
        (``convolve`` of ``a`` with ``v`` reversed)."""
        first, second = self._sequence(a, "a"), self._sequence(v, "v")
        _check_mode(mode)
        if second.size > first.size:
            return self._convolved(second, first[::-1], mode)[::-1]
        return self._convolved(first, second[::-1], mode)

    def _convolved(self, signal, kernel, mode):
        """``signal`` (N) convolved with the no longer ``kernel`` (M), cut to ``mode``."""
        n, m = signal.size, kernel.size
        kind = ops.promote(signal.dtype, kernel.dtype)
        full = self.zeros((n + m - 1,), kind)
        for k in range(m):
            window = full[k:k + n]
            window[...] = window + kernel[k] * signal
        if mode == "full":
            return full
        start = (m - 1) // 2 if mode == "same" else m - 1
        length = n if mode == "same" else n - m + 1
        return self._contiguous(full[start:start + length])

    def _sequence(self, a, name):
        x = self._as_tensor(a)
        if x.ndim != 1:
            raise ValueError("object too deep for desired array" if x.ndim > 1 else
                             "object of too small depth for desired array")
        if x.size == 0:
            raise ValueError(f"{name} cannot be empty")
        return x


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
