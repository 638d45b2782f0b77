"""numpy functions built from views and the fused operations: isclose, allclose,
array_equal, array_equiv, amax, amin, diff, outer, flip.

In: tensors or expressions of one factory.  Out: views (``flip``), lazy
op-trees (``isclose``, ``diff``, ``outer``), which fuse into whatever
assignment consumes them, or a Python bool (``allclose``, a host read).
Nothing here needs a kernel of its own: every result is a tree the fusion
compiler (or numpy, on the CPU factory) already evaluates.  Mixed into both
factories through :class:`ManipulationFunctions`, which also gathers
numpy's shape functions: views from :mod:`gpuarray.core.shaping` (squeeze,
expand_dims, broadcast_to, moveaxis, split...), rearrangements from
:mod:`gpuarray.core.arrangement` (roll, tile, repeat, diag, trace, tril...),
elementwise functions composed of the fused operations from
:mod:`gpuarray.core.numpy_math` (divmod, modf, frexp, ldexp, fmod, sinc,
polyval...), from :mod:`gpuarray.core.rounding` (around, fix, nan_to_num)
and :mod:`gpuarray.core.special_values` (signbit, fmax, logaddexp...),
stacks, splits and flips from :mod:`gpuarray.core.stacking`, index
helpers from :mod:`gpuarray.core.index_tricks`, statistics from
:mod:`gpuarray.core.statistics` (average, cov, corrcoef...), ``gradient``
from :mod:`gpuarray.core.calculus`, inspection (``ndim``, ``shares_memory``...)
from :mod:`gpuarray.core.inspection`, sequences and windows (``logspace``,
``hamming``, ``vander``...) from :mod:`gpuarray.core.sequences`,
``apply_along_axis``, ``fromfunction`` and ``copyto`` from
:mod:`gpuarray.core.functional`, the
NaN-ignoring reductions and ``count_nonzero`` from
:mod:`gpuarray.core.nan_reductions`, ``pad`` from :mod:`gpuarray.core.padding`,
and ``default_rng`` from :mod:`gpuarray.core.random`; the product functions
(matmul, tensordot, vecdot, inner, vdot, kron, cross, einsum) come from
:mod:`gpuarray.core.products`, the cumulative sums and products from
:mod:`gpuarray.core.scans`.
"""
import operator

import numpy as np

from . import dtypes, shapes
from .arrangement import ArrangementFunctions
from .calculus import CalculusFunctions
from .functional import FunctionalFunctions
from .inspection import InspectionFunctions
from .array import Tensor
from .index_tricks import IndexTrickFunctions
from .nan_reductions import NanReductionFunctions
from .numpy_math import NumpyMathFunctions
from .optree import Expression
from .padding import PaddingFunctions
from .products import TensorProductFunctions
from .random import RandomFunctions
from .rounding import RoundingFunctions
from .scans import ScanFunctions
from .sequences import SequenceFunctions
from .shaping import ShapingFunctions
from .special_values import SpecialValueFunctions
from .stacking import StackingFunctions
from .statistics import StatisticsFunctions

#: diff's prepend/append left out (None is a value numpy would join)
_NOT_GIVEN = object()


class ManipulationFunctions(ShapingFunctions, ArrangementFunctions, NumpyMathFunctions,
                            NanReductionFunctions, PaddingFunctions, RandomFunctions,
                            TensorProductFunctions, ScanFunctions, RoundingFunctions,
                            SpecialValueFunctions, StackingFunctions, IndexTrickFunctions,
                            StatisticsFunctions, CalculusFunctions, InspectionFunctions,
                            SequenceFunctions, FunctionalFunctions):
    """Mixin: numpy functions composed of views and elementwise operations
    (those of :mod:`gpuarray.core.shaping`, :mod:`gpuarray.core.arrangement`,
    :mod:`gpuarray.core.numpy_math`, :mod:`gpuarray.core.nan_reductions` and
    :mod:`gpuarray.core.padding`, :mod:`gpuarray.core.rounding` and
    :mod:`gpuarray.core.special_values` included; ``default_rng`` from
    :mod:`gpuarray.core.random`; the products of :mod:`gpuarray.core.products`; the
    cumulative sums and products of :mod:`gpuarray.core.scans`)."""

    def isclose(self, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise ``|a - b| <= atol + rtol * |b|``, as ``numpy.isclose``.

        Infinities are close only to an infinity of the same sign; NaN is
        close to NaN only with ``equal_nan``.  Returns a lazy bool tree.
        """
        a, b = self.operands((a, b))
        both_finite = self.logical_and(self.isfinite(a), self.isfinite(b))
        within = self.less_equal(self.absolute(a - b), atol + rtol * self.absolute(b))
        close = self.where(both_finite, within, self.equal(a, b))
        if equal_nan:
            close = self.logical_or(close, self.logical_and(self.isnan(a), self.isnan(b)))
        return close

    def allclose(self, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True when every element of :meth:`isclose` is (a host read)."""
        close = self.isclose(a, b, rtol, atol, equal_nan)
        if not close.shape or all(close.shape):
            return bool(self.evaluate(self.all(close)).get().all())
        return True

    def array_equal(self, a1, a2, equal_nan=False):
        """True when both have one shape and equal elements, as ``numpy.array_equal``
        (a host read; NaN equals NaN with ``equal_nan``)."""
        x, y = self._comparable(a1), self._comparable(a2)
        if x.shape != y.shape:
            return False
        return self._all_equal(x, y, equal_nan)

    def array_equiv(self, a1, a2):
        """True when both broadcast to one shape with equal elements (``numpy.array_equiv``)."""
        x, y = self._comparable(a1), self._comparable(a2)
        try:
            shapes.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            return False
        return self._all_equal(x, y, False)

    def amax(self, a, axis=None, keepdims=False, out=None):
        """As :meth:`max` (``numpy.amax``)."""
        return self.max(a, axis, keepdims, out)

    def amin(self, a, axis=None, keepdims=False, out=None):
        """As :meth:`min` (``numpy.amin``)."""
        return self.min(a, axis, keepdims, out)

    def _comparable(self, a):
        return a if isinstance(a, Expression) else self.array(np.asarray(a))

    def _all_equal(self, x, y, equal_nan):
        same = self.equal(x, y)
        if equal_nan and dtypes.is_inexact(x.dtype) and dtypes.is_inexact(y.dtype):
            same = self.logical_or(same, self.logical_and(self.isnan(x), self.isnan(y)))
        if 0 in tuple(same.shape):
            return True
        return bool(self.evaluate(self.all(same, axis=None, keepdims=False)).get())

    def diff(self, a, n=1, axis=-1, prepend=_NOT_GIVEN, append=_NOT_GIVEN):
        """The n-th discrete difference along ``axis``, as ``numpy.diff`` (a lazy
        tree); ``prepend``/``append`` values (scalars broadcast) are joined to
        ``a`` along ``axis`` first."""
        x = self.operand(a)
        n = operator.index(n)
        if n < 0:
            raise ValueError(f"order must be non-negative but got {n}")
        if x.ndim == 0:
            raise ValueError("diff requires input that is at least one dimensional")
        axis = shapes.normalize_axis(axis, x.ndim)
        if prepend is not _NOT_GIVEN or append is not _NOT_GIVEN:
            x = self._extended(x, axis, prepend, append)
        for _ in range(n):
            if not isinstance(x, Tensor):
                x = self.evaluate(x)  # slicing needs a tensor; one kernel per order
            head = (slice(None),) * axis
            x = x[head + (slice(1, None),)] - x[head + (slice(None, -1),)]
        return x

    def _extended(self, x, axis, prepend, append):
        """``x`` with ``prepend`` and ``append`` joined along ``axis`` (numpy's
        diff: a 0-d value is broadcast to length 1 along it)."""
        parts = []
        for value in (prepend, x, append):
            if value is _NOT_GIVEN:
                continue
            part = self._as_tensor(value)
            if part.ndim == 0:
                shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
                part = self.broadcast_to(part, shape)
            parts.append(part)
        return self.concatenate(parts, axis=axis)

    def outer(self, a, b):
        """``a.ravel()[:, None] * b.ravel()[None, :]``, as ``numpy.outer`` (a lazy tree)."""
        a, b = (self._flat(x) for x in self.operands((a, b)))
        return a[:, None] * b[None, :]

    def flip(self, a, axis=None):
        """A view of ``a`` with the order of elements along ``axis`` reversed (all axes: None)."""
        x = self._tensor(a)
        if axis is None:
            axes = range(x.ndim)
        else:
            axes = shapes.normalize_axes(axis if isinstance(axis, tuple) else (axis,), x.ndim)
        return x[tuple(slice(None, None, -1) if i in axes else slice(None)
                       for i in range(x.ndim))]

    def _as_tensor(self, a):
        """``a`` as a tensor of this factory, for functions that need stored values:
        its tensors pass, its lazy arrays give their value (run once, then kept),
        host data (any array_like) is copied in; another factory's arrays
        raise, as operands do.  Read-only: the result may be the caller's."""
        if isinstance(a, Expression):
            return self._tensor(a)
        return self.array(np.asarray(a))

    def _tensor(self, a):
        x = self.operand(a)
        return x if isinstance(x, Tensor) else x._evaluated()

    def _flat(self, x):
        x = x if isinstance(x, Tensor) else x._evaluated()
        return x.reshape(-1)
