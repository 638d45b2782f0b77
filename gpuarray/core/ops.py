"""The op table: every operation an op-tree node can hold.

In: an op name and the dtypes (or weak Python scalar types) of its
operands.  Out: an :class:`OpSpec` saying how many operands it takes,
whether it is elementwise or a reduction, the numpy function that is its
specification (the CPU evaluator runs it, and its type resolution decides
result dtypes, so promotion and the TypeErrors for unsupported dtypes are
numpy's own), and the name of the CUDA device function in
``fusion/prelude.cuh`` that implements it.
"""
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import dtypes


@dataclass(frozen=True)
class OpSpec:
    """One operation.

    Attributes
    ----------
    name : str
        Public name (``ng.<name>``) and op-tree label.
    arity : int
        Number of operands.
    kind : str
        ``"ew"`` elementwise, ``"red"`` reduction.
    ufunc : callable
        numpy ufunc whose type resolution gives the loop dtypes.
    numpy : callable
        numpy implementation used by the CPU evaluator.
    """

    name: str
    arity: int
    kind: str
    ufunc: object
    numpy: object

    @property
    def c_name(self):
        """Device function implementing the op (an overload set in the prelude)."""
        return "ga_" + self.name


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _special(func):
    """numpy implementation for functions numpy lacks, exact in the input dtype."""
    def run(x):
        # frompyfunc gives an object array, or a bare Python float for 0-d input
        return np.asarray(func(x.astype(np.float64)), np.float64).astype(x.dtype)
    return run


def _sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


def _rsqrt(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


_UFUNC_OPS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": np.true_divide, "floor_divide": np.floor_divide, "mod": np.remainder,
    "power": np.power, "negative": np.negative, "absolute": np.absolute,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "maximum": np.maximum, "minimum": np.minimum, "reciprocal": np.reciprocal,
    "square": np.square, "sqrt": np.sqrt, "cbrt": np.cbrt, "exp": np.exp,
    "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan,
    "arctan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
    "sign": np.sign, "copysign": np.copysign, "hypot": np.hypot, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "logical_not": np.logical_not, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "invert": np.invert,
    "left_shift": np.left_shift, "right_shift": np.right_shift, "gcd": np.gcd, "lcm": np.lcm,
    "conjugate": np.conjugate, "nextafter": np.nextafter, "spacing": np.spacing,
}

#: ops that work in the units of the dtype itself: float16, bfloat16 and
#: fp8 values, which fused kernels and the CPU evaluator hold in float32, are
#: rounded to their format and stepped there
STORAGE_PRECISION = frozenset({"nextafter", "spacing"})

#: functions numpy lacks: (type resolution borrowed from, implementation)
_CUSTOM_OPS = {
    "rsqrt": (np.sqrt, _rsqrt),
    "erf": (np.sqrt, _special(_erf)),
    "erfc": (np.sqrt, _special(_erfc)),
    "sigmoid": (np.sqrt, _sigmoid),
    "relu": (np.maximum, _relu),
    # complex -> its real dtype, a real dtype kept: absolute's resolution
    "real": (np.absolute, np.real),
    "imag": (np.absolute, np.imag),
}

#: ops with a complex loop in numpy's resolution but none here: relu (an
#: order-based clamp), and erf/erfc (no complex definition in the prelude)
_REAL_ONLY = frozenset({"relu", "erf", "erfc"})

#: reductions: (numpy implementation taking axis= and keepdims=)
_REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
    "argmax": np.argmax, "argmin": np.argmin, "any": np.any, "all": np.all,
}

OPS = {}
for _name, _uf in _UFUNC_OPS.items():
    OPS[_name] = OpSpec(_name, _uf.nin, "ew", _uf, _uf)
for _name, (_uf, _impl) in _CUSTOM_OPS.items():
    OPS[_name] = OpSpec(_name, 1, "ew", _uf, _impl)
for _name, _impl in _REDUCTIONS.items():
    OPS[_name] = OpSpec(_name, 1, "red", None, _impl)

ELEMENTWISE = tuple(name for name, spec in OPS.items() if spec.kind == "ew")
REDUCTIONS = tuple(_REDUCTIONS)
#: reductions users define (``ng.ReductionKernel``): op name -> its combiner,
#: which the fusion compiler emits (``c_name``, ``identity_c``,
#: ``definition()``); one entry per code and types, added by gpuarray.userkernels
USER_REDUCTIONS = {}


def operand_type(dtype_or_scalar):
    """What type resolution sees: a dtype, or ``int``/``float``/``bool`` for a weak scalar."""
    if isinstance(dtype_or_scalar, type):
        return dtype_or_scalar
    return np.dtype(dtype_or_scalar)


@lru_cache(maxsize=None)
def resolve(name, operand_types):
    """Loop dtypes of an elementwise op, numpy's way.

    Parameters
    ----------
    name : str
        Op name.
    operand_types : tuple
        ``numpy.dtype`` of each tensor operand, or the Python type
        (``int``, ``float``, ``bool``) of a scalar operand, which numpy 2
        treats as weakly typed.

    Returns
    -------
    (tuple of numpy.dtype, numpy.dtype)
        The dtypes the operands are cast to, and the result dtype.

    Raises
    ------
    TypeError
        numpy's own error when no loop exists for these dtypes.
    """
    spec = OPS[name]
    types = operand_types
    # ml_dtypes promotes bfloat16 and the 8-bit floats with a Python float to
    # float32; NEP 50 keeps the array's dtype
    types = dtypes.keep_weak_float(types)
    if all(isinstance(t, type) for t in types):
        # only Python scalars: numpy makes them default-typed arrays first (its
        # comparison ufuncs would otherwise resolve two weak ints to an object loop)
        types = tuple(np.dtype(t) for t in types)
    if spec.ufunc.nin != spec.arity:
        # relu resolves as maximum(x, x): it keeps the input dtype
        types = types * spec.ufunc.nin
    if name in _REAL_ONLY and any(np.dtype(t).kind == "c" for t in types):
        raise TypeError(f"ufunc '{name}' not supported for the input types: "
                        "gpuarray defines it for real numbers only")
    try:
        loop = spec.ufunc.resolve_dtypes(types + (None,))[-spec.arity - 1:]
    except np.exceptions.DTypePromotionError as err:
        raise TypeError(str(err)) from err
    except TypeError as err:
        raise TypeError(f"{name}: {err}") from err
    return tuple(loop[:-1]), loop[-1]


@lru_cache(maxsize=None)
def promote(*operand_types):
    """Common dtype of several operands (numpy's ``result_type``, weak scalars included)."""
    result = operand_types[0]
    for t in operand_types[1:]:
        if isinstance(result, type) and isinstance(t, type):  # two weak scalars
            result = next(k for k in (complex, float, int) if k in (result, t))
        else:  # add's promotion is numpy's result_type (bool + bool stays bool)
            result = resolve("add", (result, t))[1]
    return np.dtype(result)


@lru_cache(maxsize=None)
def result_type(*operand_types):
    """:func:`promote`, refusing as numpy's ``result_type`` refuses: ml_dtypes'
    floats have ufunc loops beside dtypes they share no common dtype with
    (``float8_e4m3fn + float16`` runs in float32), but ``result_type``,
    ``concatenate`` and ``where`` raise numpy's ``DTypePromotionError`` there."""
    strong = [t for t in operand_types if not isinstance(t, type)]
    if any(t in dtypes.ML_FLOATS for t in strong):
        np.result_type(*strong)
    return promote(*operand_types)


@lru_cache(maxsize=None)
def reduction_dtype(name, dtype):
    """Result dtype of a reduction of ``dtype`` values, as numpy gives it."""
    if name in ("argmax", "argmin"):
        return np.dtype(np.int64)
    if name in ("any", "all"):
        return np.dtype(bool)
    if name in ("max", "min"):
        return np.dtype(dtype)
    if dtypes.is_low_precision(dtype):
        return np.dtype(dtype)
    return np.dtype(OPS[name].numpy(np.ones(1, dtype)).dtype)
