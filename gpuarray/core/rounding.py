"""numpy's rounding functions composed of fused operations: ``around``/``round``,
``fix``, ``nan_to_num``.

In: tensors, op-trees and scalars of one factory and numpy's arguments
(``decimals``; ``nan``, ``posinf``, ``neginf``).  Out: lazy op-trees of the
input's dtype, or ``out`` evaluated (``nan_to_num(copy=False)`` writes its
tensor in place).

How: floats round as numpy's ``around`` does -- scale by ``10**decimals``,
``rint`` (half to even), scale back, in the array's dtype -- and integers
with negative ``decimals`` round half to even in integer arithmetic (the
quotient and remainder by ``10**-decimals``).  Mixed into both factories
through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import operator

from . import dtypes, optree
from .array import Tensor


class RoundingFunctions:
    """Mixin: ``around``, ``round``, ``fix``, ``nan_to_num``."""

    def around(self, a, decimals=0, out=None):
        """``a`` rounded to ``decimals`` decimals, half to even, as ``numpy.around``.

        Parameters
        ----------
        a : array_like
        decimals : int
            Negative: to tens, hundreds...
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy, of ``a``'s dtype (integers are unchanged for ``decimals >= 0``).
        """
        x = self.operand(a)
        decimals = operator.index(decimals)
        if x.dtype.kind == "b":
            raise TypeError("ufunc 'rint' not supported for the input types")
        if dtypes.is_complex(x.dtype):  # each part, as numpy's
            node = self._from_parts([self.around(optree.elementwise(self, part, (x,)), decimals)
                                     for part in ("real", "imag")], x.dtype)
        elif not dtypes.is_float(x.dtype):
            node = x if decimals >= 0 else self._round_integers(x, 10 ** -decimals)
        else:
            # each step rounded to the dtype, as numpy's loops (16-bit floats
            # otherwise stay in fp32 inside a fused kernel)
            def typed(v):
                return self.astype(v, x.dtype)
            if decimals >= 0:
                scale = 10.0 ** decimals
                node = typed(typed(self.rint(typed(x * scale))) / scale)
            else:
                scale = 10.0 ** -decimals
                node = typed(typed(self.rint(typed(x / scale))) * scale)
        return self._finish(self.astype(node, x.dtype), out)

    def round(self, a, decimals=0, out=None):
        """As :meth:`around` (``numpy.round``)."""
        return self.around(a, decimals, out)

    def fix(self, x, out=None):
        """Round toward zero, as ``numpy.fix`` (integers unchanged)."""
        value = self.operand(x)
        node = self.trunc(value) if dtypes.is_inexact(value.dtype) else value
        return self._finish(self.astype(node, value.dtype), out)

    def nan_to_num(self, x, copy=True, nan=0.0, posinf=None, neginf=None):
        """NaN and infinities replaced by finite numbers, as ``numpy.nan_to_num``.

        Parameters
        ----------
        x : array_like
        copy : bool
            False replaces in place (``x`` must then be a tensor).
        nan : float
            For NaN.
        posinf, neginf : float, optional
            For +inf and -inf (default: the dtype's largest and smallest).

        Returns
        -------
        Expression or Tensor
            Lazy, of ``x``'s dtype (integers unchanged); ``x`` itself without copy.
        """
        value = self.operand(x)
        node = value
        if dtypes.is_complex(value.dtype):  # each part, as numpy's
            node = self._from_parts([self._finite(optree.elementwise(self, part, (value,)), nan,
                                                  posinf, neginf)
                                     for part in ("real", "imag")], value.dtype)
        elif dtypes.is_float(value.dtype):
            node = self._finite(value, nan, posinf, neginf)
        if copy:
            return node
        if not isinstance(value, Tensor):
            raise TypeError("nan_to_num(copy=False) writes into a tensor")
        self.assign(value, node)
        return value

    def _from_parts(self, parts, dtype):
        """A complex tensor from its real and imaginary parts (expressions),
        written into its part views: building it as ``re + im * 1j`` would
        turn an infinite part into NaN (``inf * 1j`` is ``nan + infj``)."""
        result = self.empty(parts[0].shape, dtype)
        result.real[...] = parts[0]
        result.imag[...] = parts[1]
        return result

    def _finite(self, value, nan, posinf, neginf):
        """Real float ``value`` with NaN and the infinities replaced (nan_to_num)."""
        info = dtypes.finfo(value.dtype)  # ml_dtypes' for bfloat16 and fp8 (numpy's refuses them)
        high = float(info.max) if posinf is None else posinf
        low = float(info.min) if neginf is None else neginf
        node = self.where(self.isnan(value), nan, value)
        node = self.where(self.logical_and(self.isinf(value), value > 0), high, node)
        node = self.where(self.logical_and(self.isinf(value), value < 0), low, node)
        return self.astype(node, value.dtype)

    def _round_integers(self, x, scale):
        """Integers to multiples of ``scale``, half to even (numpy's)."""
        quotient = x // scale
        twice = (x - quotient * scale) * 2
        odd = self.not_equal(quotient % 2, 0)
        up = self.logical_or(twice > scale, self.logical_and(twice == scale, odd))
        return (quotient + self.astype(up, x.dtype)) * scale
