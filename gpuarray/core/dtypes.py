"""The dtype table: which numpy dtypes gpuarray stores, how they promote,
and what they are called in generated CUDA C.

In: anything numpy accepts as a dtype (``np.float16``, ``"int8"``,
``gpuarray.bfloat16``...).  Out: a canonical ``numpy.dtype``, its C storage
type, the C type its arithmetic runs in, and numpy's promotion result.

float16, bfloat16 and the two 8-bit floats float8_e4m3fn and float8_e5m2
are *storage* formats: arithmetic on them runs in float32 and is rounded
when the result is stored.  bfloat16 and the 8-bit floats come from the
``ml_dtypes`` package, which also teaches numpy to convert and promote
them; what numpy then does is the spec, refusals included (``result_type``
finds no common dtype for float8_e4m3fn and float16, bfloat16, the other
8-bit float or int32, though ``add`` runs them in float32 or float64).
complex64 and complex128 are the prelude's ``ga_complex<float>`` and
``ga_complex<double>`` (a real and an imaginary part, numpy's layout).
"""
import warnings

import numpy as np
import ml_dtypes

bfloat16 = np.dtype(ml_dtypes.bfloat16)
#: the 8-bit floats of Hopper's tensor cores (ml_dtypes): 4 exponent bits
#: and 3 mantissa bits, no infinities, largest 448; 5 and 2, largest 57344
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
#: (a set: ``dtype in FLOAT8`` is asked of every product, and a tuple that
#: does not hold the dtype compares it with each member, ~35 ns apiece)
FLOAT8 = frozenset((float8_e4m3fn, float8_e5m2))
#: the float formats numpy itself lacks (ml_dtypes'); numpy's dtype kind
#: letter of float8_e5m2 is 'f', of the others 'V'
ML_FLOATS = (bfloat16, float8_e4m3fn, float8_e5m2)
#: the storage-only float formats, and the mantissa bits each keeps (the
#: most a stochastic rounding may keep)
_MANTISSA_BITS = {np.dtype(np.float16): 10, bfloat16: 7, float8_e4m3fn: 3, float8_e5m2: 2}

#: dtype -> (C storage type, C compute type)
_C_TYPES = {
    np.dtype(np.float16): ("ga_half", "float"),
    bfloat16: ("ga_bf16", "float"),
    float8_e4m3fn: ("ga_fp8e4m3", "float"),
    float8_e5m2: ("ga_fp8e5m2", "float"),
    np.dtype(np.float32): ("float", "float"),
    np.dtype(np.float64): ("double", "double"),
    np.dtype(np.int8): ("signed char", "int"),
    np.dtype(np.uint8): ("unsigned char", "unsigned int"),
    np.dtype(np.int16): ("short", "int"),
    np.dtype(np.uint16): ("unsigned short", "unsigned int"),
    np.dtype(np.int32): ("int", "int"),
    np.dtype(np.uint32): ("unsigned int", "unsigned int"),
    np.dtype(np.int64): ("long long", "long long"),
    np.dtype(np.uint64): ("unsigned long long", "unsigned long long"),
    np.dtype(np.bool_): ("bool", "bool"),
    np.dtype(np.complex64): ("ga_complex64", "ga_complex64"),
    np.dtype(np.complex128): ("ga_complex128", "ga_complex128"),
}

SUPPORTED = tuple(_C_TYPES)
_BY_NAME = {d.name: d for d in SUPPORTED}

#: the dtypes the hand-written kernels take (GEMM, convolution, pooling,
#: recurrent layers): 16-bit storage accumulates in fp32 (the 8-bit floats
#: are not among them: the FP8 GEMM takes them through its own list)
KERNEL_FLOATS = (np.dtype(np.float16), bfloat16, np.dtype(np.float32))


def as_dtype(dtype):
    """Return the canonical ``numpy.dtype`` for a supported dtype.

    Parameters
    ----------
    dtype : dtype-like
        Anything ``numpy.dtype`` accepts.

    Raises
    ------
    TypeError
        If numpy does not understand ``dtype`` or gpuarray does not store it
        (object, strings, datetimes...).
    """
    try:
        return _CANONICAL[dtype]  # a dtype, type or name met before: most calls
    except (KeyError, TypeError):  # new, or unhashable (a structured spec)
        pass
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"data type {dtype!r} not understood") from err
    if dt.byteorder == ">":
        dt = dt.newbyteorder("=")
    if dt not in _C_TYPES:
        names = ", ".join(name(d) for d in SUPPORTED)
        raise TypeError(f"gpuarray does not support dtype {dt}; supported: {names}")
    if len(_CANONICAL) < _MAX_CANONICAL and (type(dtype) in (str, type) or isinstance(dtype, np.dtype)):
        # keys equal to each other are equal dtypes (numpy compares through
        # np.dtype), so a hit is the answer np.dtype would give; other
        # arguments (objects with a dtype attribute) are not kept alive here
        _CANONICAL[dtype] = dt
    return dt


#: as_dtype's answers by argument (dtypes, scalar types, names), bounded
_CANONICAL = {}
_MAX_CANONICAL = 256


def name(dtype):
    """Short name of a supported dtype (``'float16'``, ``'bfloat16'``...)."""
    return np.dtype(dtype).name


def from_name(dtype_name):
    """The supported dtype called ``dtype_name`` (:func:`name`'s inverse; numpy
    does not know ml_dtypes' names, ``'bfloat16'``, ``'float8_e4m3fn'``...)."""
    return _BY_NAME[dtype_name]


def c_type(dtype):
    """C type that stores ``dtype`` in device memory."""
    return _C_TYPES[np.dtype(dtype)][0]


def compute_type(dtype):
    """C type that arithmetic on ``dtype`` runs in (float for fp16/bf16/fp8)."""
    return _C_TYPES[np.dtype(dtype)][1]


def is_float(dtype):
    """True for the floating dtypes, bfloat16 and the 8-bit floats included."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt in ML_FLOATS


def is_inexact(dtype):
    """True for the floating and complex dtypes (numpy's ``inexact``)."""
    return is_float(dtype) or np.dtype(dtype).kind == "c"


def is_complex(dtype):
    """True for complex64 and complex128."""
    return np.dtype(dtype).kind == "c"


def real_part(dtype):
    """The dtype of ``dtype``'s real and imaginary parts (float32 for
    complex64, float64 for complex128); a real dtype is its own."""
    dtype = np.dtype(dtype)
    if dtype.kind != "c":
        return dtype
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64)


def kind(dtype):
    """numpy's kind letter, with bfloat16 and the 8-bit floats counted as floats ('f')."""
    return "f" if is_float(dtype) else np.dtype(dtype).kind


def can_cast_same_kind(src, dst):
    """numpy's 'same_kind' casting rule, ml_dtypes' floats included as floats.

    Kinds are ordered bool < unsigned < signed < float < complex: a cast
    may move up the order or stay within a kind (any size), never down
    (int16 to uint8 is refused, as numpy's ``np.can_cast(int16, uint8,
    'same_kind')``, and so is complex to float).
    """
    order = "buifc"
    return order.index(kind(src)) <= order.index(kind(dst))


def is_low_precision(dtype):
    """True for the storage-only float formats: float16, bfloat16 and the 8-bit floats."""
    return np.dtype(dtype) in _MANTISSA_BITS


def mantissa_bits(dtype):
    """Explicit mantissa bits of a storage-only float format (10 for float16,
    7 for bfloat16, 3 for float8_e4m3fn, 2 for float8_e5m2)."""
    return _MANTISSA_BITS[np.dtype(dtype)]


def numpy_compute_dtype(dtype):
    """dtype the CPU evaluator computes ``dtype`` values in (fp32 for fp16/bf16/fp8)."""
    return np.dtype(np.float32) if is_low_precision(dtype) else np.dtype(dtype)


def finfo(dtype):
    """Machine limits of a float dtype: numpy's ``finfo``, ml_dtypes' for
    bfloat16 and the 8-bit floats (numpy's refuses them)."""
    dtype = np.dtype(dtype)
    return ml_dtypes.finfo(dtype) if dtype in ML_FLOATS else np.finfo(dtype)


def keep_weak_float(types):
    """Operand types with a Python float beside an ml_dtypes float operand
    typed as that operand (NEP 50 keeps the array's dtype; ml_dtypes'
    promotion would make it float32).

    ``types``: dtypes of tensor operands and the Python types (``int``,
    ``float``...) of scalar operands, as ``ops.resolve`` takes them.
    """
    if not any(t is float for t in types):
        return types
    ml = next((t for t in types if not isinstance(t, type) and t in ML_FLOATS), None)
    if ml is None:
        return types
    return tuple(ml if t is float else t for t in types)


def scalar_c_type(value):
    """C type used to pass a Python scalar to a kernel as an argument.

    Decided by the scalar's type, never its value, so that a recorded
    program replays for any value: a Python int always travels as a
    ``long long`` (a uint64 above 2**63 as its two's-complement bit pattern,
    which C converts back when it meets an unsigned operand), a complex
    one as a ``ga_complex128``.
    """
    if isinstance(value, (complex, np.complexfloating)):
        return "ga_complex128"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.unsignedinteger):
        return "unsigned long long"
    if isinstance(value, (int, np.integer)):
        return "long long"
    return "double"


def scalar_arg_type(ctype):
    """C type a scalar is passed as when it feeds arithmetic in ``ctype``."""
    if ctype.startswith("ga_complex"):
        return "ga_complex128"
    if ctype in ("float", "double"):
        return "double"
    if ctype.startswith("unsigned"):
        return "unsigned long long"
    return "long long"


def check_scalar(value):
    """Reject scalars gpuarray cannot put into an expression (str, None...);
    ml_dtypes' scalars (``ml_dtypes.bfloat16(2)``), no ``np.floating``, are taken."""
    if isinstance(value, (bool, int, float, complex, np.bool_, np.integer, np.floating,
                          np.complexfloating)):
        return value
    if isinstance(value, np.generic) and value.dtype in ML_FLOATS:
        return value
    raise TypeError(f"unsupported scalar operand {value!r} of type {type(value).__name__}")


def check_weak_int(value, loop_dtype):
    """Convert a Python int operand the way numpy 2 does (NEP 50), for its error.

    numpy converts a Python int into the dtype of the loop that runs, and
    raises when it does not fit: ``OverflowError: Python integer 300 out of
    bounds for uint8`` (numpy's own conversion raises here, with numpy's
    wording), past float64's range ``int too large to convert to float``.
    For a bool loop (``logical_and``) numpy converts through int64.

    Parameters
    ----------
    value : int
        The Python int operand.
    loop_dtype : numpy.dtype
        The loop dtype of its operand position (``ops.resolve``).

    Raises
    ------
    OverflowError
        When ``value`` does not convert.
    """
    if is_float(loop_dtype) or is_complex(loop_dtype):
        float(value)
    elif loop_dtype.kind == "b":
        np.int64(value)
    else:
        loop_dtype.type(value)


def int_bounds(dtype):
    """(min, max) of an integer dtype, as Python ints."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def assigned_scalar(value, dtype, created=False):
    """The scalar ``t[...] = value`` (or ``t.fill(value)``) stores into ``dtype``.

    numpy 2 converts the value as Python does: a Python int is checked
    against an integer dtype (``OverflowError: Python integer 300 out of
    bounds for uint8``), made a double for a float dtype (``OverflowError``
    past float64's range) and taken for its truth by bool; a float goes to
    an integer dtype through ``int()`` (``ValueError: cannot convert float
    NaN to integer``, ``OverflowError`` for infinity, then the int's range
    check); None is NaN for a float dtype; a string is parsed by ``float()``
    or ``int()``.  Converting here also keeps the kernel's argument a double
    or a bool, never an integer too wide for it.  Other values (tensors,
    host arrays) pass unchanged.  ``created``: as ``np.full``, which casts
    a float to an integer dtype unsafely (no error for NaN) and converts a
    Python int for a bool array through int64 (and so rejects one beyond
    int64's range).
    """
    value = _parsed(value, np.dtype(dtype), created)
    if isinstance(value, (complex, np.complexfloating)) and not is_complex(dtype):
        value = discard_imaginary(value)
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if is_float(dtype):
        return float(value)
    if np.dtype(dtype).kind == "b":
        if created:
            check_weak_int(value, np.dtype(dtype))
        return bool(value)
    check_weak_int(value, np.dtype(dtype))
    return value


def discard_imaginary(value):
    """The real part of a complex scalar stored into a real dtype, as numpy takes it.

    numpy refuses a Python complex (``float()``'s TypeError) and takes the
    real part of a numpy complex scalar with a ``ComplexWarning``.
    """
    if not isinstance(value, np.complexfloating):
        float(value)
    warn_complex_cast()
    return value.real


def warn_complex_cast():
    """numpy's warning for a complex to real cast."""
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=3)


def _parsed(value, dtype, created):
    """None, a string, or a float bound for an integer dtype, converted as numpy does."""
    if value is None or isinstance(value, (str, bytes)):
        if dtype.kind == "b":
            return bool(value)
        if dtype.kind == "c":
            return complex("nan") if value is None else complex(value)
        if is_float(dtype):
            return float("nan") if value is None else float(value)
        return int(value)
    if dtype.kind not in "iu" or not isinstance(value, (float, np.floating)):
        return value
    if created:  # np.full casts a float unsafely (copyto), NaN and all
        return np.array(value).astype(dtype)[()]
    if not isinstance(value, np.generic):
        return int(value)
    if not np.isfinite(value):  # a finite numpy float is cast as numpy casts it
        int(value)
    return value


def clip_bound_is_void(bound, dtype, upper):
    """True for a Python int clip bound that every ``dtype`` value passes.

    numpy's ``clip`` drops such a bound (its NEP 50 rule) rather than raise
    the OverflowError that converting it to an integer dtype would.
    """
    if type(bound) is not int or np.dtype(dtype).kind not in "iu":
        return False
    low, high = int_bounds(dtype)
    return bound >= high if upper else bound <= low
