"""The ``linalg`` attribute of both factories, and the CPU factory's factorisations.

In: a factory.  Out: ``factory.linalg``, its
:class:`~gpuarray.linalg.namespace.LinAlg` namespace (made once), and
:class:`HostLinAlg`, the CPU factory's engine on ``numpy.linalg`` (the
GPU factory's is :class:`gpuarray.linalg.device.DeviceLinAlg`).
"""
import numpy as np

from ..core.array_api import extension
from .namespace import LinAlg


class LinAlgFunctions:
    """Mixin: ``ng.linalg``, numpy's and the array API's ``linalg`` namespace."""

    @property
    def linalg(self):
        """Linear algebra (``ng.linalg.solve``, ``ng.linalg.svd``...)."""
        return extension(self, LinAlg)


class HostLinAlgFunctions(LinAlgFunctions):
    """Mixin of the CPU factory: its engine computes with ``numpy.linalg``."""

    def _linalg_engine(self):
        return HostLinAlg(self)


class HostLinAlg:
    """The factorisations by ``numpy.linalg`` on host copies."""

    def __init__(self, factory):
        self.xp = factory

    def _arrays(self, *results):
        return tuple(None if r is None else self.xp.array(np.asarray(r)) for r in results)

    def cholesky(self, a):
        return self._arrays(np.linalg.cholesky(a.get()))[0]

    def solve(self, a, b):
        return self._arrays(np.linalg.solve(a.get(), b.get()))[0]

    def slogdet(self, a):
        return self._arrays(*np.linalg.slogdet(a.get()))

    def eigh(self, a, uplo, vectors):
        if vectors:
            return self._arrays(*np.linalg.eigh(a.get(), uplo))
        return self._arrays(np.linalg.eigvalsh(a.get(), uplo), None)

    def svd(self, a, full, vectors):
        if vectors:
            return self._arrays(*np.linalg.svd(a.get(), full_matrices=full))
        return self._arrays(None, np.linalg.svd(a.get(), compute_uv=False), None)

    def qr(self, a, mode):
        if mode == "r":
            return self._arrays(None, np.linalg.qr(a.get(), mode="r"))
        return self._arrays(*np.linalg.qr(a.get(), mode=mode))
