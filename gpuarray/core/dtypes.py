"""The dtype table: which numpy dtypes gpuarray stores, how they promote,
and what they are called in generated CUDA C.

In: anything numpy accepts as a dtype (``np.float16``, ``"int8"``,
``gpuarray.bfloat16``...).  Out: a canonical ``numpy.dtype``, its C storage
type, the C type its arithmetic runs in, and numpy's promotion result.

float16 and bfloat16 are *storage* formats: arithmetic on them runs in
float32 and is rounded when the result is stored.  bfloat16 comes from the
``ml_dtypes`` package, which also teaches numpy to convert and promote it.
"""
import numpy as np
import ml_dtypes

bfloat16 = np.dtype(ml_dtypes.bfloat16)

#: dtype -> (C storage type, C compute type)
_C_TYPES = {
    np.dtype(np.float16): ("ga_half", "float"),
    bfloat16: ("ga_bf16", "float"),
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
}

SUPPORTED = tuple(_C_TYPES)


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
        (complex, object, strings, datetimes...).
    """
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"data type {dtype!r} not understood") from err
    if dt.byteorder == ">":
        dt = dt.newbyteorder("=")
    if dt not in _C_TYPES:
        names = ", ".join(name(d) for d in SUPPORTED)
        raise TypeError(f"gpuarray does not support dtype {dt}; supported: {names}")
    return dt


def name(dtype):
    """Short name of a supported dtype (``'float16'``, ``'bfloat16'``...)."""
    return np.dtype(dtype).name


def c_type(dtype):
    """C type that stores ``dtype`` in device memory."""
    return _C_TYPES[np.dtype(dtype)][0]


def compute_type(dtype):
    """C type that arithmetic on ``dtype`` runs in (float for fp16/bf16)."""
    return _C_TYPES[np.dtype(dtype)][1]


def is_float(dtype):
    """True for the floating dtypes, bfloat16 included."""
    dt = np.dtype(dtype)
    return dt == bfloat16 or dt.kind == "f"


def kind(dtype):
    """numpy's kind letter, with bfloat16 counted as a float ('f')."""
    return "f" if is_float(dtype) else np.dtype(dtype).kind


def can_cast_same_kind(src, dst):
    """numpy's 'same_kind' casting rule, bfloat16 included as a float."""
    order = "biuf"
    ks, kd = kind(src), kind(dst)
    if ks == kd or order.index(ks) < order.index(kd):
        return True
    return ks == "u" and kd == "i"


def is_low_precision(dtype):
    """True for the storage-only float formats, float16 and bfloat16."""
    return np.dtype(dtype) in (np.dtype(np.float16), bfloat16)


def numpy_compute_dtype(dtype):
    """dtype the CPU evaluator computes ``dtype`` values in (fp32 for fp16/bf16)."""
    return np.dtype(np.float32) if is_low_precision(dtype) else np.dtype(dtype)


def scalar_c_type(value):
    """C type used to pass a Python scalar to a kernel as an argument."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "long long" if value < 2**63 else "unsigned long long"
    return "double"


def scalar_arg_type(ctype):
    """C type a scalar is passed as when it feeds arithmetic in ``ctype``."""
    if ctype in ("float", "double"):
        return "double"
    if ctype.startswith("unsigned"):
        return "unsigned long long"
    return "long long"


def check_scalar(value):
    """Reject scalars gpuarray cannot put into an expression (complex, str...)."""
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value
    raise TypeError(f"unsupported scalar operand {value!r} of type {type(value).__name__}")
