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
  be 64-byte aligned, and which the packed form delivers misplaced;
* :func:`launch_struct_cluster` -- the same in thread-block clusters of a
  size given per launch, through ``cuLaunchKernelEx`` (:func:`bind_ex`)
  with a cluster-dimension attribute (the GEMM's cluster K-split), and
  optionally as a programmatic dependent launch (the kernel may start while
  the one before it finishes; it waits for it itself).

:func:`copy_to_host` queues ``cuMemcpyDtoHAsync`` (:func:`bind_copy`) the
same way: a small download's copy (``float(t)``, ``t.get()`` of a few
values) through pycuda's wrapper took 3.1 µs of host time on the H100's
host, and the wait for the values starts only after it returns.

A :class:`PatchedLaunch` is a packed launch recorded once, whose
arguments that change between calls (pointers, scalars, counters) are
*holes* filled from a list of values on each call: the replay of a fused
assignment patches and launches in one C call, instead of a ``struct``
call per run of holes.  :data:`NO_OP_ADDRESS` is a C function with
``cuLaunchKernel``'s signature that does nothing: bound in place of the
driver (``benchmarks/host_profile.py``), it times the host path where
there is no GPU.
"""
from libc.stdint cimport int64_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_Check, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsUnsignedLongLongMask
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

# CUlaunchAttribute (an id padded to 8 bytes, a 64-byte value union) and
# CUlaunchConfig, as cuda.h lays them out
cdef struct LaunchAttribute:
    int id
    char pad[4]
    unsigned int value[16]

cdef struct LaunchConfig:
    unsigned int grid[3]
    unsigned int block[3]
    unsigned int smem
    void* stream
    LaunchAttribute* attrs
    unsigned int count

ctypedef int (*LaunchExFn)(const LaunchConfig* config, void* f, void** params,
                           void** extra) nogil

# CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
cdef int _CLUSTER_DIMENSION = 4
cdef int _PROGRAMMATIC_SERIALIZATION = 6

cdef LaunchExFn _launch_ex = NULL

ctypedef int (*CopyFn)(void* dst, unsigned long long src, size_t nbytes, void* stream) nogil

cdef CopyFn _copy_to_host = NULL


cdef int _no_op(void* f, unsigned int gx, unsigned int gy, unsigned int gz,
                unsigned int bx, unsigned int by, unsigned int bz,
                unsigned int smem, void* stream, void** params, void** extra) noexcept nogil:
    return 0


#: address of a function taking cuLaunchKernel's arguments and doing nothing
NO_OP_ADDRESS = <uintptr_t>&_no_op


def bind(uintptr_t address):
    """Use the ``cuLaunchKernel`` at ``address`` (from ctypes) for every launch."""
    global _launch
    _launch = <LaunchFn>address


def bind_ex(uintptr_t address):
    """Use the ``cuLaunchKernelEx`` at ``address`` for every cluster launch."""
    global _launch_ex
    _launch_ex = <LaunchExFn>address


def bind_copy(uintptr_t address):
    """Use the ``cuMemcpyDtoHAsync_v2`` at ``address`` for :func:`copy_to_host`."""
    global _copy_to_host
    _copy_to_host = <CopyFn>address


def copy_to_host(uintptr_t dst, uintptr_t src, size_t nbytes, uintptr_t stream):
    """Queue a copy of ``nbytes`` from device address ``src`` to host address
    ``dst`` (page-locked, for it to run asynchronously) on the ``CUstream``
    ``stream`` (0: the legacy default stream); returns the CUresult."""
    if _copy_to_host == NULL:
        raise RuntimeError("the copy entry is not bound to cuMemcpyDtoHAsync (call bind_copy first)")
    return _copy_to_host(<void*>dst, src, nbytes, <void*>stream)


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


cdef int _launch_packed(uintptr_t function, const unsigned int* grid, const unsigned int* block,
                       unsigned int smem, uintptr_t stream, char* start, size_t nbytes):
    # the driver's packed form: the buffer and its size behind the ``extra`` keys
    cdef void* extra[5]
    extra[0], extra[1] = _BUFFER_POINTER, start
    extra[2], extra[3] = _BUFFER_SIZE, &nbytes
    extra[4] = NULL
    return _launch(<void*>function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                   smem, <void*>stream, NULL, extra)


def launch_packed(uintptr_t function, tuple grid, tuple block, object data, unsigned int smem,
                  uintptr_t stream):
    """Queue ``function`` with its arguments packed in ``data``; returns the CUresult."""
    cdef char* start
    cdef Py_ssize_t size
    cdef unsigned int g[3]
    cdef unsigned int b[3]
    _ready()
    _bytes_of(data, &start, &size)
    g[0], g[1], g[2] = grid
    b[0], b[1], b[2] = block
    return _launch_packed(function, g, b, smem, stream, start, size)


cdef int _struct_parameter(object data, char* storage, void** params) except -1:
    """``params[0]``: the bytes of ``data`` copied into ``storage`` (MAX_STRUCT_BYTES
    + 64 bytes) at its first 64-byte aligned address."""
    cdef char* start
    cdef Py_ssize_t size
    _bytes_of(data, &start, &size)
    if size > MAX_STRUCT_BYTES:
        raise ValueError(f"a kernel's struct parameter is at most {MAX_STRUCT_BYTES} bytes "
                         f"here, not {size}")
    params[0] = <void*>((<uintptr_t>storage + 63) & ~(<uintptr_t>63))
    memcpy(params[0], start, size)
    return 0


def launch_struct(uintptr_t function, tuple grid, tuple block, object data, unsigned int smem,
                  uintptr_t stream):
    """Queue ``function``, whose one parameter is the struct ``data``; returns the CUresult."""
    cdef char storage[4096 + 64]
    cdef void* params[1]
    _ready()
    _struct_parameter(data, storage, params)
    return _launch(<void*>function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                   smem, <void*>stream, params, NULL)


def launch_struct_cluster(uintptr_t function, tuple grid, tuple block, object data,
                          unsigned int smem, uintptr_t stream, unsigned int cluster,
                          bint dependent=False):
    """As :func:`launch_struct`, in clusters of ``cluster`` blocks along x (no
    cluster attribute for 1), as a programmatic dependent launch if
    ``dependent``; returns the CUresult."""
    cdef char storage[4096 + 64]
    cdef void* params[1]
    cdef LaunchAttribute attributes[2]
    cdef LaunchConfig config
    cdef unsigned int count = 0
    if _launch_ex == NULL:
        raise RuntimeError("the launch entry is not bound to cuLaunchKernelEx (call bind_ex first)")
    _struct_parameter(data, storage, params)
    memset(attributes, 0, sizeof(attributes))
    if cluster > 1:
        attributes[count].id = _CLUSTER_DIMENSION
        attributes[count].value[0], attributes[count].value[1], attributes[count].value[2] = cluster, 1, 1
        count += 1
    if dependent:
        attributes[count].id = _PROGRAMMATIC_SERIALIZATION
        attributes[count].value[0] = 1
        count += 1
    config.grid[0], config.grid[1], config.grid[2] = grid
    config.block[0], config.block[1], config.block[2] = block
    config.smem, config.stream = smem, <void*>stream
    config.attrs, config.count = attributes, count
    return _launch_ex(&config, <void*>function, params, NULL)


HOLE_KINDS = {"add": ADD, "double": DOUBLE, "int": INT, "bool": BOOL, "real": REAL, "imag": IMAG}

# arguments up to this size are patched on the stack; larger ones in memory
# allocated per call (the driver takes at most 32 KB of parameters)
cdef enum:
    STACK_BYTES = 4096


cdef uint64_t _integer_bits(object value) except? 0xFFFFFFFFFFFFFFFF:
    # int(value) reduced modulo 2**64: the bits of the signed or unsigned C value
    if type(value) is not int:
        value = int(value)
    return PyLong_AsUnsignedLongLongMask(value)


cdef class PatchedLaunch:
    """A packed launch whose changing arguments are patched in on each call.

    ``launch(values, stream)`` patches a copy of the template (the object is
    shared by threads replaying one recipe) from the list ``values`` and
    launches it on the ``CUstream`` ``stream``; it returns the ``CUresult``.

    Parameters
    ----------
    function : int
        The ``CUfunction``.
    grid, block : tuple of 3 ints
    template : bytes
        The arguments packed once, holes included (their bytes are replaced).
    holes : sequence of tuples
        ``(offset, slot, kind, delta)`` for each 8-byte hole: its byte
        offset, the index of the value filling it in the list each call
        gets, its kind (a key of :data:`HOLE_KINDS`) and, for "add", the
        byte delta added to the value.
    smem : int
        Dynamic shared memory bytes.
    """

    def __init__(self, uintptr_t function, tuple grid, tuple block, bytes template, holes,
                 unsigned int smem=0):
        cdef Py_ssize_t k
        self.function, self.template, self.smem = function, template, smem
        for k in range(3):
            self.grid[k], self.block[k] = grid[k], block[k]
        holes = list(holes)
        self.holes = <Hole*>malloc(max(1, len(holes)) * sizeof(Hole))
        if self.holes == NULL:
            raise MemoryError()
        self.nholes, self.top_slot = len(holes), -1
        for k, (offset, slot, kind, delta) in enumerate(holes):
            if not 0 <= offset <= len(template) - 8:
                raise ValueError(f"hole at byte {offset} lies outside the {len(template)}-byte arguments")
            if kind not in HOLE_KINDS:
                raise ValueError(f"unknown hole kind {kind!r} (one of {', '.join(HOLE_KINDS)})")
            self.holes[k] = Hole(offset, slot, HOLE_KINDS[kind], delta)
            self.top_slot = max(self.top_slot, slot)

    def __dealloc__(self):
        free(self.holes)

    cpdef int launch(self, list values, uintptr_t stream) except? -1:
        """Patch a copy of the template from ``values`` and launch it on
        ``stream``; returns the ``CUresult``.  A C call from compiled
        callers (the dispatcher's replay cimports this class)."""
        cdef char stack[STACK_BYTES]
        cdef char* buf = stack
        cdef Py_ssize_t size = len(self.template)
        cdef int result
        _ready()
        if len(values) <= self.top_slot:
            raise IndexError(f"a launch with holes up to slot {self.top_slot} got "
                             f"{len(values)} values")
        if size > STACK_BYTES:
            buf = <char*>malloc(size)
            if buf == NULL:
                raise MemoryError()
        try:
            memcpy(buf, PyBytes_AS_STRING(self.template), size)
            self._patch(buf, values)
            result = _launch_packed(self.function, self.grid, self.block, self.smem, stream,
                                    buf, size)
        finally:
            if buf != stack:
                free(buf)
        return result

    cdef int _patch(self, char* buf, list values) except -1:
        cdef Py_ssize_t k
        cdef Hole* hole
        cdef object value
        cdef uint64_t bits
        cdef double real
        for k in range(self.nholes):
            hole = &self.holes[k]
            value = values[hole.slot]
            if hole.kind == ADD:
                bits = _integer_bits(value) + <uint64_t>hole.delta
            elif hole.kind == INT:
                bits = _integer_bits(value)
            elif hole.kind == BOOL:
                bits = 1 if value else 0
            else:
                if hole.kind == DOUBLE:
                    real = value
                elif hole.kind == REAL:
                    real = complex(value).real
                else:
                    real = complex(value).imag
                memcpy(buf + hole.offset, &real, 8)
                continue
            memcpy(buf + hole.offset, &bits, 8)
        return 0
