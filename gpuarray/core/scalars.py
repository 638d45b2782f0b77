"""Scalars as operands, and numpy 2's rules for them (NEP 50).

In: Python and numpy scalars an expression meets (``A * 2``, ``A < 1000``)
-- a captured step's float as its stand-in (:mod:`.step_numbers`) -- and
the loop dtypes type resolution chose.  Out: :class:`Scalar` leaves,
whose signature holds their type and never their value (so kernels are
shared across values), and :func:`check_scalars`, which raises numpy's
OverflowError or ValueError when the tree is built, or rewrites a
comparison whose answer the scalar's value alone decides.
"""
import functools
import operator

import numpy as np

from . import dtypes
from .operand import Operand
from .signatures import new_structure_sig
from .step_numbers import StepNumber

_COMPARISONS = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
                "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}
_WEAK = {int: (int, np.dtype(np.int64)), float: (float, np.dtype(np.float64)),
         complex: (complex, np.dtype(np.complex128)), bool: (None, np.dtype(np.bool_))}
#: structural signature of a scalar of each operand type: the type, never the
#: value, as an int (:func:`~gpuarray.core.signatures.new_structure_sig`)
_SIGS = {}


def _sig_of(operand_type):
    """The signature of scalars of ``operand_type``."""
    sig = _SIGS.get(operand_type)
    if sig is None:
        sig = _SIGS[operand_type] = new_structure_sig()
    return sig


class Scalar(Operand):
    """A scalar operand.  Python scalars are weakly typed (numpy 2, NEP 50).

    ``dtype`` is the dtype the value has on its own; ``weak_type`` is the
    Python type (``int``, ``float``, ``complex``) for weak scalars, else None.
    """

    __slots__ = ("value", "weak_type", "backend", "shape", "dtype", "operand_type", "sig")
    ndim = 0
    has_gemm = False

    def __init__(self, value):
        weak = _WEAK.get(type(value))
        if weak is not None:
            # Python int and float are weakly typed; a Python bool is simply bool
            self.weak_type, self.dtype = weak
        elif type(value) is StepNumber:
            # a captured step's float, kept as itself: the recording's
            # dispatcher notes where it lands (gpuarray.core.step_numbers)
            self.weak_type, self.dtype = _WEAK[float]
        else:
            dtypes.check_scalar(value)
            if isinstance(value, np.generic):
                self.dtype, self.weak_type = dtypes.as_dtype(value.dtype), None
            else:  # a subclass of int, float or complex
                self.weak_type, self.dtype = _WEAK[next(
                    t for t in (complex, float, int) if isinstance(value, t))]
        self.value = value
        self.backend, self.shape = None, ()
        #: what numpy's type resolution sees for this operand
        self.operand_type = self.weak_type or self.dtype
        self.sig = _sig_of(self.operand_type)

    def __repr__(self):
        return f"Scalar({self.value!r})"


#: (weak type, dtype, signature) of a Python scalar of each type
_PYTHON = {t: (weak, dtype, _sig_of(weak or dtype)) for t, (weak, dtype) in _WEAK.items()}


def python_scalar(value):
    """``Scalar(value)`` for a Python ``int``, ``float``, ``complex`` or
    ``bool`` (exactly those types): the operand of ``A * 2``, made without
    the checks a numpy scalar or a subclass needs."""
    s = Scalar.__new__(Scalar)
    s.weak_type, s.dtype, s.sig = _PYTHON[type(value)]
    s.value, s.backend, s.shape = value, None, ()
    s.operand_type = s.weak_type or s.dtype
    return s


def check_scalars(name, args, loop):
    """Apply numpy 2's rules for scalar operands (NEP 50) when the tree is built.

    A Python int must convert to the loop dtype of its position, else
    numpy's OverflowError (:func:`dtypes.check_weak_int`).  Comparisons are
    the exception: an integer operand compared with a Python int beyond its
    range has one answer for every element, so the comparison is rewritten
    into an equivalent one with that answer (returned as ``(name, args)``;
    None when nothing is rewritten).  An integer raised to a negative scalar
    exponent is numpy's ValueError.  An integer *tensor* exponent is only
    known when evaluated: the CPU factory raises there (numpy does), the
    GPU cannot and gives the truncated value (0, or 1 / -1 for bases 1 / -1).
    """
    for k, a in enumerate(args):
        if type(a) is not Scalar or a.weak_type is not int:
            continue
        if name in _COMPARISONS and _beyond_integer(a.value, args[1 - k], loop[k]):
            return _constant_comparison(name, args, k, loop[k])
        low, high = _convertible(loop[k])
        if not low <= a.value <= high:
            dtypes.check_weak_int(a.value, loop[k])
    exponent = args[-1]
    if (name == "power" and type(exponent) is Scalar and loop[1].kind in "iu"
            and isinstance(exponent.value, (int, np.integer)) and exponent.value < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")
    return None


#: Python ints within this bound convert to every float and complex loop
_FLOAT_SAFE_INT = 2**1023
_FLOAT_SAFE_LOW = -_FLOAT_SAFE_INT


def float_loop_ints(args, floats):
    """True when each Python int among two operands meets a float or complex
    loop within :data:`_FLOAT_SAFE_INT`: :func:`check_scalars` has nothing
    to refuse or rewrite then, outside powers (its integer bounds and
    comparisons concern integer loops), so the common ``A * 2`` may skip
    its call.  ``floats``: for each operand, whether its loop dtype is a
    float or complex one."""
    for k in range(2):
        if type(args[k]) is Scalar:
            a = args[k]
            if a.weak_type is int and not (
                    floats[k] and _FLOAT_SAFE_LOW <= a.value <= _FLOAT_SAFE_INT):
                return False
    return True


@functools.lru_cache(maxsize=None)
def _convertible(loop_dtype):
    """Range of Python ints :func:`dtypes.check_weak_int` passes for ``loop_dtype``
    (a float loop: all below float64's overflow), so most scalars skip it."""
    if dtypes.is_float(loop_dtype) or loop_dtype.kind == "c":
        return -_FLOAT_SAFE_INT, _FLOAT_SAFE_INT
    if loop_dtype.kind == "b":  # converted through int64
        return dtypes.int_bounds(np.dtype(np.int64))
    return dtypes.int_bounds(loop_dtype)


def _beyond_integer(value, other, loop_dtype):
    """True when ``value`` lies outside the range of ``other``'s integer dtype."""
    kind = getattr(other.operand_type, "kind", None)  # a weak scalar has no dtype
    if kind is None or kind not in "iu" or loop_dtype.kind not in "iu":
        return False
    low, high = dtypes.int_bounds(loop_dtype)
    return not low <= value <= high


def _constant_comparison(name, args, k, loop_dtype):
    """``x OP value`` with ``value`` beyond x's range, as ``x <= max`` (always
    true) or ``x > max`` (always false): one fused kernel, and the bound is a
    kernel argument like any scalar.  Every x compares with ``value`` as 0 does.
    """
    x = args[1 - k]
    truth = _COMPARISONS[name](*(a.value if i == k else 0 for i, a in enumerate(args)))
    bound = Scalar(dtypes.int_bounds(loop_dtype)[1])
    return ("less_equal" if truth else "greater", (x, bound))
