"""Driver calls pycuda lacks, made through ctypes on libcuda: modules, kernels, launches.

In: a cubin and a kernel's arguments as bytes.  Out: loaded modules and
:class:`Kernel` s launched on this thread's stream, and whether the
current context hit an unrecoverable (sticky) error.  The libcuda handle
lives here (:func:`libcuda`); the copy engine's tensor maps are encoded
through it by :mod:`gpuarray.cuda.tensor_maps`.

Every kernel the library launches -- generated (fused) and hand-written --
is loaded and launched here.  A launch goes through the compiled entry
:mod:`gpuarray.cuda.launch_entry` where it is built (``cuLaunchKernel``
called from C: about 0.1 µs over the driver's own cost, against 0.7 for
pycuda's launch and 2.2 for a ctypes call, measured on the H100 machine;
``docs/host.rst`` has the figures), else through ctypes.  Arguments go in
packed (``CU_LAUNCH_PARAM_BUFFER_POINTER``, the generated kernels) or as
one by-value struct through ``kernelParams`` (the hand-written kernels: a
64-byte aligned struct holding tensor maps arrives misplaced the packed
way).  Kernels launched in thread-block clusters of a size chosen per call
(:class:`ClusterKernel`) go through ``cuLaunchKernelEx``, by the same two
routes.  Memory and contexts stay with pycuda.
"""
import ctypes
import ctypes.util

from . import stream

_lib = []


class DriverError(RuntimeError):
    """A driver call failed; the message names the call and the CUresult.

    ``result`` is the CUresult (an int), when a driver call returned one.
    """

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


#: CUDA_ERROR_OUT_OF_MEMORY
OUT_OF_MEMORY = 2


def libcuda():
    """The driver library (ctypes), loaded once, with the argument types of the calls
    made through it (here and in :mod:`gpuarray.cuda.tensor_maps`)."""
    if not _lib:
        name = ctypes.util.find_library("cuda") or "libcuda.so.1"
        lib = ctypes.CDLL(name)
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        lib.cuLaunchCooperativeKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p]
        lib.cuLaunchKernelEx.argtypes = [ctypes.c_void_p] * 4
        lib.cuOccupancyMaxActiveClusters.argtypes = [ctypes.c_void_p] * 3
        lib.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t,
                                         ctypes.c_void_p]
        lib.cuMemcpyDtoHAsync_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t,
                                             ctypes.c_void_p]
        lib.cuTensorMapEncodeTiled.restype = ctypes.c_int
        lib.cuTensorMapEncodeTiled.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
            ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.cuTensorMapEncodeIm2col.restype = ctypes.c_int
        lib.cuTensorMapEncodeIm2col.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.c_uint32,
            ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
            ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _lib.append(lib)
    return _lib[0]


def _error_text(getter, result):
    text = ctypes.c_char_p()
    getter(result, ctypes.byref(text))
    return text.value.decode() if text.value else "unknown"


def _check(result, what):
    if result != 0:
        raise DriverError(f"{what} failed: {_error_text(libcuda().cuGetErrorName, result)} "
                          f"({result})", result)


#: CUresults that leave a context unusable: after a kernel faulted, every
#: later call in the context returns the same error until the process ends
#: (illegal address, device assert, stack error, illegal instruction,
#: misaligned address, invalid address space, invalid PC, launch failed)
STICKY_ERRORS = frozenset({700, 710, 714, 715, 716, 717, 718, 719})


def sticky_error():
    """Why the calling thread's context is unusable, or None if it is not.

    Returns
    -------
    str or None
        The driver's description of the sticky error (e.g. "an illegal
        memory access was encountered"), found by synchronizing the context.
    """
    lib = libcuda()
    result = lib.cuCtxSynchronize()
    if result in STICKY_ERRORS:
        return _error_text(lib.cuGetErrorString, result)
    return None


def load_module(path):
    """Load a cubin or fatbin into the current context; returns its handle."""
    module = ctypes.c_void_p()
    _check(libcuda().cuModuleLoad(ctypes.byref(module), str(path).encode()), f"loading {path}")
    return module


def load_module_data(image):
    """Load a cubin held in memory (bytes) into the current context; returns its handle.

    Raises :class:`DriverError`, whose ``result`` is :data:`OUT_OF_MEMORY`
    when the device had no room for the module's code.
    """
    module = ctypes.c_void_p()
    _check(libcuda().cuModuleLoadData(ctypes.byref(module), image), "loading a compiled kernel")
    return module


class Kernel:
    """One ``__global__`` function of a loaded module.

    Parameters
    ----------
    module : ctypes.c_void_p
        From :func:`load_module` or :func:`load_module_data`.
    name : str
        The kernel's (unmangled) name.
    smem : int
        Dynamic shared memory bytes its launches may ask for.
    arg_format, source : str, optional
        A generated kernel's ``struct`` format of its packed arguments and
        its CUDA source (reports and tests read them).
    """

    _MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    _NON_PORTABLE_CLUSTERS = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    #: the largest cluster its launches may ask for (8: the portable limit)
    max_cluster = 8

    def __init__(self, module, name, smem=0, arg_format=None, source=None):
        self.name, self.arg_format, self.source = name, arg_format, source
        self.handle = ctypes.c_void_p()
        _check(libcuda().cuModuleGetFunction(ctypes.byref(self.handle), module, name.encode()),
               f"looking up kernel {name}")
        self.address = self.handle.value
        self.smem = 48 * 1024
        self.allow_smem(smem)

    def allow_smem(self, smem):
        """Let launches ask for ``smem`` bytes of dynamic shared memory."""
        if smem > self.smem:
            # blocks get more than 48 KB of shared memory only on request
            _check(libcuda().cuFuncSetAttribute(self.handle, self._MAX_DYNAMIC_SHARED, smem),
                   f"raising {self.name}'s shared memory to {smem} bytes")
            self.smem = smem

    def allow_large_clusters(self):
        """Let launches ask for clusters of up to 16 blocks (sm_90: a cluster's
        blocks share one GPC, and only some GPCs hold 16 of them: ask
        :meth:`ClusterKernel.max_active` how many fit)."""
        if self.max_cluster < 16:
            _check(libcuda().cuFuncSetAttribute(self.handle, self._NON_PORTABLE_CLUSTERS, 1),
                   f"allowing {self.name} clusters of 16 blocks")
            self.max_cluster = 16

    def launch(self, grid, block, data, smem):
        """Queue the kernel on this thread's stream; its one parameter is the struct ``data`` (bytes)."""
        result = _entry()[1](self.address, grid, block, data, smem, stream.launch_handle())
        if result:
            _check(result, f"launching {self.name}")

    def launch_packed(self, grid, block, data, smem=0):
        """Queue the kernel on this thread's stream with its arguments packed in
        ``data`` (bytes or bytearray, laid out by ``arg_format``)."""
        result = _entry()[0](self.address, grid, block, data, smem, stream.launch_handle())
        if result:
            _check(result, f"launching {self.name}")

    def patched_launch(self, grid, block, template, holes, smem=0):
        """A recorded packed launch of this kernel whose holes are filled per call.

        Returns a :class:`~gpuarray.cuda.launch_entry.PatchedLaunch`, called
        as ``launch(values, stream_handle)`` and returning the ``CUresult``
        (:meth:`check_launch` raises for it), or None where the compiled
        entry is not built: the caller then patches a copy of ``template``
        itself and calls :meth:`launch_packed`.
        """
        if _entry()[0] is _ctypes_packed:
            return None
        from . import launch_entry
        return launch_entry.PatchedLaunch(self.address, grid, block, template, holes, smem)

    def check_launch(self, result):
        """Raise :class:`DriverError` for a failed launch's ``CUresult``."""
        _check(result, f"launching {self.name}")

    def clustered(self, size, dependent=False):
        """This kernel launched in thread-block clusters of ``size`` blocks along x,
        as a programmatic dependent launch if ``dependent`` (a :class:`ClusterKernel`)."""
        return ClusterKernel(self, size, dependent)

    def launch_cooperative(self, grid, block, data, smem):
        """As :meth:`launch`, with every block resident at once (a kernel with a
        grid-wide barrier); the driver refuses a grid that cannot be."""
        params, _keep = _parameter_block(data)
        _check(libcuda().cuLaunchCooperativeKernel(self.handle, *grid, *block, smem,
                                                   stream.current_handle(), params),
               f"launching {self.name} cooperatively")


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuLaunchKernelEx's first argument)."""

    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("count", ctypes.c_uint)]


class ClusterKernel:
    """A :class:`Kernel` launched in thread-block clusters of ``size`` blocks along x,
    and, if ``dependent``, as a programmatic dependent launch.

    The cluster size is a launch attribute (``cuLaunchKernelEx``), so one
    compiled kernel serves every size: it reads the size of its cluster at
    run time (``%cluster_nctarank``).  Sizes up to 8 are portable, up to 16
    once the kernel allows them (:meth:`Kernel.allow_large_clusters`); the
    grid's x extent must be a multiple of ``size``; a size of 1 launches
    plain blocks.

    A dependent launch (programmatic stream serialization) lets the kernel
    start while the kernel before it in the stream finishes, so that its
    launch and set-up overlap that kernel's last wave.  Only for kernels
    that wait for it themselves (``griddepcontrol.wait`` before their first
    global access: the sm90 products and convolutions, ``gemm_sm90.cuh``);
    any other would read and write memory the previous kernel still uses.
    """

    _CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    _PROGRAMMATIC_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION

    def __init__(self, kernel, size, dependent=False):
        largest = kernel.max_cluster
        if not 1 <= size <= largest:
            raise ValueError(f"a cluster of {kernel.name} has 1 to {largest} blocks, not {size}"
                             + ("" if largest > 8 else " (the portable limit)"))
        self.kernel, self.size, self.name = kernel, size, kernel.name
        self.dependent = bool(dependent)

    def max_active(self, block, smem):
        """How many clusters of this kernel the GPU runs at once
        (``cuOccupancyMaxActiveClusters``): a cluster's blocks share one GPC,
        so this can be less than the multiprocessors over ``size``."""
        count = ctypes.c_int()
        config = _LaunchConfig((self.size, 1, 1), block, smem, None, *_launch_attributes(self.size, False))
        _check(libcuda().cuOccupancyMaxActiveClusters(ctypes.byref(count), self.kernel.handle,
                                                      ctypes.byref(config)),
               f"asking how many clusters of {self.size} blocks of {self.name} fit")
        return count.value

    def launch(self, grid, block, data, smem):
        """As :meth:`Kernel.launch`."""
        if grid[0] % self.size:
            raise ValueError(f"a grid of {grid[0]} blocks is not a whole number of clusters "
                             f"of {self.size}")
        result = _entry()[2](self.kernel.address, grid, block, data, smem, stream.launch_handle(),
                             self.size, self.dependent)
        if result:
            _check(result, f"launching {self.name} in clusters of {self.size}")


def memset_d32(ptr, value, count):
    """Queue setting ``count`` 32-bit words at device address ``ptr`` to ``value``
    on this thread's stream."""
    _check(libcuda().cuMemsetD32Async(ptr, value, count, stream.current_handle()),
           "cuMemsetD32Async")


_entries = []


def _entry():
    """(launch_packed, launch_struct, launch_struct_cluster, copy_to_host):
    the compiled entry's, or ctypes' where it is not built."""
    if not _entries:
        _entries.append(_compiled_entry() or CTYPES_ENTRY)
    return _entries[0]


def copy_to_host_async(dst, src, nbytes, stream_handle):
    """Queue a copy of ``nbytes`` from device address ``src`` to host address
    ``dst`` on the ``CUstream`` ``stream_handle`` (0: the legacy default
    stream), through the compiled entry where it is built.  Asynchronous
    only into page-locked memory; the caller waits before reading.

    Raises
    ------
    DriverError
        The driver refused the copy.
    """
    _check(_entry()[3](dst, src, nbytes, stream_handle), "copying device memory to the host")


def _compiled_entry():
    try:
        from . import launch_entry
    except ImportError:
        return None
    launch_entry.bind(ctypes.cast(libcuda().cuLaunchKernel, ctypes.c_void_p).value)
    launch_entry.bind_ex(ctypes.cast(libcuda().cuLaunchKernelEx, ctypes.c_void_p).value)
    launch_entry.bind_copy(ctypes.cast(libcuda().cuMemcpyDtoHAsync_v2, ctypes.c_void_p).value)
    return (launch_entry.launch_packed, launch_entry.launch_struct, launch_entry.launch_struct_cluster,
            launch_entry.copy_to_host)


def entry_name():
    """Which launch entry kernels go through: "compiled" or "ctypes"."""
    return "ctypes" if _entry()[0] is _ctypes_packed else "compiled"


def _ctypes_copy(dst, src, nbytes, stream_handle):
    return libcuda().cuMemcpyDtoHAsync_v2(dst, src, nbytes, stream_handle or None)


def packed_extra(data):
    """Kernel arguments packed in ``data`` (bytes) as the driver's ``extra``
    takes them: ``(buffer, size, extra)``, the first two kept alive as long
    as ``extra`` is used (``buffer`` is a writable copy of ``data``)."""
    buffer = ctypes.create_string_buffer(bytes(data), len(data))
    size = ctypes.c_size_t(len(data))
    # CU_LAUNCH_PARAM_BUFFER_POINTER (1), CU_LAUNCH_PARAM_BUFFER_SIZE (2), END (0)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buffer), 2, ctypes.addressof(size), 0)
    return buffer, size, extra


def _ctypes_packed(function, grid, block, data, smem, stream_handle):
    _buffer, _size, extra = packed_extra(data)
    return libcuda().cuLaunchKernel(function, *grid, *block, smem, stream_handle, None, extra)


def _ctypes_struct(function, grid, block, data, smem, stream_handle):
    params, _keep = _parameter_block(data)
    return libcuda().cuLaunchKernel(function, *grid, *block, smem, stream_handle, params, None)


def _launch_attributes(size, dependent):
    """(pointer, count): the attributes of a launch in clusters of ``size``
    (none for 1) that is programmatically dependent or not."""
    attributes = (_LaunchAttribute * 2)()
    count = 0
    if size > 1:
        attributes[count].id = ClusterKernel._CLUSTER_DIMENSION
        attributes[count].value[:3] = (size, 1, 1)
        count += 1
    if dependent:
        attributes[count].id = ClusterKernel._PROGRAMMATIC_SERIALIZATION
        attributes[count].value[0] = 1
        count += 1
    return ctypes.cast(attributes, ctypes.POINTER(_LaunchAttribute)), count


def _ctypes_cluster(function, grid, block, data, smem, stream_handle, cluster, dependent=False):
    attributes, count = _launch_attributes(cluster, dependent)
    config = _LaunchConfig(grid, block, smem, stream_handle or None, attributes, count)
    params, _keep = _parameter_block(data)
    return libcuda().cuLaunchKernelEx(ctypes.byref(config), function, params, None)


#: the entry points where the compiled entry is not built (or a test asks for them)
CTYPES_ENTRY = (_ctypes_packed, _ctypes_struct, _ctypes_cluster, _ctypes_copy)


def _parameter_block(data):
    """``kernelParams`` for a kernel whose one parameter is the struct ``data``
    (bytes), copied to 64-byte aligned memory (tensor maps must be); keep the
    second value alive until the launch call returns."""
    raw = ctypes.create_string_buffer(len(data) + 64)
    address = (ctypes.addressof(raw) + 63) & ~63
    ctypes.memmove(address, bytes(data), len(data))
    return (ctypes.c_void_p * 1)(address), raw
