"""Cumulative sums and products: cumsum, cumprod, their NaN-ignoring forms, cumulative_*.

In: a tensor or expression of one factory, an axis (None: the flattened
array), an optional result dtype and ``out``.  Out: a new tensor (or
``out``) holding the running sums or products along the axis, with
numpy's result dtypes (``ops.reduction_dtype``: small integers and bool
widen to int64/uint64, floats keep theirs) and errors.

How: the factory's single-pass scan of rows (CUB's on the GPU, numpy's on
the CPU: :mod:`gpuarray.algorithms.scanning`) for every result dtype but
bool.  Else (and on a factory without one) a log-step (Hillis-Steele)
scan of fused assignments: pass k adds (multiplies) every element to the
one 2**k places before it, into a second buffer, ceil(log2 n) passes of
two kernels each (the copy of the untouched prefix and the update).
Integers wrap exactly as numpy's sequential sums do (the ring is
associative); float results differ from numpy's left-to-right order only
by rounding, and 16-bit floats accumulate in fp32, rounded once at the
end.
"""
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from . import dtypes, ops
from .array import Tensor

F32 = np.dtype(np.float32)


class ScanFunctions:
    """Mixin: numpy's cumulative sums and products (see the module docstring)."""

    def cumsum(self, a, axis=None, dtype=None, out=None):
        """Running sums along ``axis``, as ``numpy.cumsum``.

        Parameters
        ----------
        a : array_like
        axis : int, optional
            The axis to accumulate along; None flattens ``a`` first.
        dtype : numpy.dtype or str, optional
            Of the result and the accumulation (default: numpy's, int64 for
            small integers and bool).
        out : Tensor, optional
            Receives the result (same shape as it).

        Returns
        -------
        Tensor

        Raises
        ------
        numpy.exceptions.AxisError
            ``axis`` out of range.
        ValueError
            ``out`` of the wrong size.
        """
        return self._scan("add", a, axis, dtype, out, False)

    def cumprod(self, a, axis=None, dtype=None, out=None):
        """Running products along ``axis``, as ``numpy.cumprod`` (see :meth:`cumsum`)."""
        return self._scan("multiply", a, axis, dtype, out, False)

    def nancumsum(self, a, axis=None, dtype=None, out=None):
        """As :meth:`cumsum` with NaN taken as zero (``numpy.nancumsum``)."""
        return self._scan("add", self._nan_to(a, 0), axis, dtype, out, False)

    def nancumprod(self, a, axis=None, dtype=None, out=None):
        """As :meth:`cumprod` with NaN taken as one (``numpy.nancumprod``)."""
        return self._scan("multiply", self._nan_to(a, 1), axis, dtype, out, False)

    def cumulative_sum(self, x, axis=None, dtype=None, include_initial=False):
        """The array API's cumulative sum (``numpy.cumulative_sum``).

        As :meth:`cumsum`, except that ``axis`` is required for more than one
        dimension and ``include_initial`` prepends the zero of the sum.
        """
        x = self._tensor(x)
        return self._scan("add", x, _cumulative_axis(x, axis), dtype, None, include_initial)

    def cumulative_prod(self, x, axis=None, dtype=None, include_initial=False):
        """The array API's cumulative product (``numpy.cumulative_prod``); see
        :meth:`cumulative_sum` (the initial value is one)."""
        x = self._tensor(x)
        return self._scan("multiply", x, _cumulative_axis(x, axis), dtype, None, include_initial)

    def _scan(self, op, a, axis, dtype, out, include_initial):
        x = self._tensor(a)
        if axis is None or x.ndim == 0:
            if axis is not None:  # numpy takes axis 0 (or -1) of a 0-d array as of its ravel
                normalize_axis_index(operator.index(axis), 1)
            x, axis = self.ravel(x), 0
        axis = normalize_axis_index(operator.index(axis), x.ndim)
        result_dtype = (ops.reduction_dtype("sum", x.dtype) if dtype is None
                        else dtypes.as_dtype(dtype))
        shape = list(x.shape)
        shape[axis] += bool(include_initial)
        result = self._scan_output(out, tuple(shape), result_dtype)
        along = self.moveaxis(result, axis, -1)
        if include_initial:
            along[..., :1] = 0 if op == "add" else 1
            along = along[..., 1:]
        if x.shape[axis] and along.size:
            moved = self.moveaxis(x, axis, -1)
            if not self._scan_rows(op, moved, along):
                self._log_step(op, moved, along)
        return result

    def _scan_rows(self, op, x, target):
        """Hook: ``target[..., i] = x[..., 0] op ... op x[..., i]`` by a single-pass
        scan where the factory has one (:mod:`gpuarray.algorithms.scanning`);
        returns whether it did."""
        return False

    def _scan_output(self, out, shape, dtype):
        if out is None:
            return self.empty(shape, dtype)
        if not isinstance(out, Tensor) or out.backend is not self:
            raise TypeError("out must be a tensor of this factory")
        if tuple(out.shape) != shape:
            raise ValueError("provided out is the wrong size for the accumulation.")
        return out

    def _log_step(self, op, x, target):
        """``target[..., i] = x[..., 0] op ... op x[..., i]``, the last axis, in passes
        that double the reach; 16-bit floats accumulate in fp32."""
        work = F32 if dtypes.is_low_precision(target.dtype) else target.dtype
        n = x.shape[-1]
        combine = self.add if op == "add" else self.multiply
        if n == 1 or work == target.dtype and not _overlaps(x, target):
            current = target
        else:
            current = self.empty(target.shape, work)
        current[:] = x if x.dtype == work else self.astype(x, work)
        if n > 1:
            spare = self.empty(target.shape, work)
            reach = 1
            while reach < n:
                spare[..., :reach] = current[..., :reach]
                spare[..., reach:] = combine(current[..., reach:], current[..., :n - reach])
                current, spare = spare, current
                reach *= 2
        if current is not target:
            target[:] = current


def _cumulative_axis(x, axis):
    """The array API's axis rule: required beyond one dimension, else 0 by default."""
    if axis is None:
        if x.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` "
                             "argument is required.")
        return 0
    return axis


def _overlaps(x, target):
    """Whether ``x`` may share memory with ``target`` (``out`` given as the input)."""
    return isinstance(x, Tensor) and x.buffer is target.buffer
