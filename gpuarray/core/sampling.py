"""Sampling without a sort or a gather: ``choice``, ``permutation`` and ``shuffle``
of :class:`gpuarray.core.random.Generator`.

In: numpy's arguments (``a`` an int, host data or a tensor; ``p`` host data
or a tensor).  Out: new int64 index tensors or gathered copies (``shuffle``
writes its tensor in place).  The device has no sort and no gather kernel
yet, so both are replaced by fused reductions over a broadcast axis:

* inverse CDF: ``sum(cdf <= u)`` over numpy's normalised cumulative sum of
  ``p`` (taken on the host, where ``p`` is checked anyway) -- numpy's own
  ``searchsorted(cdf, u, side="right")``, in O(size * len(p));
* gather: ``max_j where(index == j, a[j], lowest)``, exact for every value
  (NaN and -0.0 included), O(size * a.size);
* permutation: the ranks of n random keys (ties broken by position), a
  uniformly random permutation from n*n comparisons, so n is capped at
  :data:`MAX_PERMUTATION`; beyond it, and for ``choice(replace=False)``, a
  device sort is needed (NotImplementedError).
"""
import math
import operator

import numpy as np

from . import dtypes, shapes
from .array import Tensor
from .optree import Expression

#: the sort-free permutation ranks n keys with n*n comparisons: its limit
MAX_PERMUTATION = 4096


class SamplingMethods:
    """Mixin of :class:`gpuarray.core.random.Generator` (which supplies the
    draws: ``_drawing``, ``_new``, ``_unit``, ``_below``, ``_shape``)."""

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Samples of ``a`` (or of ``arange(a)`` for an int), as ``numpy.random.Generator.choice``.

        With ``p``, indices come from the inverse CDF: numpy's normalised
        cumulative sum of ``p`` (taken on the host, where ``p`` is checked) and
        ``sum(cdf <= u)``, a fused reduction costing O(size * len(p)).  Samples
        of an array are gathered by a fused one-hot maximum, O(size * len(a))
        (no device gather exists yet).

        Parameters
        ----------
        a : int, array_like or tensor
            An int n samples ``arange(n)`` (the result is int64 indices);
            an array samples its entries along ``axis``.
        size : int, tuple of ints or None
            Number of samples (None: one, as a 0-d index or ``a``'s sub-array).
        replace : bool
            Only True is built.
        p : array_like or tensor, optional
            Probabilities of the entries (default uniform).
        axis : int
            Axis of ``a`` sampled along.
        shuffle : bool
            Ignored: it concerns ``replace=False`` only.

        Raises
        ------
        ValueError
            numpy's messages for an empty or non-positive ``a`` and for ``p``.
        NotImplementedError
            ``replace=False``: it needs a device sort, not built yet.
        """
        ng = self.backend
        shape = self._shape(size)
        count = math.prod(shape)
        pool, n, axis = _population(ng, a, axis, count)
        cdf = None if p is None else _cdf(p, n)
        if not replace:
            if count > n:
                raise ValueError("Cannot take a larger sample than population when replace is False")
            raise NotImplementedError("choice(replace=False) needs a device sort, not built yet")
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

    def _ranks(self, n):
        """A uniformly random permutation of range(n) without a sort: the rank
        of each of n random keys (ties broken by position), n*n comparisons."""
        if n > MAX_PERMUTATION:
            raise NotImplementedError(f"a permutation of {n} elements needs a device sort, not built "
                                      f"yet (the sort-free path ranks at most {MAX_PERMUTATION})")
        ng = self.backend
        if n <= 1:
            return ng.zeros((max(n, 0),), np.int64)
        keys = self._new((n,), np.float64, self._unit(np.float64))
        where = ng.arange(n)
        ki, kj, i, j = keys.reshape(n, 1), keys.reshape(1, n), where.reshape(n, 1), where.reshape(1, n)
        before = ng.logical_or(ng.less(kj, ki), ng.logical_and(ng.equal(kj, ki), ng.less(j, i)))
        return self._new((n,), np.int64, ng.astype(ng.sum(before, axis=1, keepdims=False), np.int64))

    def permutation(self, x, axis=0):
        """A permuted ``arange(x)`` (an int) or copy of ``x`` along ``axis``, as
        ``numpy.random.Generator.permutation``.

        Sort-free: ranks of random keys (O(n**2), n up to :data:`MAX_PERMUTATION`).

        Parameters
        ----------
        x : int, array_like or tensor
            An int n permutes ``arange(n)`` (int64); an array is copied.
        axis : int
            Axis along which ``x`` is permuted.

        Raises
        ------
        NotImplementedError
            More elements along ``axis``: that needs a device sort, not built yet.
        """
        ng = self.backend
        if isinstance(x, (int, np.integer)):
            with self._drawing():
                return self._ranks(int(x))
        pool = _as_tensor(ng, x)
        axis = shapes.normalize_axis(axis, pool.ndim)
        with self._drawing():
            order = self._ranks(pool.shape[axis])
        return _take(ng, pool, order, axis)

    def shuffle(self, x, axis=0):
        """Permute the tensor ``x`` in place along ``axis``, as
        ``numpy.random.Generator.shuffle`` (see :meth:`permutation` for the limit)."""
        if not isinstance(x, Tensor) or x.backend is not self.backend:
            raise TypeError(f"shuffle needs a tensor of this factory, not {type(x).__name__}")
        # permutation returns a new tensor: the assignment reads nothing it writes
        self.backend.assign(x, self.permutation(x, axis))


def _as_tensor(ng, x):
    """A tensor of ``ng`` holding ``x`` (its own tensors pass as they are)."""
    if isinstance(x, Expression):
        x = ng.operand(x)
        return x if hasattr(x, "strides") else ng.evaluate(x)
    return ng.array(np.asarray(x))


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
    pool = _as_tensor(ng, a)
    axis = shapes.normalize_axis(axis, pool.ndim)
    if pool.shape[axis] == 0 and count:
        raise ValueError("a cannot be empty unless no samples are taken")
    return pool, pool.shape[axis], axis


def _cdf(p, n):
    """numpy's checks of ``p``, then its cumulative sum normalised to end at 1."""
    atol = math.sqrt(np.finfo(np.float64).eps)
    host = p.get() if isinstance(p, Expression) else p
    if isinstance(host, np.ndarray) and host.dtype.kind == "f":
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
    """``numpy.take(pool, index, axis)`` without a gather kernel: a fused
    maximum over the axis of ``where(index == j, pool[j], lowest)``, exact for
    every value (NaN and -0.0 included); O(index.size * pool.size)."""
    source = ng.moveaxis(pool, axis, 0)
    n, rest, k = source.shape[0], source.shape[1:], index.ndim
    if index.size == 0 or 0 in rest:
        return ng.empty(pool.shape[:axis] + index.shape + pool.shape[axis + 1:], pool.dtype)
    hit = ng.equal(index.reshape(index.shape + (1,) * (1 + len(rest))),
                   ng.arange(n).reshape((n,) + (1,) * len(rest)))
    value = ng.astype(source, np.uint8) if pool.dtype == np.bool_ else source
    lowest = -math.inf if dtypes.is_float(value.dtype) else int(np.iinfo(value.dtype).min)
    picked = ng.evaluate(ng.astype(ng.max(ng.where(hit, value, lowest), axis=k, keepdims=False),
                                   pool.dtype))
    if axis and k:
        picked = ng.evaluate(ng.moveaxis(picked, list(range(k)), list(range(axis, axis + k))))
    return picked
