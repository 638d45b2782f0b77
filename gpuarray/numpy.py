"""``import gpuarray.numpy as gnp``: the factory's functions as a module, for ports.

In: attribute lookups (``gnp.zeros``, ``gnp.exp``, ``gnp.float32``...).
Out: the same names of the default factory, made on first use -- the GPU
factory when a GPU can be used, else the CPU one; ``GPUARRAY_DEVICE=cpu``
or ``gpu`` chooses (``gpu`` without a GPU raises, saying why).
:func:`get_array_module` returns numpy or the factory of the tensors it is
given, as CuPy's does, so one function body serves numpy arrays and
tensors.

A module-level ``__getattr__`` forwards every other name to the factory,
so ``gnp.sum(x)`` is ``default_factory().sum(x)`` and the module, the
factory and ``x.__array_namespace__()`` agree.
"""
import os

import numpy as np

from .core.array import Tensor
from .core.dtypes import ML_FLOATS
from .cpu import CPU
from .gpu import GPU, gpu_available, gpu_unavailable_reason

#: environment variable that picks the default factory
ENV = "GPUARRAY_DEVICE"
_DEFAULT = []

#: dtype names the module exposes, as numpy's
_DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}
_DTYPES.update({dt.name: dt for dt in ML_FLOATS})  # bfloat16, float8_e4m3fn, float8_e5m2
_CONSTANTS = {"e": np.e, "pi": np.pi, "inf": np.inf, "nan": np.nan, "newaxis": None}
#: the array API's double-underscore names, forwarded to the factory (others
#: stay the module's own: Python probes __path__, __file__... on modules)
_NAMESPACE_DUNDERS = frozenset(("__array_api_version__", "__array_namespace_info__"))


def default_factory():
    """The factory this module's names belong to, made on first use.

    Raises
    ------
    ValueError
        ``GPUARRAY_DEVICE`` is set to something other than cpu or gpu.
    RuntimeError
        ``GPUARRAY_DEVICE=gpu`` where no GPU can be used.
    """
    if not _DEFAULT:
        _DEFAULT.append(_make_default())
    return _DEFAULT[0]


def _make_default():
    choice = os.environ.get(ENV, "").strip().lower()
    if choice not in ("", "cpu", "gpu"):
        raise ValueError(f"{ENV} must be 'cpu' or 'gpu', not {choice!r}")
    if choice == "cpu" or (not choice and not gpu_available()):
        return CPU()
    if not gpu_available():
        raise RuntimeError(f"{ENV}=gpu, but no GPU can be used: {gpu_unavailable_reason()}")
    return GPU()


def get_array_module(*arrays):
    """numpy, or the factory of the first gpuarray tensor among ``arrays``.

    Tensors of different factories are refused: their operations cannot mix.

    Raises
    ------
    ValueError
        Tensors of two different factories.
    """
    factories = {id(a.backend): a.backend for a in arrays if isinstance(a, Tensor)}
    if len(factories) > 1:
        raise ValueError("get_array_module: the tensors come from different factories "
                         f"({', '.join(repr(f) for f in factories.values())})")
    return next(iter(factories.values())) if factories else np


def __getattr__(name):
    if name in _DTYPES:
        return _DTYPES[name]
    if name in _CONSTANTS:
        return _CONSTANTS[name]
    if name.startswith("__") and name not in _NAMESPACE_DUNDERS:
        raise AttributeError(name)
    try:
        return getattr(default_factory(), name)
    except AttributeError:
        raise AttributeError(f"module 'gpuarray.numpy' has no attribute {name!r}") from None


def __dir__():
    names = set(globals()) | set(_DTYPES) | set(_CONSTANTS)
    return sorted(names | {n for n in dir(default_factory()) if not n.startswith("_")})
