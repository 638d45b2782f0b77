"""numpy's elementwise functions of signs, infinities, NaN and extremes, composed of
fused operations: ``signbit``, ``isposinf``, ``isneginf``, ``isreal``, ``iscomplex``,
``angle``, ``fmax``, ``fmin``, ``logaddexp``, ``logaddexp2``.

In: tensors, op-trees and scalars of one factory and numpy's arguments.
Out: lazy op-trees, or ``out`` evaluated.  ``signbit`` reads the sign of
-0.0 and of NaN through ``copysign``; ``fmax``/``fmin`` ignore a NaN where
the other operand has a number; ``logaddexp`` follows numpy's branches
(equal operands, infinities included, give ``x + log 2``; otherwise the
larger plus ``log1p(exp(-|x - y|))``; NaN stays NaN); ``isreal``,
``iscomplex`` and ``angle`` read the imaginary and real parts.
Mixed into both factories through
:class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import math

import numpy as np

from . import dtypes, optree


class SpecialValueFunctions:
    """Mixin: signs, infinities, NaN-aware extremes and log-sum-exp of two."""

    def signbit(self, x, out=None):
        """Whether the sign bit is set (-0.0 and negative NaN included), as ``numpy.signbit``."""
        value = self.operand(x)
        if dtypes.is_complex(value.dtype):
            raise TypeError("ufunc 'signbit' not supported for the input types")
        if dtypes.is_float(value.dtype):
            node = self.less(self.copysign(1.0, value), 0)
        else:
            node = self.less(value, 0)
        return self._finish(node, out)

    def isposinf(self, x, out=None):
        """Whether each element is +inf (``numpy.isposinf``).

        Raises
        ------
        TypeError
            A complex ``x`` (ambiguous, as numpy says).
        """
        value = self._real_operand(x)
        return self._finish(self.logical_and(self.isinf(value), self.greater(value, 0)), out)

    def isneginf(self, x, out=None):
        """Whether each element is -inf (``numpy.isneginf``); complex raises as :meth:`isposinf`."""
        value = self._real_operand(x)
        return self._finish(self.logical_and(self.isinf(value), self.less(value, 0)), out)

    def _real_operand(self, x):
        value = self.operand(x)
        if dtypes.is_complex(value.dtype):
            raise TypeError("This operation is not supported for complex values because "
                            "it would be ambiguous.")
        return value

    def isreal(self, x):
        """Whether each imaginary part is 0 (everywhere for a real dtype), as ``numpy.isreal``."""
        value = self.operand(x)
        if not dtypes.is_complex(value.dtype):
            return self.ones(value.shape, np.bool_)
        return self.equal(optree.elementwise(self, "imag", (value,)), 0)

    def iscomplex(self, x):
        """Whether each imaginary part is nonzero (nowhere for a real dtype), as ``numpy.iscomplex``."""
        value = self.operand(x)
        if not dtypes.is_complex(value.dtype):
            return self.zeros(value.shape, np.bool_)
        return self.not_equal(optree.elementwise(self, "imag", (value,)), 0)

    def angle(self, z, deg=False):
        """The argument of each element, in radians (degrees with ``deg``),
        as ``numpy.angle``: ``arctan2(imag, real)``, lazy."""
        value = self.operand(z)
        node = self.arctan2(optree.elementwise(self, "imag", (value,)),
                            optree.elementwise(self, "real", (value,)))
        return self.multiply(node, 180 / np.pi) if deg else node

    def fmax(self, x1, x2, out=None):
        """The larger of two, a NaN ignored where the other is a number (``numpy.fmax``)."""
        return self._finish(self._nan_ignoring(x1, x2, self.maximum), out)

    def fmin(self, x1, x2, out=None):
        """The smaller of two, a NaN ignored where the other is a number (``numpy.fmin``)."""
        return self._finish(self._nan_ignoring(x1, x2, self.minimum), out)

    def logaddexp(self, x1, x2, out=None):
        """``log(exp(x1) + exp(x2))`` without overflow, as ``numpy.logaddexp``."""
        return self._finish(self._log_add(x1, x2, np.logaddexp, math.log(2.0), False), out)

    def logaddexp2(self, x1, x2, out=None):
        """``log2(2**x1 + 2**x2)`` without overflow, as ``numpy.logaddexp2``."""
        return self._finish(self._log_add(x1, x2, np.logaddexp2, 1.0, True), out)

    def _nan_ignoring(self, x1, x2, extreme):
        a, b = self.operands((x1, x2))
        node = extreme(a, b)
        if not dtypes.is_inexact(node.dtype):
            return node
        return self.where(self.isnan(a), b, self.where(self.isnan(b), a, node))

    def _log_add(self, x1, x2, ufunc, equal_term, base_two):
        (a, b), (dtype,) = self._ufunc_operands(ufunc, (x1, x2))
        difference = a - b
        if base_two:
            tail = self.log1p(self.exp2(-self.absolute(difference))) / math.log(2.0)
        else:
            tail = self.log1p(self.exp(-self.absolute(difference)))
        node = self.where(self.equal(a, b), a + equal_term, self.maximum(a, b) + tail)
        return self.astype(node, dtype)
