"""Zero-copy interop: ``__cuda_array_interface__`` (v3) and DLPack (v1.0).

Out: :func:`cuda_array_interface` turns (pointer, shape, strides, dtype) into
the v3 dict; :func:`to_dlpack` wraps the same plus an ``owner`` (kept alive
while a consumer uses the memory) in a ``"dltensor"`` PyCapsule.  In:
:func:`from_dlpack` takes an object with ``__dlpack__`` (PyTorch, CuPy,
numpy...) or a capsule and returns an :class:`ExternalBuffer`, which calls
the producer's deleter once, when collected.  The structs are ``dlpack.h``
v1.0 in ctypes: nothing here needs pycuda or a compiler.  The 8-bit floats
travel with the type codes DLPack 1.1 added (its structs are 1.0's).
"""
import ctypes
import gc
import sys

import ml_dtypes
import numpy as np

from ..core.shapes import contiguous_strides

__all__ = ["cuda_array_interface", "to_dlpack", "from_dlpack", "ExternalBuffer",
           "kDLCPU", "kDLCUDA", "kDLCUDAHost", "kDLCUDAManaged"]

# -- dlpack.h v1.0 -----------------------------------------------------------
DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION = 1, 0
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool = 0, 1, 2, 4, 5, 6
#: DLPack 1.1's codes of the 8-bit floats (PyTorch's torch.float8_e4m3fn/e5m2)
kDLFloat8_e4m3fn, kDLFloat8_e5m2 = 10, 12
DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED = 1, 2
_P, _I64P = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)


def _struct(name, fields):
    return type(name, (ctypes.Structure,), {"_fields_": fields})


_u8, _u16, _i32, _u32, _u64 = (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_int32,
                               ctypes.c_uint32, ctypes.c_uint64)
DLPackVersion = _struct("DLPackVersion", [("major", _u32), ("minor", _u32)])
DLDevice = _struct("DLDevice", [("device_type", _i32), ("device_id", _i32)])  # enum: int
DLDataType = _struct("DLDataType", [("code", _u8), ("bits", _u8), ("lanes", _u16)])
DLTensor = _struct("DLTensor", [
    ("data", _P), ("device", DLDevice), ("ndim", _i32), ("dtype", DLDataType),
    ("shape", _I64P), ("strides", _I64P), ("byte_offset", _u64)])
# Each deleter takes a pointer to its own struct; a void* argument has the
# same ABI and lets one callback type serve both structs.
DLPackDeleter = ctypes.CFUNCTYPE(None, _P)
DLManagedTensor = _struct("DLManagedTensor", [
    ("dl_tensor", DLTensor), ("manager_ctx", _P), ("deleter", DLPackDeleter)])
DLManagedTensorVersioned = _struct("DLManagedTensorVersioned", [
    ("version", DLPackVersion), ("manager_ctx", _P), ("deleter", DLPackDeleter),
    ("flags", _u64), ("dl_tensor", DLTensor)])


# -- Python C-API ------------------------------------------------------------
# Private prototypes, so our argtypes cannot clash with another library's use
# of the shared ``ctypes.pythonapi`` attributes.  Capsules go in as addresses:
# a capsule being destroyed has refcount 0 and must not become a py_object.
def _capi(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_PyCapsule_New = _capi("PyCapsule_New", ctypes.py_object, _P, _P, _P)
_PyCapsule_IsValid = _capi("PyCapsule_IsValid", ctypes.c_int, _P, _P)
_PyCapsule_GetPointer = _capi("PyCapsule_GetPointer", _P, _P, _P)
_PyCapsule_SetName = _capi("PyCapsule_SetName", ctypes.c_int, _P, _P)
_Py_IncRef = _capi("Py_IncRef", None, ctypes.py_object)


def _immortal(obj):
    # Capsules point at their name and destructor and may outlive us: leak.
    _Py_IncRef(obj)
    return obj


#: capsule name -> address of its immortal C string
_NAMES = {n: ctypes.addressof(_immortal(ctypes.create_string_buffer(n))) for n in (
    b"dltensor", b"used_dltensor", b"dltensor_versioned", b"used_dltensor_versioned")}


# -- producer side -----------------------------------------------------------
# _exported: manager-struct address -> (structs, owner); keeps owner alive
# until the consumer calls the deleter or the capsule dies unconsumed.
# _held: address -> capsule, until _sweep() (run on export, import and after
# GC) sees no one else holds it: a consumer rejecting a capsule (numpy given
# CUDA memory) sets its exception, then drops it, and our destructor (Python
# code) run then would lose that exception: ctypes callbacks cannot keep it.
_exported, _held = {}, {}


@_immortal
@DLPackDeleter
def _managed_deleter(address):
    # The consumer is done.  Any thread may call this: ctypes takes the GIL.
    try:
        _exported.pop(address, None)
        _held.pop(address, None)
    except BaseException:  # noqa: BLE001 - must not raise into C
        pass


@_immortal
@DLPackDeleter
def _capsule_destructor(capsule):
    # Only a capsule still carrying its original name was never consumed; a
    # renamed ("used_...") one belongs to its consumer, who calls the deleter.
    try:
        for name in (b"dltensor", b"dltensor_versioned"):
            if _PyCapsule_IsValid(capsule, _NAMES[name]):
                _exported.pop(_PyCapsule_GetPointer(capsule, _NAMES[name]), None)
    except BaseException:  # noqa: BLE001 - must not raise into C
        pass


def _sweep(phase="stop", info=None):
    """Drop our reference to capsules no one else holds (also a gc callback)."""
    try:
        for address in list(_held) if phase == "stop" else ():
            # 2 = _held's reference + getrefcount's argument.
            if sys.getrefcount(_held[address]) <= 2:
                del _held[address]  # the capsule destructor runs here, safely
    except Exception:  # noqa: BLE001 - module globals are gone at shutdown
        pass


gc.callbacks.append(_sweep)


def to_dlpack(ptr, shape, strides_bytes, dtype, device_type, device_id,
              owner, versioned=False, readonly=False):
    """Wrap memory in a DLPack capsule, without copying.

    Parameters
    ----------
    ptr : int
        Address of element ``(0, ..., 0)``; goes whole into ``data``
        (``byte_offset`` 0), as in PyTorch and CuPy.
    shape, strides_bytes : sequence of int
        Strides in bytes, possibly negative; None means C-contiguous.
    dtype : dtype-like
        bool, (u)int8-64, float16/32/64, bfloat16, float8_e4m3fn,
        float8_e5m2, complex64/128 (else TypeError).
    device_type, device_id : int
        e.g. ``kDLCUDA, 0`` or ``kDLCPU, 0``.
    owner : object
        Kept alive until the consumer calls the deleter, or, for a capsule
        dropped unconsumed, until the next export, import or GC pass.
    versioned, readonly : bool, optional
        Make a ``"dltensor_versioned"`` capsule, which can be flagged
        read-only, instead of a ``"dltensor"`` one.

    Returns
    -------
    PyCapsule

    Raises
    ------
    ValueError
        If a stride is not a whole number of elements.
    """
    _sweep()
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    strides = _element_strides(shape, strides_bytes, dtype.itemsize)
    structs = _build_managed(ptr, shape, strides, _dl_dtype_of(dtype),
                             (device_type, device_id), versioned, readonly)
    address = ctypes.addressof(structs[0])
    _exported[address] = (structs, owner)
    name = b"dltensor_versioned" if versioned else b"dltensor"
    try:
        capsule = _PyCapsule_New(address, _NAMES[name],
                                 ctypes.cast(_capsule_destructor, _P))
    except BaseException:
        del _exported[address]
        raise
    _held[address] = capsule
    return capsule


def _build_managed(ptr, shape, strides, dl_dtype, device, versioned, readonly):
    """Fill a (versioned) managed tensor; return it and the arrays it uses."""
    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)
        managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY if readonly else 0
    else:
        managed = DLManagedTensor()
    managed.deleter = _managed_deleter
    shape_arr = (ctypes.c_int64 * len(shape))(*shape)
    # Strides always given: NULL is legal in v1.0 but not in later versions.
    strides_arr = (ctypes.c_int64 * len(shape))(*strides)
    t = managed.dl_tensor
    t.data, t.byte_offset = int(ptr) or None, 0
    t.device = DLDevice(int(device[0]), int(device[1]))
    t.ndim, t.dtype = len(shape), dl_dtype
    t.shape = ctypes.cast(shape_arr, _I64P)
    t.strides = ctypes.cast(strides_arr, _I64P)
    return managed, shape_arr, strides_arr


def _element_strides(shape, strides_bytes, itemsize):
    """Byte strides -> element strides (C-contiguous ones for None)."""
    if strides_bytes is None:
        return contiguous_strides(shape, 1)
    strides_bytes = tuple(int(s) for s in strides_bytes)
    if len(strides_bytes) != len(shape):
        raise ValueError(f"strides {strides_bytes} do not match shape {shape}")
    if any(s % itemsize for s in strides_bytes):
        raise ValueError(f"strides {strides_bytes} are not multiples of the item "
                         f"size {itemsize}; DLPack counts strides in elements")
    return tuple(s // itemsize for s in strides_bytes)


# -- dtypes ------------------------------------------------------------------
_BF16 = np.dtype(ml_dtypes.bfloat16)
#: numpy's typestr of ml_dtypes' floats is no float format (<V2, <f1...)
_NO_TYPESTR = (_BF16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))
_DL_CODES = {np.dtype(np.bool_): kDLBool, _BF16: kDLBfloat,
             np.dtype(ml_dtypes.float8_e4m3fn): kDLFloat8_e4m3fn,
             np.dtype(ml_dtypes.float8_e5m2): kDLFloat8_e5m2}
_DL_CODES.update({np.dtype(f"{kind}{n}"): code for kind, code in
                  (("i", kDLInt), ("u", kDLUInt), ("f", kDLFloat))
                  for n in (1, 2, 4, 8) if (kind, n) != ("f", 1)})  # f1: float8_e5m2's dtype.str
_DL_CODES.update({np.dtype(np.complex64): kDLComplex, np.dtype(np.complex128): kDLComplex})
_FROM_DL = {(code, dt.itemsize * 8): dt for dt, code in _DL_CODES.items()}


def _dl_dtype_of(dtype):
    """numpy dtype -> one-lane DLDataType."""
    if dtype not in _DL_CODES:
        raise TypeError(f"cannot share dtype {dtype} through DLPack: gpuarray "
                        "shares bool, integer, float16/32/64, bfloat16, float8_e4m3fn, "
                        "float8_e5m2 and complex64/128 only")
    return DLDataType(_DL_CODES[dtype], dtype.itemsize * 8, 1)


def _numpy_dtype_of(dl_dtype):
    """DLDataType -> numpy dtype; TypeError for what gpuarray cannot hold."""
    code, bits, lanes = dl_dtype.code, dl_dtype.bits, dl_dtype.lanes
    if lanes != 1:
        raise TypeError(f"DLPack vector dtypes ({lanes} lanes) are not supported")
    if (code, bits) not in _FROM_DL:
        raise TypeError(f"unsupported DLPack dtype (code={code}, bits={bits})")
    return _FROM_DL[code, bits]


# -- __cuda_array_interface__ ------------------------------------------------
def cuda_array_interface(ptr, shape, strides, dtype, readonly=False, stream=None):
    """Build a ``__cuda_array_interface__`` version 3 dict.

    Parameters
    ----------
    ptr : int
        Device address of element ``(0, ..., 0)``.
    shape, strides : sequence of int
        Strides in bytes, or None; reported as None when C-contiguous.
    dtype : dtype-like
        TypeError if it has no typestr, as bfloat16 and the 8-bit floats
        (use DLPack for them).
    readonly : bool, optional
    stream : int or None, optional
        Stream to synchronize with before use; None: no need.  0 is
        ambiguous in the protocol and raises ValueError.

    Returns
    -------
    dict
        ``shape``, ``typestr``, ``data`` (``(ptr, readonly)``; ptr 0 for a
        zero-size array), ``strides``, ``version`` (3), ``stream``.
    """
    dtype = np.dtype(dtype)
    if dtype in _NO_TYPESTR:
        raise TypeError(f"{dtype} has no __cuda_array_interface__ typestr; share "
                        f"{dtype} tensors through DLPack (__dlpack__) instead")
    if dtype.kind not in "biufc" or dtype.fields is not None:
        raise TypeError(f"dtype {dtype} has no __cuda_array_interface__ typestr")
    if stream == 0:
        raise ValueError("stream 0 is ambiguous in __cuda_array_interface__; "
                         "use 1 (legacy default stream) or 2 (per-thread)")
    shape = tuple(int(n) for n in shape)
    strides = None if strides is None else tuple(int(s) for s in strides)
    if strides is not None and _is_c_contiguous(shape, strides, dtype.itemsize):
        strides = None
    return {"shape": shape, "typestr": dtype.str,
            "data": (0 if 0 in shape else int(ptr), bool(readonly)),
            "strides": strides, "version": 3, "stream": stream}


def _is_c_contiguous(shape, strides, itemsize):
    """numpy's rule: extent-1 axes and zero-size arrays ignore strides."""
    return 0 in shape or all(n == 1 or s == c for n, s, c in zip(
        shape, strides, contiguous_strides(shape, itemsize), strict=True))


# -- consumer side -----------------------------------------------------------
class ExternalBuffer:
    """Memory imported through DLPack, owned by its producer.

    Attributes: ``ptr`` (``data + byte_offset``), ``shape``, ``strides``
    (bytes; C-contiguous ones if the producer gave none), ``dtype``,
    ``device_type``, ``device_id``, ``readonly`` (versioned capsules' flag).
    The producer's deleter runs exactly once: on :meth:`release` or when the
    buffer is garbage-collected, whichever comes first.
    """

    def __init__(self, managed_address, versioned):
        managed = _parse_managed(self, managed_address, versioned)
        self._deleter = ctypes.cast(managed.deleter, _P).value
        self._managed = managed_address  # set last: now we own it

    def __int__(self):
        return self.ptr

    def release(self):
        """Hand the memory back to its producer; later calls do nothing."""
        managed, self._managed = getattr(self, "_managed", None), None
        if managed is not None and self._deleter:
            # CFUNCTYPE drops the GIL: deleters taking it (numpy's) can't deadlock.
            DLPackDeleter(self._deleter)(managed)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass


def from_dlpack(obj, stream=None):
    """Import a DLPack tensor without copying.

    Parameters
    ----------
    obj : object
        Anything with ``__dlpack__`` and ``__dlpack_device__`` (else
        TypeError), or a ``"dltensor"[_versioned]`` PyCapsule (BufferError
        if already consumed or not version 1).
    stream : int, optional
        For CUDA producers: the stream the memory will be used on, which the
        producer orders its pending work before.  Default 1 (legacy stream).

    Returns
    -------
    ExternalBuffer

    Raises
    ------
    TypeError
        For complex, vector (lanes != 1) and other unsupported dtypes; the
        capsule is then left unconsumed, for its producer to free.
    """
    _sweep()
    capsule = obj if type(obj).__name__ == "PyCapsule" else _dlpack_capsule(obj, stream)
    for name in (b"dltensor_versioned", b"dltensor"):
        if _PyCapsule_IsValid(id(capsule), _NAMES[name]):
            break
    else:
        raise BufferError("not a DLPack capsule, or one already consumed")
    address = _PyCapsule_GetPointer(id(capsule), _NAMES[name])
    buf = ExternalBuffer(address, name == b"dltensor_versioned")  # may raise
    # Renaming transfers ownership: the producer's destructor now leaves the
    # tensor alone, and buf calls its deleter.
    _PyCapsule_SetName(id(capsule), _NAMES[b"used_" + name])
    return buf


def _dlpack_capsule(obj, stream):
    """Ask a producer for a capsule, newest protocol first."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"{type(obj).__name__} does not support DLPack "
                        "(no __dlpack__ method)")
    device_type, _ = obj.__dlpack_device__()
    cuda = device_type in (kDLCUDA, kDLCUDAManaged)
    kwargs = {"stream": 1 if stream is None else stream} if cuda else {}
    try:
        return obj.__dlpack__(max_version=(DLPACK_MAJOR_VERSION,
                                           DLPACK_MINOR_VERSION), **kwargs)
    except TypeError:
        # Producers older than the 2023 array API have no max_version.
        return obj.__dlpack__(**kwargs)


def _parse_managed(buf, address, versioned):
    """Fill ``buf``'s attributes from a managed tensor; return the struct."""
    if versioned:
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != DLPACK_MAJOR_VERSION:
            raise BufferError(f"unsupported DLPack version {managed.version.major}"
                              f".{managed.version.minor}")
        buf.readonly = bool(managed.flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    else:
        managed, buf.readonly = DLManagedTensor.from_address(address), False
    t = managed.dl_tensor
    buf.dtype = _numpy_dtype_of(t.dtype)
    buf.shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        buf.strides = tuple(t.strides[i] * buf.dtype.itemsize for i in range(t.ndim))
    else:
        buf.strides = contiguous_strides(buf.shape, buf.dtype.itemsize)
    buf.ptr = (t.data or 0) + t.byte_offset
    buf.device_type, buf.device_id = t.device.device_type, t.device.device_id
    return managed
