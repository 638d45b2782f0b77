"""numpy's elementwise functions that the op table lacks, composed of its
operations: divmod, modf, frexp, ldexp, fmod, heaviside, sinc, polyval,
deg2rad/radians, rad2deg/degrees, fabs and float_power.

In: tensors, op-trees and scalars of one factory (host data is refused as
for any operation), and numpy's arguments.  Out: lazy op-trees -- a pair
of them for ``divmod``, ``modf`` and ``frexp`` -- which fuse into whatever
assignment consumes them; with ``out=``, the tensors given, evaluated.
No function here needs a kernel of its own: each is a tree of the fused
operations (``where``, ``trunc``, ``log2``, ``exp2``...), so the CPU
factory evaluates the same tree with numpy.

Result dtypes are numpy's: each function resolves its dtypes with the
numpy ufunc it stands for (``numpy.frexp``, ``numpy.ldexp``...), so
integer inputs become the float numpy picks, ``frexp``'s exponent is
int32 and unsupported dtypes raise numpy's TypeError.  The functions the
op table already has (``rint``, ``hypot``, ``cbrt``, ``copysign``,
``remainder``) live in :mod:`gpuarray.core.functions`.  Mixed into both
factories through :class:`gpuarray.core.manipulation.ManipulationFunctions`.
"""
import numpy as np

from . import dtypes
from .optree import Expression


class NumpyMathFunctions:
    """Mixin: numpy's elementwise functions composed of fused operations."""

    def divmod(self, x1, x2, out=None):
        """Floor quotient and remainder, as ``numpy.divmod``.

        Parameters
        ----------
        x1, x2 : array_like
            Dividend and divisor (tensors, trees or scalars; broadcast).
        out : tuple of two Tensor, optional
            Where to evaluate the quotient and the remainder.

        Returns
        -------
        (Expression, Expression)
            ``floor_divide(x1, x2)`` and ``remainder(x1, x2)``, lazy.
        """
        return self._finish_pair((self.floor_divide(x1, x2), self.mod(x1, x2)), out)

    def modf(self, x, out=None):
        """Fractional and integral parts, as ``numpy.modf``.

        Both parts have the sign of ``x``; an infinity has the fractional
        part 0 (signed), NaN gives NaN twice.

        Parameters
        ----------
        x : array_like
            Input (integers become numpy's float for them).
        out : tuple of two Tensor, optional
            Where to evaluate the two parts.

        Returns
        -------
        (Expression, Expression)
            The fractional part and the integral part, lazy.
        """
        (x,), _ = self._ufunc_operands(np.modf, (x,))
        whole = self.trunc(x)
        # x - trunc(x) is exact; copysign gives -0.0 for negative integers, as C's modf
        fraction = self.copysign(self.where(self.isinf(x), 0, self.subtract(x, whole)), x)
        return self._finish_pair((fraction, whole), out)

    def frexp(self, x, out=None):
        """Mantissa and exponent of ``x = mantissa * 2**exponent``, as ``numpy.frexp``.

        The mantissa lies in [0.5, 1) in magnitude; zeros, infinities and NaN
        are their own mantissa, with the exponent 0.

        Parameters
        ----------
        x : array_like
            Input (integers become numpy's float for them).
        out : tuple of two Tensor, optional
            Where to evaluate the mantissa and the exponent.

        Returns
        -------
        (Expression, Expression)
            The mantissa (``x``'s float dtype) and the exponent (int32), lazy.
        """
        (x,), (_, exponent_dtype) = self._ufunc_operands(np.frexp, (x,))
        mantissa, exponent, regular = self._frexp_parts(x)
        exponent = self.astype(self.where(regular, exponent, 0), exponent_dtype)
        return self._finish_pair((self.where(regular, mantissa, x), exponent), out)

    def ldexp(self, x1, x2, out=None):
        """``x1 * 2**x2``, as ``numpy.ldexp``, rounded once (subnormal results too).

        Parameters
        ----------
        x1 : array_like
            Mantissas (integers become numpy's float for them).
        x2 : array_like of integers
            Exponents.
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy; numpy's dtype (``float32`` for bfloat16 with int64 exponents).

        Raises
        ------
        TypeError
            Float or unsigned 64-bit exponents (numpy's message).
        """
        (x, n), (result_dtype,) = self._ufunc_operands(np.ldexp, (x1, x2))
        mantissa, exponent, regular = self._frexp_parts(x)
        # in a float, as fp16/bf16 are computed (fp32): no integer to wrap, and a
        # total beyond the dtype's range gives 0 or inf as it should
        wide = _wide_float(result_dtype)
        total = self.astype(exponent, wide) + self.astype(n, wide)
        # zeros, infinities and NaN are their own result (inf * 0 would be NaN)
        node = self.astype(self.where(regular, self._times_power_of_two(mantissa, total), x),
                           result_dtype)
        return self._finish(node, out)

    def fmod(self, x1, x2, out=None):
        """Remainder of truncated division, with the sign of ``x1``, as ``numpy.fmod``.

        Parameters
        ----------
        x1, x2 : array_like
            Dividend and divisor (broadcast).
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy; an integer divisor of 0 gives 0, a float one NaN, as numpy.
        """
        (a, b), (dtype,) = self._ufunc_operands(np.fmod, (x1, x2))
        if dtypes.is_float(dtype):
            # remainder of magnitudes is C's exact fmod; the sign is the dividend's
            node = self.copysign(self.mod(self.absolute(a), self.absolute(b)), a)
        else:
            # remainder takes the divisor's sign: move a nonzero result back across
            r = self.mod(a, b)
            moved = self.logical_and(r != 0, self.not_equal(r < 0, self.less(a, 0)))
            node = self.where(moved, r - b, r)
        return self._finish(node, out)

    def heaviside(self, x1, x2, out=None):
        """The Heaviside step function, as ``numpy.heaviside``.

        Parameters
        ----------
        x1 : array_like
            Input: 0 below zero, 1 above, NaN for NaN.
        x2 : array_like
            The value where ``x1`` is zero (either sign).
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy, in numpy's float dtype for the inputs.
        """
        (x, h0), _ = self._ufunc_operands(np.heaviside, (x1, x2))
        step = self.where(self.less(x, 0), 0, self.where(self.greater(x, 0), 1, h0))
        node = self.where(self.isnan(x), x, step)
        return self._finish(node, out)

    def sinc(self, x, out=None):
        """``sin(pi x) / (pi x)``, 1 at 0, as ``numpy.sinc``.

        Parameters
        ----------
        x : array_like
            Input (integers and bools give float64, as numpy's).
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy.
        """
        x = self._array_operand(x)
        y = self.multiply(x, np.pi)  # a weak float: float16 stays float16, integers become float64
        node = self.where(self.equal(x, 0), 1, self.sin(y) / y)
        return self._finish(node, out)

    def polyval(self, p, x, out=None):
        """A polynomial at ``x``, as ``numpy.polyval``, by Horner's scheme in one tree.

        Parameters
        ----------
        p : array_like or Tensor
            Coefficients, highest power first (host values become typed
            scalars of the tree, so its kernel is shared across values).
        x : array_like
            Where to evaluate it (a tensor, tree or scalar).
        out : Tensor, optional
            Where to evaluate the result.

        Returns
        -------
        Expression
            Lazy: ``(...(0 * x + p[0]) * x + p[1]) ... + p[-1]``, numpy's
            operations and dtypes (``0 * inf`` is NaN there too).

        Raises
        ------
        TypeError
            A 0-d ``p`` (numpy's message).
        """
        coefficients = self._coefficients(p)
        x = self._array_operand(x)
        if not len(coefficients):
            return self._finish(self.zeros(x.shape, x.dtype), out)
        y = self.multiply(x, self.astype(0, x.dtype))  # numpy starts from zeros_like(x)
        for c in coefficients:
            y = y * x + c
        return self._finish(y, out)

    def deg2rad(self, x, out=None):
        """Degrees to radians (``numpy.deg2rad``; integers give float64)."""
        return self._finish(self._angle(np.deg2rad, x), out)

    def rad2deg(self, x, out=None):
        """Radians to degrees (``numpy.rad2deg``)."""
        return self._finish(self._angle(np.rad2deg, x), out)

    radians = deg2rad
    degrees = rad2deg

    def fabs(self, x, out=None):
        """Absolute values as floats (``numpy.fabs``; integers give float64)."""
        (x,), _ = self._ufunc_operands(np.fabs, (x,))
        return self._finish(self.absolute(x), out)

    def float_power(self, x1, x2, out=None):
        """``x1 ** x2`` computed in float64 at least (``numpy.float_power``)."""
        (x1, x2), _ = self._ufunc_operands(np.float_power, (x1, x2))
        return self._finish(self.power(x1, x2), out)

    # -- helpers --------------------------------------------------------
    def _angle(self, ufunc, x):
        """``x`` times the factor numpy's loop uses: its C constant in float32
        (float16 and bfloat16 run in float32) or float64, exactly."""
        (x,), _ = self._ufunc_operands(ufunc, (x,))
        single = np.float32 if dtypes.is_low_precision(x.dtype) else x.dtype
        return self.multiply(x, float(ufunc(np.ones((), single))))

    def _ufunc_operands(self, ufunc, args):
        """``args`` as operands cast to the loop dtypes numpy's ``ufunc`` picks
        for them, and the loop's output dtypes (numpy's TypeError where it
        has no loop)."""
        args = self.operands(args)
        types = tuple(a.operand_type for a in args)
        # ml_dtypes promotes its floats with a Python float to float32; NEP 50 keeps them
        types = dtypes.keep_weak_float(types)
        try:
            loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout)
        except np.exceptions.DTypePromotionError as err:
            raise TypeError(str(err)) from err
        ins, outs = loop[:ufunc.nin], loop[ufunc.nin:]
        return tuple(self._cast_operand(a, dt) for a, dt in zip(args, ins)), outs

    def _cast_operand(self, a, dtype):
        """``a`` in the loop dtype: a Python scalar converted as numpy's loop
        converts it (NEP 50: OverflowError for an int that does not fit)."""
        if isinstance(a.operand_type, type):
            # a weak scalar must become a typed one: operations on it would take int64/float64
            if a.operand_type is int:
                dtypes.check_weak_int(a.value, dtype)
            return self.astype(a, dtype)
        return a if a.dtype == dtype else self.astype(a, dtype)

    def _array_operand(self, x):
        """``x`` as numpy's ``asanyarray`` sees it, for the functions numpy
        writes in Python (sinc, polyval): a Python scalar becomes typed
        (int64, float64), no longer weak."""
        x = self.operand(x)
        return self.astype(x, x.dtype) if isinstance(x.operand_type, type) else x

    def _frexp_parts(self, x):
        """``(mantissa, exponent, regular)`` of a float operand: mantissa and
        exponent (float, x's dtype) are right where ``regular`` (finite,
        nonzero) is true."""
        exponent = self.floor(self.log2(self.absolute(x))) + 1
        mantissa = self._times_power_of_two(x, -exponent)
        # log2 of a value just below a power of two may round up to the power:
        # one step either way corrects the estimate
        big = self.absolute(mantissa) >= 1
        mantissa = self.where(big, mantissa * 0.5, mantissa)
        exponent = self.where(big, exponent + 1, exponent)
        small = self.absolute(mantissa) < 0.5
        mantissa = self.where(small, mantissa * 2, mantissa)
        exponent = self.where(small, exponent - 1, exponent)
        regular = self.logical_and(self.isfinite(x), self.not_equal(x, 0))
        return mantissa, exponent, regular

    def _times_power_of_two(self, x, k):
        """``x * 2**k`` for an integral float ``k``, rounded once.

        Two factors of half the power each: one power alone overflows (2**149
        for a float32 subnormal) and exp2 is exact only away from the ends
        of the range (numpy's float32 exp2(127) is not).  The first product
        stays normal wherever the result is not 0, so only the second rounds.
        """
        half = self.floor(k * 0.5)
        return self.multiply(x, self.exp2(half)) * self.exp2(k - half)

    def _finish_pair(self, nodes, out):
        """Two lazy results, or both evaluated into ``out`` (a pair of tensors)."""
        if out is None:
            return nodes
        if not isinstance(out, tuple):
            raise TypeError("'out' must be a tuple of arrays")
        if len(out) != len(nodes):
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        return tuple(self._finish(node, o) for node, o in zip(nodes, out))

    def _coefficients(self, p):
        """polyval's coefficients: typed host scalars, or views of a tensor."""
        p = self._view_source(p) if isinstance(p, Expression) else np.asarray(p)
        if p.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if isinstance(p, np.ndarray):
            if p.ndim == 1 and p.dtype not in dtypes.ML_FLOATS:
                return list(p)  # numpy scalars: strongly typed, as numpy's loop sees them
            p = self.asarray(p)  # rows of coefficients, or ml_dtypes' (no scalar type here)
        return [p[i] for i in range(len(p))]


def _wide_float(dtype):
    """The float dtype values of ``dtype`` are computed in (fp32 for fp16/bf16)."""
    return np.dtype(np.float32) if dtypes.is_low_precision(dtype) else np.dtype(dtype)
