"""numpy's functions that make arrays from a few numbers: ``logspace``,
``geomspace``, the window functions (``bartlett``, ``blackman``,
``hamming``, ``hanning``, ``kaiser``), ``tri``, ``vander`` and ``diagflat``.

In: numbers (and, for ``vander`` and ``diagflat``, an array_like of one
factory).  Out: new tensors with numpy's values, dtypes and errors.  The
sequences and windows are computed on the host by numpy, as ``linspace``
is (:mod:`gpuarray.core.creation`), and copied in once: they are small
and made once, and numpy's own formulas give exactly its values.
``vander`` is one fused power per column and ``diagflat`` a ``diag`` of
the flattened input.  Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import operator

import numpy as np

from . import dtypes


def _dtype(dtype):
    return None if dtype is None else dtypes.as_dtype(dtype)


class SequenceFunctions:
    """Mixin: spaced sequences, windows, ``tri``, ``vander``, ``diagflat``."""

    def logspace(self, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
        """``base ** linspace(start, stop, num)``, as ``numpy.logspace``."""
        return self.array(np.logspace(start, stop, num, endpoint, base, _dtype(dtype), axis))

    def geomspace(self, start, stop, num=50, endpoint=True, dtype=None, axis=0):
        """Numbers evenly spaced on a log scale from ``start`` to ``stop``, as ``numpy.geomspace``.

        Raises
        ------
        ValueError
            A zero end point (numpy's message).
        """
        return self.array(np.geomspace(start, stop, num, endpoint, _dtype(dtype), axis))

    def bartlett(self, M):
        """The Bartlett (triangular) window of ``M`` points, as ``numpy.bartlett``."""
        return self.array(np.bartlett(M))

    def blackman(self, M):
        """The Blackman window of ``M`` points, as ``numpy.blackman``."""
        return self.array(np.blackman(M))

    def hamming(self, M):
        """The Hamming window of ``M`` points, as ``numpy.hamming``."""
        return self.array(np.hamming(M))

    def hanning(self, M):
        """The Hann window of ``M`` points, as ``numpy.hanning``."""
        return self.array(np.hanning(M))

    def kaiser(self, M, beta):
        """The Kaiser window of ``M`` points and shape ``beta``, as ``numpy.kaiser``."""
        return self.array(np.kaiser(M, beta))

    def tri(self, N, M=None, k=0, dtype=float):
        """Ones at and below diagonal ``k``, zeros above (``numpy.tri``)."""
        rows = operator.index(N)
        cols = rows if M is None else operator.index(M)
        return self.array(np.tri(rows, cols, operator.index(k), dtypes.as_dtype(dtype)))

    def vander(self, x, N=None, increasing=False):
        """The Vandermonde matrix of 1-D ``x``: columns ``x ** (N - 1)`` down to
        ``x ** 0`` (up with ``increasing``), as ``numpy.vander``.

        Raises
        ------
        ValueError
            ``x`` not one-dimensional, or ``N`` negative.
        """
        x = self._as_tensor(x)
        if x.ndim != 1:
            raise ValueError("x must be a one-dimensional array or sequence.")
        columns = x.size if N is None else operator.index(N)
        if columns < 0:
            raise ValueError("N must be non-negative")
        powers = np.arange(columns, dtype=np.int64)
        if not increasing:
            powers = powers[::-1]
        # numpy's promotion with its default int: float32 and integers give float64/int64
        dtype = np.float64 if dtypes.is_low_precision(x.dtype) else np.promote_types(x.dtype, int)
        out = self.empty((x.size, columns), dtype)
        if out.size:
            out[...] = self.power(self.astype(x, dtype)[:, None], self.array(powers)[None, :])
        return out

    def diagflat(self, v, k=0):
        """A 2-D array with the flattened ``v`` on diagonal ``k`` (``numpy.diagflat``)."""
        return self.diag(self._as_tensor(v).ravel(), k)
