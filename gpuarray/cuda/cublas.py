"""cuBLAS's batched LU through ctypes, on this thread's stream.

In: device arrays holding the addresses of column-major float32,
float64, complex64 or complex128 matrices (one per batch member; the
routines' letter S, D, C or Z names the precision), their extent and
leading dimension, and device arrays for the pivots and ``info`` words.
Out: the batched LU factorisation (``getrfBatched``) and solve (``getrsBatched``)
queued on the current stream (:mod:`gpuarray.cuda.stream`), or
:class:`~gpuarray.cuda.toolkit.LibraryUnavailable`, or :class:`BlasError`
naming the call and its status.

A stack of small matrices is one launch each way here, where cuSOLVER
would take a call (and a host round trip) per matrix:
:mod:`gpuarray.linalg.device` uses it for stacks of matrices up to 128
wide.
"""
import ctypes

from . import stream, toolkit
from .driver import DriverError

_P = ctypes.c_void_p
_INT = ctypes.c_int

_lib = []


class BlasError(DriverError):
    """A cuBLAS call failed; the message names it and the cublasStatus_t."""


def _library():
    if not _lib:
        lib = toolkit.load("cublas", ("libcublas.so.13", "libcublas.so.12"), "nvidia-cublas")
        lib.cublasCreate_v2.argtypes = [ctypes.POINTER(_P)]
        lib.cublasDestroy_v2.argtypes = [_P]
        lib.cublasSetStream_v2.argtypes = [_P, _P]
        for letter in "SDCZ":
            getattr(lib, f"cublas{letter}getrfBatched").argtypes = [
                _P, _INT, _P, _INT, _P, _P, _INT]
            getattr(lib, f"cublas{letter}getrsBatched").argtypes = [
                _P, _INT, _INT, _INT, _P, _INT, _P, _P, _INT, ctypes.POINTER(_INT), _INT]
        _lib.append(lib)
    return _lib[0]


def _check(status, call):
    if status != 0:
        raise BlasError(f"{call} failed (cublasStatus {status})")


class BatchedLU:
    """A cuBLAS handle for batched LU; calls go to this thread's current stream."""

    def __init__(self):
        self._lib = _library()
        handle = _P()
        _check(self._lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle

    def _on_stream(self):
        _check(self._lib.cublasSetStream_v2(self.handle, stream.current_handle()),
               "cublasSetStream")

    def factor(self, letter, n, matrices, pivots, infos, batch):
        """LU with partial pivoting of ``batch`` n x n matrices in place;
        ``matrices`` is a device array of their addresses."""
        self._on_stream()
        name = f"cublas{letter}getrfBatched"
        _check(getattr(self._lib, name)(self.handle, n, matrices, n, pivots, infos, batch), name)

    def solve(self, letter, n, nrhs, matrices, pivots, rights, batch):
        """Solve with the factors of :meth:`factor`: ``rights`` (addresses of
        n x nrhs column-major matrices) are overwritten by the solutions."""
        self._on_stream()
        name = f"cublas{letter}getrsBatched"
        info = ctypes.c_int()
        _check(getattr(self._lib, name)(self.handle, 0, n, nrhs, matrices, n, pivots, rights, n,
                                        ctypes.byref(info), batch), name)
        if info.value < 0:
            raise BlasError(f"{name}: argument {-info.value} was refused")

    def destroy(self):
        """Release the handle."""
        if self.handle:
            self._lib.cublasDestroy_v2(self.handle)
            self.handle = None
