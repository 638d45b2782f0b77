"""The ``fft`` attribute of both factories, and the CPU factory's transforms.

In: a factory.  Out: ``factory.fft``, its :class:`~gpuarray.fft.namespace.FFT`
namespace (made once), and :meth:`HostFFTFunctions._fft_raw`, the CPU
factory's unnormalised transforms through ``numpy.fft`` (the GPU factory's
are in :mod:`gpuarray.fft.device`).
"""
import numpy as np

from ..core.array_api import extension
from .namespace import FFT


class FFTFunctions:
    """Mixin: ``ng.fft``, numpy's and the array API's ``fft`` namespace."""

    @property
    def fft(self):
        """The discrete Fourier transforms (``ng.fft.fft``, ``ng.fft.rfftn``...)."""
        return extension(self, FFT)


class HostFFTFunctions(FFTFunctions):
    """Mixin of the CPU factory: the transforms computed by ``numpy.fft``."""

    def _fft_raw(self, kind, x, axes, s, forward):
        """The unnormalised transform of ``x`` over ``axes`` (extents ``s``)."""
        host = x.get()
        if kind == "c2c":
            function = np.fft.fftn if forward else np.fft.ifftn
            result = function(host, s, axes, norm="backward" if forward else "forward")
        elif kind == "r2c":
            result = np.fft.rfftn(host, s, axes)
        else:
            result = np.fft.irfftn(host, s, axes, norm="forward")
        return self.array(result)
