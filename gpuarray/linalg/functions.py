"""The ``linalg`` attribute of both factories, and the CPU factory's factorisations.

In: a factory.  Out: ``factory.linalg``, its
:class:`~gpuarray.linalg.namespace.LinAlg` namespace (made once), and
:class:`HostLinAlg`, the CPU factory's engine on ``numpy.linalg`` (the
GPU factory's is :class:`gpuarray.linalg.device.DeviceLinAlg`).
"""
import operator
import warnings

import numpy as np

from ..core.array_api import extension
from .namespace import LinAlg


class LinAlgFunctions:
    """Mixin: ``ng.linalg``, numpy's and the array API's ``linalg`` namespace,
    and ``polyfit``, which solves with it."""

    @property
    def linalg(self):
        """Linear algebra (``ng.linalg.solve``, ``ng.linalg.svd``...)."""
        return extension(self, LinAlg)

    def polyfit(self, x, y, deg, rcond=None, full=False, w=None, cov=False):
        """Least-squares polynomial fit, highest power first, as ``numpy.polyfit``:
        the Vandermonde matrix's columns scaled to unit norm, then ``lstsq``.

        Returns
        -------
        Tensor or tuple
            The coefficients (a column per column of ``y``); with ``full``
            also the residuals, rank, singular values and ``rcond``; with
            ``cov`` the coefficients' covariance (``"unscaled"``: not scaled
            by the residuals).

        Raises
        ------
        ValueError, TypeError
            numpy's, for a negative degree, shapes and weights that differ.
        """
        deg = operator.index(deg)
        x, y = self.asarray(x), self.asarray(y)
        _check_fit(x, y, w, deg)
        order = deg + 1
        lhs = self.vander(x, order)
        rhs = y
        if w is not None:
            weights = self.asarray(w)
            lhs = lhs * weights[:, None]
            rhs = rhs * (weights[:, None] if rhs.ndim == 2 else weights)
        lhs = self.evaluate(self.astype(lhs, np.float64) if lhs.dtype.kind in "biu" else lhs)
        rcond = x.shape[0] * np.finfo(lhs.dtype).eps if rcond is None else rcond
        scale = self.evaluate(self.sqrt(self.sum(lhs * lhs, axis=0)))
        c, residuals, rank, s = self.linalg.lstsq(self.evaluate(lhs / scale), rhs, rcond)
        c = self.evaluate(c / (scale[:, None] if c.ndim == 2 else scale))
        if rank != order and not full:
            warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                          stacklevel=2)
        if full:
            return c, residuals, rank, s, rcond
        if cov:
            covariance = self._fit_covariance(lhs, scale, residuals, x.shape[0], order, cov)
            # a column of y each: numpy stacks them last, even unscaled
            return c, self.evaluate(covariance[:, :, None] if y.ndim == 2 and
                                    covariance.ndim == 2 else covariance)
        return c

    def _fit_covariance(self, lhs, scale, residuals, points, order, cov):
        """numpy's polyfit covariance: inv(L^T L) / outer(scale, scale), times
        the residuals over the degrees of freedom unless ``cov="unscaled"``."""
        scaled = lhs / scale
        base = self.linalg.inv(self.matmul(self.matrix_transpose(scaled), scaled))
        base = base / self.outer(scale, scale)
        if cov == "unscaled":
            return self.evaluate(base)
        if points <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        factor = residuals / (points - order)
        if factor.ndim == 0 or factor.shape == (1,):
            return self.evaluate(base * factor.reshape(()))
        return self.evaluate(base[:, :, None] * factor)


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

    def eig(self, a, vectors):
        # the dtypes are the installed numpy's (always complex from numpy 2.5 on)
        if vectors:
            return self._arrays(*np.linalg.eig(a.get()))
        return self._arrays(np.linalg.eigvals(a.get()), None)

    def svd(self, a, full, vectors):
        if vectors:
            return self._arrays(*np.linalg.svd(a.get(), full_matrices=full))
        return self._arrays(None, np.linalg.svd(a.get(), compute_uv=False), None)

    def qr(self, a, mode):
        if mode == "r":
            return self._arrays(None, np.linalg.qr(a.get(), mode="r"))
        return self._arrays(*np.linalg.qr(a.get(), mode=mode))


def _check_fit(x, y, w, deg):
    """numpy's argument errors of polyfit."""
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if w is not None and (np.ndim(w) != 1 or len(w) != x.shape[0]):
        raise TypeError("expected a 1-d w with the length of x")
