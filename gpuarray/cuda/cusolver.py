"""cuSOLVER's dense routines through ctypes, on this thread's stream.

In: a handle per factory, device addresses of column-major matrices
(float32, float64, complex64 or complex128), their extents and leading
dimensions, and work areas from the caller.  Out: the factorisation
queued on the current stream (:mod:`gpuarray.cuda.stream`) -- Cholesky
(potrf), LU (getrf) and its solve (getrs), the symmetric eigensolver
(syevd; heevd for Hermitian complex matrices), the SVD (gesvd), QR
(geqrf, then orgqr; ungqr for complex), the general eigensolver
(``cusolverDnXgeev``, the 64-bit API of CUDA 12.6 and later) -- and the
routines' work-area sizes, or :class:`~gpuarray.cuda.toolkit.LibraryUnavailable`
naming the package to install (or, for an older cuSOLVER without Xgeev,
the routine and the version it needs), or :class:`SolverError` naming the
call and its status.

A complex routine takes the same arguments as its real one: matrices,
``tau`` and work areas of the complex dtype, eigenvalues and singular
values real (float32 for complex64, float64 for complex128).  Xgeev
takes each array's ``cudaDataType`` instead of a letter: for a real
matrix it returns complex eigenvalues (both members of a conjugate pair)
and real right eigenvectors packed as LAPACK's geev packs them.

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
_I64 = ctypes.c_int64
_SIZE = ctypes.c_size_t

#: cublasFillMode_t, cublasOperation_t, cusolverEigMode_t
LOWER, UPPER = 0, 1
NO_TRANSPOSE, TRANSPOSE = 0, 1
VALUES, VECTORS = 0, 1

#: the precision letter of cuSOLVER's and cuBLAS's routines, by dtype
LETTERS = {np.dtype(np.float32): "S", np.dtype(np.float64): "D",
           np.dtype(np.complex64): "C", np.dtype(np.complex128): "Z"}
#: cudaDataType_t of each dtype (library_types.h), for the 64-bit API
DATA_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,
              np.dtype(np.complex64): 4, np.dtype(np.complex128): 5}
#: the precisions of each routine: the symmetric eigensolver and orgqr are
#: real only, their Hermitian and unitary counterparts (heevd, ungqr) complex only
_PRECISIONS = {"potrf": "SDCZ", "getrf": "SDCZ", "getrs": "SDCZ", "gesvd": "SDCZ",
               "geqrf": "SDCZ", "syevd": "SD", "orgqr": "SD", "heevd": "CZ", "ungqr": "CZ"}
#: the complex routine standing for a real one, with the same arguments
_COMPLEX_NAMES = {"syevd": "heevd", "orgqr": "ungqr"}

_lib = []
_geev = []


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


def _geev_library():
    """The library with Xgeev's argument types set, bound on first use so
    that a cuSOLVER without it still serves every other routine.

    Raises
    ------
    LibraryUnavailable
        This cuSOLVER has no ``cusolverDnXgeev`` (older than CUDA 12.6).
    """
    if not _geev:
        lib = _library()
        try:
            size, run = lib.cusolverDnXgeev_bufferSize, lib.cusolverDnXgeev
            create, destroy = lib.cusolverDnCreateParams, lib.cusolverDnDestroyParams
        except AttributeError:
            raise toolkit.LibraryUnavailable(
                "the installed cuSOLVER has no cusolverDnXgeev, which linalg.eig and eigvals "
                "need on the GPU: install cuSOLVER of CUDA 12.6 or later (`pip install -U "
                "nvidia-cusolver`); the CPU factory's eig works without it") from None
        # handle, params, jobvl, jobvr, n, then (type, address[, leading dimension]) of
        # A, W, VL, VR, and the compute type
        common = [_P, _P, _INT, _INT, _I64, _INT, _P, _I64, _INT, _P, _INT, _P, _I64,
                  _INT, _P, _I64, _INT]
        size.argtypes = common + [ctypes.POINTER(_SIZE), ctypes.POINTER(_SIZE)]
        run.argtypes = common + [_P, _SIZE, _P, _SIZE, _P]
        create.argtypes = [ctypes.POINTER(_P)]
        destroy.argtypes = [_P]
        _geev.append(lib)
    return _geev[0]


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
        self._params = None

    def call(self, name, letter, *args):
        """Queue routine ``name`` (``"potrf"``...) in precision ``letter``."""
        self._invoke(f"cusolverDn{letter}{name}", *args)

    def _invoke(self, function, *args):
        _check(self._lib.cusolverDnSetStream(self.handle, stream.current_handle()),
               "cusolverDnSetStream")
        _check(getattr(self._lib, function)(self.handle, *args), function)

    def work_size(self, name, letter, *args):
        """Elements of work area routine ``name`` needs for ``args``."""
        size = ctypes.c_int()
        self.call(f"{name}_bufferSize", letter, *args, ctypes.byref(size))
        return size.value

    # -- the general eigensolver (64-bit API) --------------------------------
    def _geev_arguments(self, vectors, n, dtype, a, w, vr):
        """Xgeev's arguments after the handle: no left vectors (VL NULL, as
        NVIDIA's sample passes it), right ones in ``vr`` if ``vectors``; W
        complex of ``dtype``'s precision, everything else (VR too) ``dtype``."""
        lib = _geev_library()
        if self._params is None:
            params = _P()
            _check(lib.cusolverDnCreateParams(ctypes.byref(params)), "cusolverDnCreateParams")
            self._params = params
        dtype = np.dtype(dtype)
        kind = DATA_TYPES[dtype]
        complex_kind = DATA_TYPES[np.result_type(dtype, np.complex64)]
        job = VECTORS if vectors else VALUES
        return (self._params, VALUES, job, n, kind, a, n, complex_kind, w, kind, None, 1,
                kind, vr if vectors else None, n if vectors else 1, kind)

    def geev_work_size(self, vectors, n, dtype, a, w, vr):
        """Bytes of device and of host work area Xgeev needs (see :meth:`geev`)."""
        arguments = self._geev_arguments(vectors, n, dtype, a, w, vr)
        device, host = _SIZE(), _SIZE()
        self._invoke("cusolverDnXgeev_bufferSize", *arguments, ctypes.byref(device),
                     ctypes.byref(host))
        return device.value, host.value

    def geev(self, vectors, n, dtype, a, w, vr, work, work_bytes, host, host_bytes, info):
        """Queue Xgeev of the column-major ``n`` x ``n`` matrix at ``a`` (overwritten):
        eigenvalues to ``w`` (complex), right eigenvectors to ``vr`` (column-major,
        ``dtype``) if ``vectors``.  ``host`` must live until ``info`` is read."""
        arguments = self._geev_arguments(vectors, n, dtype, a, w, vr)
        self._invoke("cusolverDnXgeev", *arguments, work, work_bytes, host, host_bytes, info)

    def destroy(self):
        """Release the handle (and Xgeev's parameters, if made)."""
        if self._params is not None:
            _geev_library().cusolverDnDestroyParams(self._params)
            self._params = None
        if self.handle:
            self._lib.cusolverDnDestroy(self.handle)
            self.handle = None
