"""The GPU factory's general (non-symmetric) eigensolver: cuSOLVER's Xgeev.

In: float32, float64, complex64 or complex128 tensors of square matrices
(stacks: the leading axes), finite, checked by
:mod:`gpuarray.linalg.namespace`.  Out: the eigenvalues and, if asked,
the right eigenvectors (unit 2-norm columns, largest component real, as
LAPACK's geev) in ``numpy.linalg.eig``'s dtypes, or numpy's
``LinAlgError`` where the QR algorithm does not converge.

The dtypes are the installed numpy's (:func:`real_spectrum_dtype` asks
it): complex matrices give complex results; from numpy 2.5 on
(numpy/numpy#30411) real ones do too (complex64 for float32), while up to
numpy 2.4 a real matrix gives real eigenvalues and vectors when *every*
eigenvalue of the stack is real, complex ones otherwise -- a data-dependent
dtype, which takes one read of the device (one boolean for the stack) on
top of the ``info`` word read back per matrix.

Xgeev is not batched: a stack runs one matrix at a time, each on its
column-major copy (the whole stack copied by one fused kernel), writing
its eigenvalues and column-major vectors straight into the stack's
results.  For a real matrix Xgeev returns complex eigenvalues -- a
conjugate pair as two consecutive entries, the positive imaginary part
first -- but real vectors packed as LAPACK's dgeev packs them: a pair
``j, j+1`` has ``VR[:, j] +/- i VR[:, j+1]``.  :func:`unpack_pairs`
expands them into numpy's complex columns for the whole stack (the
neighbouring columns by two ``roll`` copies, then one fused kernel).
"""
import functools

import numpy as np

from ..cuda import cusolver
from .namespace import LinAlgError


class DeviceEig:
    """Mixin of :class:`~gpuarray.linalg.device.DeviceLinAlg`: ``eig`` on
    cuSOLVER's Xgeev (``self.gpu``, ``self.solver`` and
    ``self._column_major_stack`` come from it)."""

    def eig(self, a, vectors):
        """Eigenvalues and (``vectors``: else None) right eigenvectors of
        each matrix of ``a``, numpy's dtypes (see the module)."""
        gpu = self.gpu
        n, batch = a.shape[-1], a.shape[:-2]
        complex_dtype = np.result_type(a.dtype, np.complex64)
        if a.size == 0:  # nothing to factor: numpy's dtype for its own empty matrices
            dtype = np.linalg.eigvals(np.empty(a.shape, a.dtype)).dtype
            return gpu.empty(batch + (n,), dtype), gpu.empty(a.shape, dtype) if vectors else None
        copy = self._column_major_stack(a)  # overwritten by Xgeev
        values = gpu.empty(batch + (n,), complex_dtype)
        packed = gpu.empty(a.shape, a.dtype) if vectors else None  # column-major
        for idx in np.ndindex(batch):
            self._geev_one(copy[idx], values[idx], None if packed is None else packed[idx],
                           vectors)
        right = gpu.matrix_transpose(packed) if vectors else None
        if a.dtype.kind == "c":
            return values, right
        if (real_spectrum_dtype(a.dtype).kind != "c"
                and not bool(gpu.any(gpu.not_equal(gpu.imag(values), 0)))):
            return gpu.evaluate(gpu.real(values)), right  # all real: numpy's real dtype
        return values, unpack_pairs(gpu, right, values) if vectors else None

    def _geev_one(self, matrix, values, packed, vectors):
        """Xgeev of one column-major matrix (contiguous views of the stacks:
        their addresses go to cuSOLVER as they are)."""
        gpu = self.gpu
        n = matrix.shape[-1]
        vr = packed.ptr if vectors else None
        arguments = (vectors, n, matrix.dtype, matrix.ptr, values.ptr, vr)
        device_bytes, host_bytes = self.solver.geev_work_size(*arguments)
        work = gpu.pool.allocate(max(device_bytes, 1))
        host = np.empty(max(host_bytes, 1), np.uint8)  # cuSOLVER's host-side scratch
        info = gpu.zeros((), np.int32)
        try:
            self.solver.geev(*arguments, work.ptr, device_bytes, host.ctypes.data, host_bytes,
                             info.ptr)
        finally:
            work.free()  # stream-ordered: later work on this stream runs after
        status = int(info.get())  # synchronises: cuSOLVER is done with ``host`` after this
        if status < 0:
            raise cusolver.SolverError(f"Xgeev: argument {-status} was refused")
        if status > 0:
            raise LinAlgError("Eigenvalues did not converge")


def unpack_pairs(xp, packed, values):
    """numpy's complex eigenvectors from LAPACK's real packing of a real
    matrix's: where eigenvalue ``j`` has a positive imaginary part, columns
    ``j`` and ``j+1`` are ``VR[:, j] + i VR[:, j+1]`` and its conjugate;
    real eigenvalues' columns are as they are.  ``packed`` (..., n, n),
    ``values`` (..., n) complex."""
    imag = xp.imag(values)[..., None, :]
    first, second = xp.greater(imag, 0), xp.less(imag, 0)
    following = xp.roll(packed, -1, axis=-1)  # column j holds VR[:, j+1]
    preceding = xp.roll(packed, 1, axis=-1)   # column j holds VR[:, j-1]
    real = xp.where(second, preceding, packed)
    imaginary = xp.where(first, following, xp.where(second, -packed, 0))
    dtype = values.dtype
    return xp.evaluate(xp.astype(real, dtype) + xp.astype(imaginary, dtype) * 1j)


@functools.lru_cache(maxsize=None)
def real_spectrum_dtype(dtype):
    """The dtype the installed numpy's ``eig`` gives a real matrix of ``dtype``
    whose eigenvalues are all real: ``dtype`` itself up to numpy 2.4, complex
    from numpy 2.5 on (asked of numpy with a 1x1 matrix, once per dtype)."""
    return np.linalg.eigvals(np.eye(1, dtype=dtype)).dtype
