"""``ng.fft``: numpy's and the array API's discrete Fourier transforms.

In: tensors, op-trees or array_likes of the factory, and numpy's arguments
(``n``/``s``, ``axis``/``axes``, ``norm``).  Out: tensors (the transforms)
or lazy op-trees (a normalised or conjugated transform, frequencies,
shifts), with numpy 2's result dtypes: single precision in, complex64 or
float32 out (float16 and bfloat16 count as single); double precision,
integers and bool give complex128 or float64.

Everything but the unnormalised transform itself is here, shared by both
factories: argument checks with numpy's messages, cropping and
zero-padding to ``n``, the ``norm`` scale, ``hfft``/``ihfft`` as the
conjugated real transforms, ``fftfreq``/``rfftfreq`` and the shifts.  The
factory's ``_fft_raw(kind, x, axes, s, forward)`` computes the transform
over ``axes`` (cuFFT on the GPU, :mod:`gpuarray.fft.device`; numpy on the
CPU).
"""
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core import dtypes
from ..core.optree import Expression

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


class FFT:
    """The ``fft`` namespace of one factory (``ng.fft.fft(x)``)."""

    def __init__(self, factory):
        self._xp = factory

    def __repr__(self):
        return f"<fft namespace of {self._xp!r}>"

    # -- complex transforms ----------------------------------------------
    def fft(self, a, n=None, axis=-1, norm=None, out=None):
        """1-D transform along ``axis``, cropped or zero-padded to ``n``, as ``numpy.fft.fft``."""
        return self._c2c(a, _one(n), (axis,), norm, True, out)

    def ifft(self, a, n=None, axis=-1, norm=None, out=None):
        """1-D inverse transform, as ``numpy.fft.ifft``."""
        return self._c2c(a, _one(n), (axis,), norm, False, out)

    def fftn(self, a, s=None, axes=None, norm=None, out=None):
        """N-D transform over ``axes`` (all by default), as ``numpy.fft.fftn``."""
        return self._c2c(a, s, axes, norm, True, out)

    def ifftn(self, a, s=None, axes=None, norm=None, out=None):
        """N-D inverse transform, as ``numpy.fft.ifftn``."""
        return self._c2c(a, s, axes, norm, False, out)

    def fft2(self, a, s=None, axes=(-2, -1), norm=None, out=None):
        """2-D transform over the last two axes, as ``numpy.fft.fft2``."""
        return self._c2c(a, s, axes, norm, True, out)

    def ifft2(self, a, s=None, axes=(-2, -1), norm=None, out=None):
        """2-D inverse transform, as ``numpy.fft.ifft2``."""
        return self._c2c(a, s, axes, norm, False, out)

    # -- real transforms --------------------------------------------------
    def rfft(self, a, n=None, axis=-1, norm=None, out=None):
        """Transform of real input, the ``n // 2 + 1`` non-negative frequencies
        (``numpy.fft.rfft``)."""
        return self._r2c(a, _one(n), (axis,), norm, out)

    def irfft(self, a, n=None, axis=-1, norm=None, out=None):
        """Inverse of :meth:`rfft`: ``n`` real values (default ``2 * (m - 1)``),
        as ``numpy.fft.irfft``."""
        return self._c2r(a, _one(n), (axis,), norm, out)

    def rfftn(self, a, s=None, axes=None, norm=None, out=None):
        """N-D transform of real input, halved along the last axis (``numpy.fft.rfftn``)."""
        return self._r2c(a, s, axes, norm, out)

    def irfftn(self, a, s=None, axes=None, norm=None, out=None):
        """Inverse of :meth:`rfftn`, as ``numpy.fft.irfftn``."""
        return self._c2r(a, s, axes, norm, out)

    def rfft2(self, a, s=None, axes=(-2, -1), norm=None, out=None):
        """2-D :meth:`rfftn` over the last two axes."""
        return self._r2c(a, s, axes, norm, out)

    def irfft2(self, a, s=None, axes=(-2, -1), norm=None, out=None):
        """2-D :meth:`irfftn` over the last two axes."""
        return self._c2r(a, s, axes, norm, out)

    def hfft(self, a, n=None, axis=-1, norm=None, out=None):
        """Transform of a Hermitian-symmetric signal given by its first half:
        real output, as ``numpy.fft.hfft`` (``irfft`` of the conjugate, the
        norm's direction swapped)."""
        x = self._input(a)
        return self._c2r(self._xp.conjugate(x), _one(n), (axis,), _swapped(norm), out)

    def ihfft(self, a, n=None, axis=-1, norm=None, out=None):
        """Inverse of :meth:`hfft` for real input, as ``numpy.fft.ihfft``."""
        return self._finish(self._xp.conjugate(self._r2c(a, _one(n), (axis,), _swapped(norm))),
                            out)

    # -- frequencies and shifts ---------------------------------------------
    def fftfreq(self, n, d=1.0, *, dtype=None, device=None):
        """Sample frequencies of an ``n``-point transform with spacing ``d``
        (``numpy.fft.fftfreq``): ``[0, 1, ..., -1] / (d * n)``."""
        n = _points(n)
        k = self._xp.arange(n, dtype=np.int64)
        signed = self._xp.where(k < (n + 1) // 2, k, k - n)
        return self._frequencies(signed, n, d, dtype)

    def rfftfreq(self, n, d=1.0, *, dtype=None, device=None):
        """Non-negative sample frequencies of :meth:`rfft` (``numpy.fft.rfftfreq``)."""
        n = _points(n)
        return self._frequencies(self._xp.arange(n // 2 + 1, dtype=np.int64), n, d, dtype)

    def fftshift(self, x, axes=None):
        """Zero frequency moved to the centre (``numpy.fft.fftshift``), lazy."""
        return self._shift(x, axes, lambda size: size // 2)

    def ifftshift(self, x, axes=None):
        """Inverse of :meth:`fftshift` (``numpy.fft.ifftshift``), lazy."""
        return self._shift(x, axes, lambda size: -(size // 2))

    # -- shared steps -----------------------------------------------------
    def _c2c(self, a, s, axes, norm, forward, out=None):
        x = self._input(a)
        s, axes = _shape_and_axes(x, s, axes)
        x = self._prepared(x, _complex_dtype(x.dtype), s, axes, norm, forward)
        return self._finish(self._xp._fft_raw("c2c", x, axes, s, forward), out)

    def _r2c(self, a, s, axes, norm, out=None):
        x = self._input(a)
        if dtypes.is_complex(x.dtype):
            raise TypeError(f"rfft takes real input, not {x.dtype}")
        s, axes = _shape_and_axes(x, s, axes)
        x = self._prepared(x, _real_dtype(x.dtype), s, axes, norm, True)
        return self._finish(self._xp._fft_raw("r2c", x, axes, s, True), out)

    def _c2r(self, a, s, axes, norm, out=None):
        x = self._input(a)
        s, axes = _shape_and_axes(x, s, axes, inverse_real=True)
        halved = s[:-1] + [s[-1] // 2 + 1]
        x = self._prepared(x, _complex_dtype(x.dtype), halved, axes, norm, False, s)
        return self._finish(self._xp._fft_raw("c2r", x, axes, s, False), out)

    def _prepared(self, x, dtype, extents, axes, norm, forward, s=None):
        """The transform's input: ``x`` in ``dtype``, cropped or padded to
        ``extents``, and times the norm's scale (for the extents ``s``) --
        the transform is linear, so scaling its input is scaling its result,
        and the scale fuses into the copy the transform makes of its input."""
        if x.dtype != dtype:
            x = self._xp.astype(x, dtype)
        x = self._resized(x, extents, axes)
        scale = _scale(extents if s is None else s, norm, forward)
        if scale == 1:
            return x
        return self._xp.astype(self._xp.multiply(x, _real_scalar(dtype, scale)), dtype)

    def _input(self, a):
        """A tensor or op-tree (kept lazy: it fuses into the transform's input
        copy); host data is copied in."""
        if isinstance(a, Expression):
            return self._xp.operand(a)
        return self._xp.array(np.asarray(a))

    def _resized(self, x, s, axes):
        """``x`` cropped or zero-padded to ``s`` along ``axes`` (numpy's ``n``)."""
        if all(x.shape[a] == n for a, n in zip(axes, s)):
            return x
        shape = list(x.shape)
        for a, n in zip(axes, s):
            shape[a] = n
        result = self._xp.zeros(tuple(shape), x.dtype)
        region = tuple(slice(0, min(x.shape[a], shape[a])) for a in range(x.ndim))
        result[region] = x[region]
        return result

    def _frequencies(self, k, n, d, dtype):
        values = self._xp.multiply(k, 1.0 / (n * d))
        return self._xp.astype(values, np.float64 if dtype is None else dtype)

    def _shift(self, x, axes, amount):
        x = self._xp.operand(x)
        axes = tuple(range(x.ndim)) if axes is None else axes
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        shifts = [amount(x.shape[normalize_axis_index(a, x.ndim)]) for a in axes]
        return self._xp.roll(x, shifts, axes)

    def _finish(self, node, out):
        return node if out is None else self._xp._finish(node, out)


def _one(n):
    return None if n is None else [n]


def _points(n):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _checked_norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _scale(s, norm, forward):
    """The factor ``norm`` asks of a transform over extents ``s``."""
    norm = _checked_norm(norm)
    if norm == "ortho":
        return 1 / math.sqrt(math.prod(s))
    return 1 / math.prod(s) if (norm == "forward") == forward else 1


def _swapped(norm):
    return _SWAPPED[_checked_norm(norm)]


def _shape_and_axes(x, s, axes, inverse_real=False):
    """numpy's ``s`` and ``axes`` (normalised; ``s`` taken from ``x`` where
    not given, and for the inverse real transforms ``2 * (m - 1)`` last)."""
    if axes is None:
        axes = range(x.ndim) if s is None else range(-len(s), 0)
    axes = [normalize_axis_index(operator.index(a), x.ndim) for a in axes]
    if not axes:
        raise ValueError("the FFT needs at least one axis")
    given = s is not None
    s = [x.shape[a] for a in axes] if s is None else [operator.index(n) for n in s]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and not given:
        s[-1] = (x.shape[axes[-1]] - 1) * 2
    s = [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]
    for n in s:
        _points(n)
    return s, axes


def _complex_dtype(dtype):
    return np.dtype(np.complex64 if _single(dtype) else np.complex128)


def _real_dtype(dtype):
    return np.dtype(np.float32 if _single(dtype) else np.float64)


def _single(dtype):
    """Single precision: float16, bfloat16, float32 and complex64 (numpy 2's rule)."""
    dtype = np.dtype(dtype)
    return dtypes.is_low_precision(dtype) or dtype in (np.float32, np.complex64)


def _real_scalar(dtype, value):
    """``value`` as a numpy scalar of ``dtype``'s real precision, so that the
    scale keeps single precision single."""
    return np.float32(value) if _single(dtype) else np.float64(value)
