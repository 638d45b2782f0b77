"""cuSOLVER's dense routines through ctypes, on this thread's stream.

In: a handle per factory, device addresses of column-major matrices
(float32, float64, complex64 or complex128), their extents and leading
dimensions, and work areas from the caller.  Out: the factorisation
queued on the current stream (:mod:`gpuarray.cuda.stream`) -- Cholesky
(potrf), LU (getrf) and its solve (getrs), the symmetric eigensolver
(syevd; heevd for Hermitian complex matrices), the SVD (gesvd), QR
(geqrf, then orgqr; ungqr for complex) -- and the routines' work-area
sizes, or :class:`~gpuarray.cuda.toolkit.LibraryUnavailable` naming the
package to install, or :class:`SolverError` naming the call and its status.

A complex routine takes the same arguments as its real one: matrices,
``tau`` and work areas of the complex dtype, eigenvalues and singular
values real (float32 for complex64, float64 for complex128).

Every routine reports a matrix it cannot factor through an ``info``
word on the device; :mod:`gpuarray.linalg.device` reads it back.
"""
import ctypes

import numpy as np

from . import stream, toolkit
from .driver import DriverError

_P = ctypes.c_void_p
_INT = ctypes.c_int
_INT_P = ctypes.POINTER(ctypes.c_int)

#: cublasFillMode_t, cublasOperation_t, cusolverEigMode_t
LOWER, UPPER = 0, 1
NO_TRANSPOSE, TRANSPOSE = 0, 1
VALUES, VECTORS = 0, 1

#: the precision letter of cuSOLVER's and cuBLAS's routines, by dtype
LETTERS = {np.dtype(np.float32): "S", np.dtype(np.float64): "D",
           np.dtype(np.complex64): "C", np.dtype(np.complex128): "Z"}
#: the precisions of each routine: the symmetric eigensolver and orgqr are
#: real only, their Hermitian and unitary counterparts (heevd, ungqr) complex only
_PRECISIONS = {"potrf": "SDCZ", "getrf": "SDCZ", "getrs": "SDCZ", "gesvd": "SDCZ",
               "geqrf": "SDCZ", "syevd": "SD", "orgqr": "SD", "heevd": "CZ", "ungqr": "CZ"}
#: the complex routine standing for a real one, with the same arguments
_COMPLEX_NAMES = {"syevd": "heevd", "orgqr": "ungqr"}

_lib = []


class SolverError(DriverError):
    """A cuSOLVER call failed; the message names it and the cusolverStatus_t."""


def _signatures():
    """name (without the precision letter) -> argument types after the handle."""
    return {
        "potrf_bufferSize": [_INT, _INT, _P, _INT, _INT_P],
        "potrf": [_INT, _INT, _P, _INT, _P, _INT, _P],
        "getrf_bufferSize": [_INT, _INT, _P, _INT, _INT_P],
        "getrf": [_INT, _INT, _P, _INT, _P, _P, _P],
        "getrs": [_INT, _INT, _INT, _P, _INT, _P, _P, _INT, _P],
        "syevd_bufferSize": [_INT, _INT, _INT, _P, _INT, _P, _INT_P],
        "syevd": [_INT, _INT, _INT, _P, _INT, _P, _P, _INT, _P],
        "heevd_bufferSize": [_INT, _INT, _INT, _P, _INT, _P, _INT_P],
        "heevd": [_INT, _INT, _INT, _P, _INT, _P, _P, _INT, _P],
        "gesvd_bufferSize": [_INT, _INT, _INT_P],
        "gesvd": [ctypes.c_char, ctypes.c_char, _INT, _INT, _P, _INT, _P, _P, _INT, _P, _INT,
                  _P, _INT, _P, _P],
        "geqrf_bufferSize": [_INT, _INT, _P, _INT, _INT_P],
        "geqrf": [_INT, _INT, _P, _INT, _P, _P, _INT, _P],
        "orgqr_bufferSize": [_INT, _INT, _INT, _P, _INT, _P, _INT_P],
        "orgqr": [_INT, _INT, _INT, _P, _INT, _P, _P, _INT, _P],
        "ungqr_bufferSize": [_INT, _INT, _INT, _P, _INT, _P, _INT_P],
        "ungqr": [_INT, _INT, _INT, _P, _INT, _P, _P, _INT, _P],
    }


def _library():
    if not _lib:
        lib = toolkit.load("cusolver", ("libcusolver.so.12", "libcusolver.so.11"),
                           "nvidia-cusolver")
        lib.cusolverDnCreate.argtypes = [ctypes.POINTER(_P)]
        lib.cusolverDnDestroy.argtypes = [_P]
        lib.cusolverDnSetStream.argtypes = [_P, _P]
        for name, argtypes in _signatures().items():
            for letter in _PRECISIONS[name.split("_")[0]]:
                getattr(lib, f"cusolverDn{letter}{name}").argtypes = [_P] + argtypes
        _lib.append(lib)
    return _lib[0]


def _check(status, call):
    if status != 0:
        raise SolverError(f"{call} failed (cusolverStatus {status})")


def precision(dtype):
    """The routines' letter for ``dtype``: S, D, C (complex64) or Z."""
    return LETTERS[np.dtype(dtype)]


def routine(name, letter):
    """The routine doing ``name``'s work in precision ``letter``: heevd for
    syevd and ungqr for orgqr in C and Z, ``name`` otherwise."""
    return _COMPLEX_NAMES.get(name, name) if letter in "CZ" else name


class Solver:
    """A cuSOLVER handle; its calls go to this thread's current stream, in
    the precision each call names (:func:`precision`)."""

    def __init__(self):
        self._lib = _library()
        handle = _P()
        _check(self._lib.cusolverDnCreate(ctypes.byref(handle)), "cusolverDnCreate")
        self.handle = handle

    def call(self, name, letter, *args):
        """Queue routine ``name`` (``"potrf"``...) in precision ``letter``."""
        function = f"cusolverDn{letter}{name}"
        _check(self._lib.cusolverDnSetStream(self.handle, stream.current_handle()),
               "cusolverDnSetStream")
        _check(getattr(self._lib, function)(self.handle, *args), function)

    def work_size(self, name, letter, *args):
        """Elements of work area routine ``name`` needs for ``args``."""
        size = ctypes.c_int()
        self.call(f"{name}_bufferSize", letter, *args, ctypes.byref(size))
        return size.value

    def destroy(self):
        """Release the handle."""
        if self.handle:
            self._lib.cusolverDnDestroy(self.handle)
            self.handle = None
