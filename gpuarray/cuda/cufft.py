"""cuFFT through ctypes: plans over trailing axes, executed on this thread's stream.

In: the transform's kind (``"c2c"``, ``"r2c"``, ``"c2r"``), precision, the
extents of its trailing axes, the batch count, device addresses, and a
work area from the factory's pool.  Out: the transform queued on the
current stream (:mod:`gpuarray.cuda.stream`), unnormalised as cuFFT
computes it, or :class:`FFTUnavailable` naming the package that provides
the library, or :class:`FFTError` naming the call and the cufftResult.

The library is found by :mod:`gpuarray.cuda.toolkit`: where pip puts it
(the ``nvidia-cufft`` wheel, which PyTorch and CuPy also install), then
in the CUDA toolkit, then on the loader's path.  cuFFT uses the CUDA
runtime, which adopts the context current on the calling thread (the
factory's), so its kernels order with ours on the same stream.

Plans are made with automatic work-area allocation off: the caller passes
memory from its pool for each execution, so a transform allocates nothing
behind the pool's back and the memory returns to the pool in stream order.
"""
import ctypes

from . import stream, toolkit
from .driver import DriverError

_P = ctypes.c_void_p
_I64 = ctypes.c_longlong
_I64_P = ctypes.POINTER(ctypes.c_longlong)

#: cufftType, by (kind, double precision)
_TYPES = {("c2c", False): 0x29, ("r2c", False): 0x2A, ("c2r", False): 0x2C,
          ("c2c", True): 0x69, ("r2c", True): 0x6A, ("c2r", True): 0x6C}
#: the execution entry point of each cufftType
_EXEC = {0x29: "cufftExecC2C", 0x2A: "cufftExecR2C", 0x2C: "cufftExecC2R",
         0x69: "cufftExecZ2Z", 0x6A: "cufftExecD2Z", 0x6C: "cufftExecZ2D"}
#: the complex-to-complex entry points, which take a direction
_DIRECTED = frozenset({"cufftExecC2C", "cufftExecZ2Z"})
FORWARD, INVERSE = -1, 1
#: cuFFT plans one transform over at most this many trailing axes
MAX_RANK = 3

_RESULTS = {1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE",
            4: "CUFFT_INVALID_VALUE", 5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED",
            7: "CUFFT_SETUP_FAILED", 8: "CUFFT_INVALID_SIZE", 9: "CUFFT_UNALIGNED_DATA",
            11: "CUFFT_INVALID_DEVICE", 13: "CUFFT_NO_WORKSPACE",
            14: "CUFFT_NOT_IMPLEMENTED", 16: "CUFFT_NOT_SUPPORTED"}

_lib = []


#: raised where no cuFFT library is installed
FFTUnavailable = toolkit.LibraryUnavailable


class FFTError(DriverError):
    """A cuFFT call failed; the message names it and the cufftResult (a driver
    error: the GPU factory checks whether the context survived)."""


def _library():
    if not _lib:
        lib = toolkit.load("cufft", ("libcufft.so.12", "libcufft.so.11"), "nvidia-cufft")
        _declare(lib)
        _lib.append(lib)
    return _lib[0]


def _declare(lib):
    lib.cufftCreate.argtypes = [ctypes.POINTER(ctypes.c_int)]
    lib.cufftSetAutoAllocation.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.cufftMakePlanMany64.argtypes = [
        ctypes.c_int, ctypes.c_int, _I64_P, _I64_P, _I64, _I64, _I64_P, _I64, _I64,
        ctypes.c_int, _I64, ctypes.POINTER(ctypes.c_size_t)]
    lib.cufftSetWorkArea.argtypes = [ctypes.c_int, _P]
    lib.cufftSetStream.argtypes = [ctypes.c_int, _P]
    lib.cufftDestroy.argtypes = [ctypes.c_int]
    for name in _EXEC.values():
        direction = [ctypes.c_int] if name in _DIRECTED else []
        getattr(lib, name).argtypes = [ctypes.c_int, _P, _P] + direction


def available():
    """Whether the cuFFT library can be loaded."""
    try:
        _library()
    except FFTUnavailable:
        return False
    return True


def _check(result, call):
    if result != 0:
        raise FFTError(f"{call} failed: {_RESULTS.get(result, 'cufftResult')} ({result})")


class Plan:
    """A cuFFT plan: ``batch`` transforms over contiguous trailing axes.

    Parameters
    ----------
    kind : str
        ``"c2c"``, ``"r2c"`` or ``"c2r"``.
    double : bool
        Double precision (complex128 / float64) rather than single.
    dims : tuple of int
        Extents of the transformed axes, outermost first (the real extents
        for r2c and c2r; their complex side holds ``dims[-1] // 2 + 1``).
    batch : int
        How many transforms; each one's data follows the previous one's.
    """

    def __init__(self, kind, double, dims, batch):
        if not 1 <= len(dims) <= MAX_RANK:
            raise ValueError(f"cuFFT plans 1 to {MAX_RANK} axes, not {len(dims)}")
        lib = _library()
        self.type = _TYPES[kind, double]
        self.kind = kind
        handle = ctypes.c_int()
        _check(lib.cufftCreate(ctypes.byref(handle)), "cufftCreate")
        self.handle = handle.value
        self._lib = lib
        _check(lib.cufftSetAutoAllocation(self.handle, 0), "cufftSetAutoAllocation")
        extents = (ctypes.c_longlong * len(dims))(*dims)
        work = ctypes.c_size_t()
        _check(lib.cufftMakePlanMany64(self.handle, len(dims), extents, None, 1, 0, None, 1, 0,
                                       self.type, batch, ctypes.byref(work)),
               f"cufftMakePlanMany64 (dims={tuple(dims)}, batch={batch})")
        #: bytes of work area an execution needs
        self.work_bytes = work.value

    def execute(self, source, target, work, direction=FORWARD):
        """Queue the transform of device address ``source`` into ``target`` on
        this thread's stream, with ``work`` (an address of ``work_bytes``)."""
        lib = self._lib
        _check(lib.cufftSetStream(self.handle, stream.current_handle()), "cufftSetStream")
        _check(lib.cufftSetWorkArea(self.handle, work or None), "cufftSetWorkArea")
        name = _EXEC[self.type]
        args = (self.handle, source, target) + ((direction,) if name in _DIRECTED else ())
        _check(getattr(lib, name)(*args), name)

    def destroy(self):
        """Release the plan (its kernels and device tables)."""
        if self.handle is not None:
            self._lib.cufftDestroy(self.handle)
            self.handle = None
