"""The device algorithms library (``kernels/algorithms_host.cu``), through ctypes.

In: device addresses (ints), element counts, key widths and kinds, and the
current ``CUstream`` handle.  Out: the work queued on that stream -- CUB's
radix sort, stream compaction and prefix sums, and the key-encoding,
gather, scatter and binary-search kernels around them -- or
:class:`~gpuarray.cuda.library.KernelsMissing` naming the file and the
command that builds it, or :class:`AlgorithmError` naming the entry point
and the CUDA error.

The library links the CUDA runtime statically and runs in the context
current on the calling thread (the factory's), so its launches order with
ours on the same stream.  The CUB entry points take their scratch from the
caller: :func:`scratch_bytes` asks how much, the factory's pool provides it.
"""
import ctypes

from .driver import DriverError
from .library import KERNEL_DIR, KernelsMissing

LIBRARY = KERNEL_DIR / "algorithms_host.so"

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_SIZE_P = ctypes.POINTER(ctypes.c_size_t)

# entry point -> argument types; every one returns a cudaError_t
_SIGNATURES = {
    "ga_encode_keys": [_INT, _INT, _P, _P, _I64, _INT, _INT, _P],
    "ga_decode_keys": [_INT, _INT, _P, _P, _I64, _INT, _P],
    "ga_compose_keys": [_INT, _INT, _P, _P, _I64, _I64, _INT, _INT, _P],
    "ga_decompose_keys": [_INT, _INT, _P, _P, _I64, _INT, _P],
    "ga_sort_floats": [_INT, _INT, _P, _SIZE_P, _P, _P, _I64, _P],
    "ga_move_nans": [_INT, _INT, _P, _P, _P, _I64, _P],
    "ga_sort_keys": [_INT, _P, _SIZE_P, _P, _P, _I64, _INT, _INT, _P],
    "ga_sort_pairs": [_INT, _P, _SIZE_P, _P, _P, _P, _P, _I64, _INT, _INT, _P],
    "ga_select_flagged": [_P, _SIZE_P, _P, _P, _P, _I64, _P],
    "ga_select_values": [_INT, _P, _SIZE_P, _P, _P, _P, _P, _I64, _P],
    "ga_scan": [_INT, _INT, _P, _SIZE_P, _P, _P, _I64, _I64, _P],
    "ga_iota": [_P, _I64, _P],
    "ga_count_bins": [_P, _I64, _P, _P],
    "ga_histogram": [_INT, _P, _I64, _P, _INT, _P, _P],
    "ga_sum_runs_f64": [_P, _SIZE_P, _P, _P, _P, _P, _P, _I64, _P],
    "ga_gather": [_INT, _P, _P, _P, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _P, _P],
    "ga_scatter": [_INT, _P, _P, _P, _I64, _P],
    "ga_search": [_INT, _P, _I64, _P, _I64, _P, _INT, _P],
}

#: the key kinds of ga_encode_keys
UNSIGNED, SIGNED, FLOAT, BFLOAT = 0, 1, 2, 3
#: ga_histogram's value types, by numpy dtype name
VALUE_TYPES = {name: code for code, name in enumerate(
    ("float64", "float32", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32",
     "uint32", "int64", "uint64"))}
VALUE_TYPES["bool"] = VALUE_TYPES["uint8"]
#: ga_scan's element types (int64 scans as uint64: the same bits) and operations
SCAN_TYPES = {"uint64": 0, "int64": 0, "float32": 1, "float64": 2}
SCAN_OPS = {"add": 0, "multiply": 1}

_lib = []


class AlgorithmError(DriverError):
    """A call into the algorithms library failed; the message names it and the CUDA error
    (a driver error: the GPU factory checks whether the context survived)."""


def _library():
    if not _lib:
        if not LIBRARY.exists():
            raise KernelsMissing(
                f"the device algorithms library is not built: {LIBRARY} is missing; run "
                "`make kernels` (needs nvcc)")
        lib = ctypes.CDLL(str(LIBRARY))
        for name, argtypes in _SIGNATURES.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, _INT
        lib.ga_error_string.argtypes, lib.ga_error_string.restype = [_INT], ctypes.c_char_p
        _lib.append(lib)
    return _lib[0]


def call(name, *args):
    """Call entry point ``name`` with ``args`` (its C arguments, stream last)."""
    lib = _library()
    result = getattr(lib, name)(*args)
    if result != 0:
        raise AlgorithmError(f"{name} failed: {lib.ga_error_string(result).decode()} "
                             f"(cudaError {result})")


def scratch_bytes(name, *args):
    """The scratch a CUB entry point needs for ``args`` (its arguments after
    ``temp, temp_bytes``; the ones before the scratch pair come first)."""
    size = ctypes.c_size_t(0)
    head, tail = args[:_SCRATCH_AT[name]], args[_SCRATCH_AT[name]:]
    call(name, *head, None, ctypes.byref(size), *tail)
    return size.value


def run_with_scratch(name, scratch, *args):
    """Call a CUB entry point with ``scratch`` (a device address and its size)."""
    ptr, nbytes = scratch
    size = ctypes.c_size_t(nbytes)
    head, tail = args[:_SCRATCH_AT[name]], args[_SCRATCH_AT[name]:]
    call(name, *head, ptr, ctypes.byref(size), *tail)


# where the (temp, temp_bytes) pair sits in each CUB entry point's arguments
_SCRATCH_AT = {"ga_sort_floats": 2, "ga_sort_keys": 1, "ga_sort_pairs": 1, "ga_select_flagged": 0,
               "ga_select_values": 1, "ga_scan": 2, "ga_sum_runs_f64": 0}
