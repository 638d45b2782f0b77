# cython: language_level=3
"""The kernel launch entry: ``cuLaunchKernel`` called from C.

In: the address of libcuda's ``cuLaunchKernel`` (:func:`bind`, once), then
per launch a ``CUfunction``, grid and block, shared-memory bytes, a
``CUstream`` (0: the legacy default stream) and the kernel's arguments as
bytes.  Out: the driver's ``CUresult`` (0 on success); the caller raises.

Why a compiled entry: on the H100 machine's host (2026-11-26, 1024-element
kernel) the driver itself takes 2.45 µs per launch (launches from a C
loop); this entry adds about 0.1-0.2 µs, pycuda's ``_launch_kernel`` 0.7
and a ctypes call of ``cuLaunchKernel`` 2.2 (argument conversion).  Every
fused kernel and every hand-written one (GEMM, convolution, pooling) goes
through here, so the saving is per kernel.  Where this extension is not
built, :mod:`gpuarray.cuda.driver` makes the same calls through ctypes.

Arguments reach the kernel in one of the driver's two ways:

* :func:`launch_packed` -- every argument packed into one buffer at its
  natural offset (``CU_LAUNCH_PARAM_BUFFER_POINTER``), as the generated
  kernels' ``struct`` formats lay them out;
* :func:`launch_struct` -- one by-value struct parameter through
  ``kernelParams``, copied first to 64-byte aligned memory: the
  hand-written kernels take a struct holding ``CUtensorMap`` s, which must
  be 64-byte aligned, and which the packed form delivers misplaced.
"""
from libc.stdint cimport uintptr_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_Check, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.bytearray cimport PyByteArray_Check, PyByteArray_AS_STRING, PyByteArray_GET_SIZE

ctypedef int (*LaunchFn)(void* f, unsigned int gx, unsigned int gy, unsigned int gz,
                         unsigned int bx, unsigned int by, unsigned int bz,
                         unsigned int smem, void* stream, void** params, void** extra) nogil

# CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END
cdef void* _BUFFER_POINTER = <void*>1
cdef void* _BUFFER_SIZE = <void*>2

#: the largest struct :func:`launch_struct` passes (the GEMM's is 512 bytes)
MAX_STRUCT_BYTES = 4096

cdef LaunchFn _launch = NULL


def bind(uintptr_t address):
    """Use the ``cuLaunchKernel`` at ``address`` (from ctypes) for every launch."""
    global _launch
    _launch = <LaunchFn>address


cdef int _bytes_of(object data, char** start, Py_ssize_t* size) except -1:
    if PyByteArray_Check(data):
        start[0], size[0] = PyByteArray_AS_STRING(data), PyByteArray_GET_SIZE(data)
    elif PyBytes_Check(data):
        start[0], size[0] = PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)
    else:
        raise TypeError(f"kernel arguments must be bytes or bytearray, not {type(data).__name__}")
    return 0


cdef int _ready() except -1:
    if _launch == NULL:
        raise RuntimeError("the launch entry is not bound to cuLaunchKernel (call bind first)")
    return 0


def launch_packed(uintptr_t function, tuple grid, tuple block, object data, unsigned int smem,
                  uintptr_t stream):
    """Queue ``function`` with its arguments packed in ``data``; returns the CUresult."""
    cdef char* start
    cdef Py_ssize_t size
    cdef size_t nbytes
    cdef void* extra[5]
    _ready()
    _bytes_of(data, &start, &size)
    nbytes = size
    extra[0], extra[1] = _BUFFER_POINTER, start
    extra[2], extra[3] = _BUFFER_SIZE, &nbytes
    extra[4] = NULL
    return _launch(<void*>function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                   smem, <void*>stream, NULL, extra)


def launch_struct(uintptr_t function, tuple grid, tuple block, object data, unsigned int smem,
                  uintptr_t stream):
    """Queue ``function``, whose one parameter is the struct ``data``; returns the CUresult."""
    cdef char* start
    cdef Py_ssize_t size
    cdef char storage[4096 + 64]
    cdef void* params[1]
    _ready()
    _bytes_of(data, &start, &size)
    if size > MAX_STRUCT_BYTES:
        raise ValueError(f"a kernel's struct parameter is at most {MAX_STRUCT_BYTES} bytes "
                         f"here, not {size}")
    params[0] = <void*>((<uintptr_t>storage + 63) & ~(<uintptr_t>63))
    memcpy(params[0], start, size)
    return _launch(<void*>function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                   smem, <void*>stream, params, NULL)
