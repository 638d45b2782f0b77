"""The array API standard's names that numpy's surface lacks: what makes a
factory (``x.__array_namespace__()``) a conforming namespace.

In: tensors, op-trees, array_likes, dtypes.  Out: the standard's dtype
objects and constants as factory attributes (``xp.float32``, ``xp.pi``),
its names for numpy's functions (``acos``, ``pow``, ``concat``,
``bitwise_invert``, ``matrix_transpose``...), the dtype functions
(``isdtype``, ``can_cast``, ``result_type``, ``finfo``, ``iinfo``), the
numpy functions ``reshape`` and ``transpose``, ``real`` and ``imag`` (views
of a complex tensor, as numpy's), and ``__array_namespace_info__()``.  Mixed into both factories through
:class:`gpuarray.core.backend.Backend`.
"""
import numpy as np

from . import dtypes, ops, optree
from .array import Tensor
from .optree import Expression

#: the dtypes of the namespace, by the standard's names (ml_dtypes' besides)
DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}
DTYPES.update({dt.name: dt for dt in dtypes.ML_FLOATS})
#: the namespace's dtypes the standard does not name
_NOT_STANDARD = frozenset({"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})
#: isdtype's kinds
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


class _Namespace:
    """Class attributes: the dtypes and constants (``xp.float32``, ``xp.pi``)."""

    __array_api_version__ = "2024.12"
    e, inf, nan, pi, newaxis = np.e, np.inf, np.nan, np.pi, None
    bool = DTYPES["bool"]
    int8, int16, int32, int64 = (DTYPES[f"int{n}"] for n in (8, 16, 32, 64))
    uint8, uint16, uint32, uint64 = (DTYPES[f"uint{n}"] for n in (8, 16, 32, 64))
    float16, float32, float64 = (DTYPES[f"float{n}"] for n in (16, 32, 64))
    complex64, complex128 = DTYPES["complex64"], DTYPES["complex128"]
    bfloat16 = DTYPES["bfloat16"]
    float8_e4m3fn, float8_e5m2 = DTYPES["float8_e4m3fn"], DTYPES["float8_e5m2"]

    @property
    def array_api_device(self):
        """The device this factory's arrays live on: ``"cpu"`` or ``"cuda:N"``."""
        device_id = getattr(self, "device_id", None)
        return "cpu" if device_id is None else f"cuda:{device_id}"

    def _check_device(self, device):
        """Refuse a ``device=`` argument naming another device than the factory's."""
        if device is not None and device != self.array_api_device:
            raise ValueError(f"this factory makes arrays on {self.array_api_device}, not on "
                             f"{device!r}; use the other factory")


class ArrayAPIFunctions(_Namespace):
    """Mixin: the array API's names, dtype functions and inspection."""

    def acos(self, x, /):
        """Inverse cosine (``arccos``)."""
        return self.arccos(x)

    def acosh(self, x, /):
        """Inverse hyperbolic cosine (``arccosh``)."""
        return self.arccosh(x)

    def asin(self, x, /):
        """Inverse sine (``arcsin``)."""
        return self.arcsin(x)

    def asinh(self, x, /):
        """Inverse hyperbolic sine (``arcsinh``)."""
        return self.arcsinh(x)

    def atan(self, x, /):
        """Inverse tangent (``arctan``)."""
        return self.arctan(x)

    def atan2(self, x1, x2, /):
        """Quadrant-aware inverse tangent of ``x1 / x2`` (``arctan2``)."""
        return self.arctan2(x1, x2)

    def atanh(self, x, /):
        """Inverse hyperbolic tangent (``arctanh``)."""
        return self.arctanh(x)

    def bitwise_invert(self, x, /):
        """Bitwise NOT (``invert``)."""
        return self.invert(x)

    def bitwise_left_shift(self, x1, x2, /):
        """``x1 << x2`` (``left_shift``)."""
        return self.left_shift(x1, x2)

    def bitwise_right_shift(self, x1, x2, /):
        """``x1 >> x2`` (``right_shift``)."""
        return self.right_shift(x1, x2)

    def pow(self, x1, x2, /):
        """``x1 ** x2`` (``power``)."""
        return self.power(x1, x2)

    def positive(self, x, /):
        """``+x``: ``x`` itself (numpy's TypeError for bool)."""
        return +self.operand(x)

    def concat(self, arrays, /, *, axis=0):
        """Join arrays along ``axis`` (None: flattened first), as ``concatenate``."""
        return self.concatenate(arrays, axis=axis)

    def matrix_transpose(self, x, /):
        """The last two axes swapped (a view).

        Raises
        ------
        ValueError
            Fewer than two dimensions.
        """
        x = self._view_source(x)
        if x.ndim < 2:
            raise ValueError(f"matrix_transpose needs at least 2 dimensions, not {x.ndim}")
        return self.swapaxes(x, -1, -2)

    def reshape(self, x, /, shape, *, copy=None):
        """``x`` with a new shape (a view where the layout allows), as
        ``numpy.reshape``; ``copy=True`` always copies, ``copy=False`` raises
        ValueError where a copy would be needed."""
        x = self._view_source(x)
        result = x.reshape(shape)
        if copy:
            return result.copy()
        if copy is False and result.buffer is not x.buffer:
            raise ValueError("cannot reshape without copying")
        return result

    def transpose(self, a, axes=None):
        """``a`` with its axes permuted (reversed by default), as ``numpy.transpose``."""
        return self.permute_dims(a, axes)

    def real(self, x, /):
        """The real part (``numpy.real``): of a complex tensor, a view that
        writes go through; a real tensor itself; of an expression, lazy."""
        x = self.operand(x)
        if isinstance(x, Tensor):
            return x.real
        return optree.elementwise(self, "real", (x,))

    def imag(self, x, /):
        """The imaginary part (``numpy.imag``): of a complex tensor, a view
        that writes go through; zeros for a real dtype; of an expression, lazy."""
        x = self.operand(x)
        if isinstance(x, Tensor):
            return x.imag
        return optree.elementwise(self, "imag", (x,))

    # -- dtypes ---------------------------------------------------------
    def isdtype(self, dtype, kind):
        """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's
        kind names, or a tuple of them (bfloat16 and the 8-bit floats are
        "real floating").

        Raises
        ------
        ValueError
            An unknown kind name.
        TypeError
            ``dtype`` that is not a dtype.
        """
        if not isinstance(dtype, np.dtype):
            raise TypeError(f"dtype must be a dtype, not {type(dtype).__name__}")
        if isinstance(kind, tuple):
            return any(self.isdtype(dtype, k) for k in kind)
        if isinstance(kind, str):
            if kind not in _KINDS:
                raise ValueError(f"unknown dtype kind {kind!r}")
            return dtypes.kind(dtype) in _KINDS[kind]
        return dtype == dtypes.as_dtype(kind)

    def can_cast(self, from_, to, /):
        """Whether ``from_`` (a dtype or an array) casts to ``to`` safely, as numpy's."""
        source = from_.dtype if hasattr(from_, "dtype") else dtypes.as_dtype(from_)
        return bool(np.can_cast(source, dtypes.as_dtype(to)))

    def result_type(self, *arrays_and_dtypes):
        """The dtype numpy's promotion gives (Python scalars weak, as NEP 50).

        Raises
        ------
        ValueError
            No arguments.
        """
        if not arrays_and_dtypes:
            raise ValueError("at least one array or dtype is required")
        types = [a.dtype if isinstance(a, Expression) or isinstance(a, np.ndarray)
                 else (type(a) if type(a) in (int, float, complex)
                       else dtypes.as_dtype(np.bool_ if type(a) is bool else a))
                 for a in arrays_and_dtypes]
        return ops.result_type(*types)

    def finfo(self, type, /):  # noqa: A002 - the standard's parameter name
        """Machine limits of a float or complex dtype (or of an array's): numpy's
        finfo (ml_dtypes' for bfloat16 and the 8-bit floats), its limits as
        Python floats, as the array API asks (numpy gives float32 scalars for
        float32)."""
        dtype = type.dtype if hasattr(type, "dtype") else dtypes.as_dtype(type)
        return FloatInfo(dtypes.finfo(dtype))

    def iinfo(self, type, /):  # noqa: A002 - the standard's parameter name
        """Machine limits of an integer dtype (or of an array's), numpy's iinfo."""
        return np.iinfo(type.dtype if hasattr(type, "dtype") else dtypes.as_dtype(type))

    def __array_namespace_info__(self):
        """The standard's inspection object: capabilities, devices, dtypes."""
        return NamespaceInfo(self)


def extension(factory, namespace_class):
    """The factory's instance of an extension namespace (``ng.fft``,
    ``ng.linalg``): made on first use, then the same object."""
    made = factory.__dict__.setdefault("_extensions", {})
    if namespace_class not in made:
        made[namespace_class] = namespace_class(factory)
    return made[namespace_class]


class FloatInfo:
    """numpy's finfo with ``eps``, ``max``, ``min``, ``smallest_normal``,
    ``tiny`` and ``resolution`` as Python floats; other attributes numpy's."""

    _FLOATS = frozenset({"eps", "max", "min", "smallest_normal", "tiny", "resolution", "epsneg"})

    def __init__(self, info):
        self._info = info

    def __getattr__(self, name):
        value = getattr(self._info, name)
        return float(value) if name in self._FLOATS else value

    def __repr__(self):
        return repr(self._info)


class NamespaceInfo:
    """What ``xp.__array_namespace_info__()`` returns (the array API's inspection API)."""

    def __init__(self, factory):
        self._factory = factory

    def capabilities(self):
        """Boolean indexing and data-dependent shapes are supported; up to 64 dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        """The factory's device."""
        return self._factory.array_api_device

    def devices(self):
        """The factory's one device."""
        return [self._factory.array_api_device]

    def default_dtypes(self, *, device=None):
        """float64, complex128, int64 and int64, as numpy's."""
        return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        """The standard's dtypes the namespace has, by name, of ``kind`` (as
        ``isdtype`` takes it); float16, bfloat16 and the 8-bit floats, which
        the standard does not know, are left out (they stay ``xp.float16``,
        ``xp.bfloat16``, ``xp.float8_e4m3fn``, ``xp.float8_e5m2``)."""
        return {name: dt for name, dt in DTYPES.items()
                if name not in _NOT_STANDARD and (kind is None or self._factory.isdtype(dt, kind))}
