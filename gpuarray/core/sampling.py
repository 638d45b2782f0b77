"""Sampling: ``choice``, ``permutation`` and ``shuffle`` of
:class:`gpuarray.core.random.Generator`.

In: numpy's arguments (``a`` an int, host data or a tensor; ``p`` host data
or a tensor).  Out: new int64 index tensors or gathered copies (``shuffle``
writes its tensor in place).  Built on the factory's sort and gather
(:mod:`gpuarray.algorithms`: CUB's radix sort on the GPU):

* with replacement, uniform: random integers below n; with ``p``, the
  inverse CDF ``sum(cdf <= u)`` over numpy's normalised cumulative sum of
  ``p`` (taken on the host, where ``p`` is checked anyway) -- numpy's own
  ``searchsorted(cdf, u, side="right")`` as a fused reduction,
  O(size * len(p));
* permutation: the order that sorts n random float64 keys (53 random bits
  each), a uniformly random permutation (ties, at odds of about n**2 /
  2**54, keep their positions' order);
* without replacement: the first ``size`` of that order -- with ``p``,
  of the keys ``-log(u) / p`` (exponential races: the first ``size`` to
  finish are a sample drawn one by one with probabilities ``p`` among
  those left);
* samples of an array: ``take`` with the drawn indices.
"""
import math
import operator

import numpy as np

from . import shapes
from .array import Tensor
from .optree import Expression


class SamplingMethods:
    """Mixin of :class:`gpuarray.core.random.Generator` (which supplies the
    draws: ``_drawing``, ``_new``, ``_unit``, ``_below``, ``_shape``)."""

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Samples of ``a`` (or of ``arange(a)`` for an int), as ``numpy.random.Generator.choice``.

        With ``p``, indices come from the inverse CDF: numpy's normalised
        cumulative sum of ``p`` (taken on the host, where ``p`` is checked) and
        ``sum(cdf <= u)``, a fused reduction costing O(size * len(p)).
        Without replacement, the first ``size`` entries of a random order
        (weighted by ``p`` where given; see the module docstring).

        Parameters
        ----------
        a : int, array_like or tensor
            An int n samples ``arange(n)`` (the result is int64 indices);
            an array samples its entries along ``axis``.
        size : int, tuple of ints or None
            Number of samples (None: one, as a 0-d index or ``a``'s sub-array).
        replace : bool
            Whether an entry may be drawn more than once.
        p : array_like or tensor, optional
            Probabilities of the entries (default uniform).
        axis : int
            Axis of ``a`` sampled along.
        shuffle : bool
            Accepted: a sample without replacement is always in random order.

        Raises
        ------
        ValueError
            numpy's messages for an empty or non-positive ``a``, for ``p``, and
            for a sample without replacement larger than the population (or
            than ``p``'s non-zero entries).
        """
        ng = self.backend
        shape = self._shape(size)
        count = math.prod(shape)
        pool, n, axis = _population(ng, a, axis, count)
        cdf = None if p is None else _cdf(p, n)
        if not replace:
            index = self._without_replacement(n, shape, count, cdf)
            return index if pool is None else _take(ng, pool, index, axis)
        with self._drawing():
            if count == 0 or n == 1:
                index = ng.zeros(shape, np.int64)
            elif cdf is None:
                index = self._new(shape, np.int64, ng.astype(self._below(n), np.int64))
            else:
                u = self._new(shape + (1,), np.float64, self._unit(np.float64))
                hits = ng.sum(ng.less_equal(ng.array(cdf[:-1]), u), axis=-1, keepdims=False)
                index = self._new(shape, np.int64, ng.astype(hits, np.int64))
        return index if pool is None else _take(ng, pool, index, axis)

    def _order(self, n, weights=None):
        """A random order of range(n): the positions that sort n random keys,
        ``-log(u) / weights`` where weights are given (zero weights last)."""
        ng = self.backend
        if n <= 1:
            return ng.zeros((max(n, 0),), np.int64)
        unit = self._unit(np.float64)
        if weights is None:
            keys = self._new((n,), np.float64, unit)
        else:
            keys = self._new((n,), np.float64, ng.negative(ng.log1p(ng.negative(unit))))
            keys = ng.evaluate(keys / ng.array(weights))  # a zero weight gives +inf: last
        return ng.argsort(keys)

    def _without_replacement(self, n, shape, count, cdf):
        """``count`` distinct indices below n in random order (weighted by the
        probabilities behind ``cdf`` where given), in ``shape``."""
        if count > n:
            raise ValueError("Cannot take a larger sample than population when replace is False")
        weights = None if cdf is None else np.diff(cdf, prepend=0.0)
        if weights is not None and np.count_nonzero(weights) < count:
            raise ValueError("Fewer non-zero entries in p than size")
        with self._drawing():
            order = self._order(n, weights)
        return self.backend.evaluate(order[:count].reshape(shape))

    def permutation(self, x, axis=0):
        """A permuted ``arange(x)`` (an int) or copy of ``x`` along ``axis``, as
        ``numpy.random.Generator.permutation``.

        The order that sorts random keys (one radix sort on the GPU).

        Parameters
        ----------
        x : int, array_like or tensor
            An int n permutes ``arange(n)`` (int64); an array is copied.
        axis : int
            Axis along which ``x`` is permuted.
        """
        ng = self.backend
        if isinstance(x, (int, np.integer)):
            with self._drawing():
                return self._order(int(x))
        pool = ng._as_tensor(x)
        axis = shapes.normalize_axis(axis, pool.ndim)
        with self._drawing():
            order = self._order(pool.shape[axis])
        return _take(ng, pool, order, axis)

    def shuffle(self, x, axis=0):
        """Permute the tensor ``x`` in place along ``axis``, as
        ``numpy.random.Generator.shuffle``."""
        if not isinstance(x, Tensor) or x.backend is not self.backend:
            raise TypeError(f"shuffle needs a tensor of this factory, not {type(x).__name__}")
        # permutation returns a new tensor: the assignment reads nothing it writes
        self.backend.assign(x, self.permutation(x, axis))


def _population(ng, a, axis, count):
    """(tensor or None, population size, axis) of ``choice``'s ``a``, numpy's checks."""
    ndim = a.ndim if isinstance(a, Expression) else np.ndim(a)
    if ndim == 0:
        value = a.get().item() if isinstance(a, Expression) else np.asarray(a).item()
        try:
            n = operator.index(value)
        except TypeError:
            raise ValueError(f"a must be a sequence or an integer, not {type(a)}") from None
        if n <= 0 and count:
            raise ValueError("a must be a positive integer unless no samples are taken")
        return None, n, 0
    pool = ng._as_tensor(a)
    axis = shapes.normalize_axis(axis, pool.ndim)
    if pool.shape[axis] == 0 and count:
        raise ValueError("a cannot be empty unless no samples are taken")
    return pool, pool.shape[axis], axis


def _cdf(p, n):
    """numpy's checks of ``p``, then its cumulative sum normalised to end at 1."""
    atol = math.sqrt(np.finfo(np.float64).eps)
    host = p.get() if isinstance(p, Expression) else p
    if isinstance(host, np.ndarray) and np.issubdtype(host.dtype, np.floating):  # not ml_dtypes', as numpy
        atol = max(atol, math.sqrt(np.finfo(host.dtype).eps))
    host = np.asarray(host, dtype=np.float64)
    if host.ndim != 1:
        raise ValueError("p must be 1-dimensional")
    if host.size != n:
        raise ValueError("a and p must have same size")
    total = math.fsum(host)
    if math.isnan(total):
        raise ValueError("Probabilities contain NaN")
    if np.any(host < 0):
        raise ValueError("Probabilities are not non-negative")
    if abs(total - 1.0) > atol:
        raise ValueError("Probabilities do not sum to 1. See Notes section of docstring for "
                         "more information.")
    cdf = np.cumsum(host)
    return cdf / cdf[-1]


def _take(ng, pool, index, axis):
    """``numpy.take(pool, index, axis)`` for indices drawn in range (the wrap mode
    checks nothing, so the call does not wait for the device)."""
    return ng.take(pool, index, axis=axis, mode="wrap")
