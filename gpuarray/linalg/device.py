"""The GPU factory's factorisations: cuSOLVER on column-major copies.

In: float32, float64, complex64 or complex128 tensors of matrices
(stacks: the leading axes), checked by :mod:`gpuarray.linalg.namespace`.
Out: new tensors in numpy's dtypes -- the Cholesky factor, solutions,
sign and log-determinant, eigenvalues and vectors, singular values and
vectors, Q and R (eigenvalues and singular values real: float32 for
complex64) -- or numpy's ``LinAlgError`` where cuSOLVER reports a matrix
it cannot factor.  The non-symmetric eigensolver (Xgeev) is in
:mod:`gpuarray.linalg.geev`.

cuSOLVER reads and writes column-major matrices.  A row-major matrix
``m`` copied as ``m.T`` into a contiguous buffer *is* ``m`` column-major
(one fused kernel), and a column-major result read row-major is its
transpose: both are views, never extra copies.  Both are plain
transposes, never conjugates, so complex matrices take the same steps as
real ones through cuSOLVER's C and Z routines (heevd and ungqr where the
real ones are syevd and orgqr).  A stack of matrices up to
128 wide solves and takes determinants through cuBLAS's batched LU, one
launch each way (:mod:`gpuarray.cuda.cublas`); the other factorisations
and larger matrices run one matrix at a time, each routine's work area
from the factory's pool.  Each factorisation's ``info`` words are read
back, so that a singular or indefinite matrix raises at the call, as
numpy's does.
"""
import numpy as np

from ..core.dtypes import real_part
from ..core.shapes import size_of
from ..cuda import cublas, cusolver
from .geev import DeviceEig
from .namespace import LinAlgError

#: stacks of matrices up to this wide solve and take determinants through
#: cuBLAS's batched LU: one launch for the stack, not a call per matrix
BATCHED_LU_MAX = 128


class DeviceLinAlg(DeviceEig):
    """cuSOLVER factorisations of one GPU factory (its handle made on first use);
    the general eigensolver ``eig`` is :class:`~gpuarray.linalg.geev.DeviceEig`'s."""

    def __init__(self, gpu):
        self.gpu = gpu
        self._solver = None
        self._batched = None

    @property
    def solver(self):
        if self._solver is None:
            self._solver = cusolver.Solver()
        return self._solver

    @property
    def batched(self):
        if self._batched is None:
            self._batched = cublas.BatchedLU()
        return self._batched

    # -- the factorisations ---------------------------------------------------
    def cholesky(self, a):
        n = a.shape[-1]
        out = self.gpu.empty(a.shape, a.dtype)
        if n == 0:  # nothing to factor (cuSOLVER refuses a leading dimension of 0)
            return out
        letter = cusolver.precision(a.dtype)
        for idx in np.ndindex(a.shape[:-2]):
            c = self._column_major(a[idx])
            lwork = self.solver.work_size("potrf", letter, cusolver.LOWER, n, c.ptr, n)
            self._run("potrf", letter, lwork, a.dtype, "Matrix is not positive definite",
                      lambda work, info: (cusolver.LOWER, n, c.ptr, n, work, lwork, info))
            out[idx] = self.gpu.tril(c.T)  # potrf leaves the other triangle as it was
        return out

    def solve(self, a, b):
        n, k = a.shape[-1], b.shape[-1]
        letter = cusolver.precision(a.dtype)
        if n == 0 or k == 0:  # no solution to compute; numpy still refuses a singular a
            for idx in np.ndindex(a.shape[:-2]) if n else ():
                self._lu(a[idx], letter, raise_singular=True)
            return self.gpu.zeros(b.shape, a.dtype)
        if _stacked(a):
            lu, pivots, infos = self._lu_stack(a, letter)
            x = self._column_major_stack(b)
            factors, rights = _addresses(self.gpu, lu), _addresses(self.gpu, x)
            self.batched.solve(letter, n, k, factors.ptr, pivots.ptr, rights.ptr,
                               size_of(a.shape[:-2]))
            if bool(self.gpu.any(infos > 0)):
                raise LinAlgError("Singular matrix")
            return self.gpu.matrix_transpose(x)
        out = self.gpu.empty(b.shape, a.dtype)
        for idx in np.ndindex(a.shape[:-2]):
            lu, pivots = self._lu(a[idx], letter, raise_singular=True)
            x = self._column_major(b[idx])
            info = self.gpu.zeros((), np.int32)
            self.solver.call("getrs", letter, cusolver.NO_TRANSPOSE, n, k, lu.ptr, n,
                             pivots.ptr, x.ptr, n, info.ptr)
            out[idx] = x.T
        return out

    def slogdet(self, a):
        n = a.shape[-1]
        batch = a.shape[:-2]
        if n == 0:  # the empty product: determinant 1, as numpy's
            return self.gpu.ones(batch, a.dtype), self.gpu.zeros(batch, real_part(a.dtype))
        if _stacked(a):
            lu, pivots, _ = self._lu_stack(a, cusolver.precision(a.dtype))
            diagonal = lu.reshape(batch + (n * n,))[..., ::n + 1]
            return self._sign_and_log(diagonal, pivots, n)
        sign = self.gpu.empty(batch, a.dtype)
        logabsdet = self.gpu.empty(batch, real_part(a.dtype))
        letter = cusolver.precision(a.dtype)
        for idx in np.ndindex(batch):
            lu, pivots = self._lu(a[idx], letter, raise_singular=False)
            sign[idx], logabsdet[idx] = self._sign_and_log(lu.reshape(-1)[::n + 1], pivots, n)
        return sign, logabsdet

    def _sign_and_log(self, diagonal, pivots, n):
        """Sign and log|det| from the diagonals of U and the row swaps (the
        last axis: one matrix each)."""
        gpu = self.gpu
        steps = gpu.arange(1, n + 1, dtype=np.int32)
        swaps = gpu.sum(gpu.not_equal(pivots, steps), axis=-1)
        singular = gpu.any(gpu.equal(diagonal, 0), axis=-1)
        magnitude = gpu.absolute(diagonal)
        if diagonal.dtype.kind == "c":  # the product of the diagonal's phases
            phases = gpu.prod(diagonal / gpu.where(singular[..., None], 1, magnitude), axis=-1)
            sign = gpu.where(singular, 0, phases * (1 - 2 * (swaps % 2)))
        else:
            flips = gpu.sum(gpu.less(diagonal, 0), axis=-1) + swaps
            sign = gpu.where(singular, 0, 1 - 2 * (flips % 2))
        logabsdet = gpu.sum(gpu.log(magnitude), axis=-1)
        return gpu.evaluate(gpu.astype(sign, diagonal.dtype)), gpu.evaluate(logabsdet)

    def eigh(self, a, uplo, vectors):
        """Eigenvalues (real, ascending) and vectors of Hermitian matrices:
        syevd, or heevd for complex ones, on an exact column-major copy, so
        that ``uplo`` names the triangle of ``a`` itself that is read."""
        n = a.shape[-1]
        values = self.gpu.empty(a.shape[:-1], real_part(a.dtype))
        out = self.gpu.empty(a.shape, a.dtype) if vectors else None
        if n == 0:  # nothing to factor (cuSOLVER refuses a leading dimension of 0)
            return values, out
        letter = cusolver.precision(a.dtype)
        name = cusolver.routine("syevd", letter)
        fill = cusolver.LOWER if uplo == "L" else cusolver.UPPER
        job = cusolver.VECTORS if vectors else cusolver.VALUES
        for idx in np.ndindex(a.shape[:-2]):
            c = self._column_major(a[idx])
            w = self.gpu.empty((n,), real_part(a.dtype))
            lwork = self.solver.work_size(name, letter, job, fill, n, c.ptr, n, w.ptr)
            self._run(name, letter, lwork, a.dtype, "Eigenvalues did not converge",
                      lambda work, info: (job, fill, n, c.ptr, n, w.ptr, work, lwork, info))
            values[idx] = w
            if vectors:
                out[idx] = c.T
        return values, out

    def svd(self, a, full, vectors):
        """``U``, ``S`` (real, descending) and ``Vh``, numpy's shapes and dtypes."""
        m, n = a.shape[-2:]
        k = min(m, n)
        dtype = a.dtype
        batch = a.shape[:-2]
        s = self.gpu.empty(batch + (k,), real_part(dtype))
        u_cols, vh_rows = (m, n) if full else (k, k)
        u = self.gpu.empty(batch + (m, u_cols), dtype) if vectors else None
        vh = self.gpu.empty(batch + (vh_rows, n), dtype) if vectors else None
        if k == 0:  # no singular values; numpy's full U and Vh are identities
            self._identities(u, vh)
            return u, s, vh
        for idx in np.ndindex(batch):
            left, sigma, right = self._svd_one(a[idx], full, vectors)
            s[idx] = sigma
            if vectors:
                u[idx], vh[idx] = left, right
        return u, s, vh

    def qr(self, a, mode):
        """``Q`` (None for mode "r") and ``R`` of each matrix, numpy's shapes."""
        m, n = a.shape[-2:]
        k = min(m, n)
        dtype = a.dtype
        batch = a.shape[:-2]
        q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
        q = None if mode == "r" else self.gpu.empty(batch + (m, q_cols), dtype)
        r = self.gpu.empty(batch + (r_rows, n), dtype)
        if k == 0:  # R has no elements; numpy's complete Q is the identity
            self._identities(q)
            return q, r
        for idx in np.ndindex(batch):
            factor, reflected = self._qr_one(a[idx], mode)
            r[idx] = self.gpu.triu(factor.T[:r_rows, :n])
            if q is not None:
                q[idx] = reflected
        return q, r

    # -- a stack at once, one matrix --------------------------------------------
    def _lu_stack(self, a, letter):
        """Batched LU of every matrix of ``a``: the factors (column-major,
        the stack's shape), pivots and info words."""
        n, batch = a.shape[-1], size_of(a.shape[:-2])
        lu = self._column_major_stack(a)
        pivots = self.gpu.empty(a.shape[:-2] + (n,), np.int32)
        infos = self.gpu.zeros(a.shape[:-2], np.int32)
        addresses = _addresses(self.gpu, lu)
        self.batched.factor(letter, n, addresses.ptr, pivots.ptr, infos.ptr, batch)
        return lu, pivots, infos

    def _column_major_stack(self, stack):
        """A contiguous copy whose matrices are ``stack``'s in column-major order."""
        copy = self.gpu.empty(stack.shape[:-2] + stack.shape[-2:][::-1], stack.dtype)
        copy[...] = self.gpu.matrix_transpose(stack)
        return copy

    def _lu(self, matrix, letter, raise_singular):
        n = matrix.shape[-1]
        lu = self._column_major(matrix)
        pivots = self.gpu.empty((n,), np.int32)
        lwork = self.solver.work_size("getrf", letter, n, n, lu.ptr, n)
        self._run("getrf", letter, lwork, matrix.dtype,
                  "Singular matrix" if raise_singular else None,
                  lambda work, info: (n, n, lu.ptr, n, work, pivots.ptr, info))
        return lu, pivots

    def _svd_one(self, matrix, full, vectors):
        """cuSOLVER's gesvd takes m >= n: a wide matrix is factored as its
        transpose (not its conjugate transpose), whose column-major copy is
        the row-major matrix itself.  gesvd's ``rwork`` (real, min(m,n)-1
        unconverged superdiagonal elements, read only where info > 0) is NULL,
        as cuSOLVER allows: the LinAlgError does not report them."""
        m, n = matrix.shape
        wide = m < n
        rows, cols = (n, m) if wide else (m, n)
        k = cols
        x = self._column_major(matrix.T if wide else matrix)  # column-major rows x cols
        sigma = self.gpu.empty((k,), real_part(matrix.dtype))
        letter = cusolver.precision(matrix.dtype)
        lwork = self.solver.work_size("gesvd", letter, rows, cols)
        if not vectors:
            self._run("gesvd", letter, lwork, matrix.dtype, "SVD did not converge",
                      lambda work, info: (b"N", b"N", rows, cols, x.ptr, rows, sigma.ptr, None,
                                          rows, None, cols, work, lwork, None, info))
            return None, sigma, None
        job = b"A" if full else b"S"
        left = self.gpu.empty((rows if full else k, rows), matrix.dtype)  # column-major
        right = self.gpu.empty((cols, cols), matrix.dtype)   # column-major cols x cols
        self._run("gesvd", letter, lwork, matrix.dtype, "SVD did not converge",
                  lambda work, info: (job, job, rows, cols, x.ptr, rows, sigma.ptr, left.ptr,
                                      rows, right.ptr, cols, work, lwork, None, info))
        # ``right`` holds V'^H column-major, which read row-major is conj(V');
        # wide: matrix.T = U' S V'^H, so matrix = conj(V') S U'^T (U = conj(V'), Vh = U'^T)
        if wide:
            return right, sigma, left
        return left.T, sigma, right.T

    def _qr_one(self, matrix, mode):
        m, n = matrix.shape
        k = min(m, n)
        letter = cusolver.precision(matrix.dtype)
        cols = m if mode == "complete" and m > n else n
        x = self.gpu.empty((cols, m), matrix.dtype)  # column-major m x cols
        x[:n] = matrix.T
        tau = self.gpu.empty((k,), matrix.dtype)
        lwork = self.solver.work_size("geqrf", letter, m, n, x.ptr, m)
        self._run("geqrf", letter, lwork, matrix.dtype, None,
                  lambda work, info: (m, n, x.ptr, m, tau.ptr, work, lwork, info))
        factor = self.gpu.empty(x.shape, x.dtype)
        factor[...] = x  # R, before Q overwrites it
        if mode == "r":
            return factor, None
        q_cols = m if mode == "complete" else k
        name = cusolver.routine("orgqr", letter)  # ungqr for complex: Q unitary
        lwork = self.solver.work_size(name, letter, m, q_cols, k, x.ptr, m, tau.ptr)
        self._run(name, letter, lwork, matrix.dtype, None,
                  lambda work, info: (m, q_cols, k, x.ptr, m, tau.ptr, work, lwork, info))
        return factor, x.T[:, :q_cols]

    # -- shared steps -------------------------------------------------------
    def _identities(self, *stacks):
        """Fill each stack of square matrices (None or empty ones skipped)
        with the identity: numpy's vectors of matrices without elements."""
        for stack in stacks:
            if stack is not None and stack.size:
                stack[...] = self.gpu.eye(stack.shape[-1], dtype=stack.dtype)

    def _column_major(self, matrix):
        """A contiguous copy whose memory is ``matrix`` in column-major order."""
        copy = self.gpu.empty(matrix.shape[::-1], matrix.dtype)
        copy[...] = matrix.T
        return copy

    def _run(self, name, letter, lwork, dtype, failure, arguments):
        """Run routine ``name`` with a work area of ``lwork`` elements and an
        info word; raise LinAlgError(``failure``) where it reports one."""
        work = self.gpu.pool.allocate(max(lwork, 1) * np.dtype(dtype).itemsize)
        info = self.gpu.zeros((), np.int32)
        try:
            self.solver.call(name, letter, *arguments(work.ptr, info.ptr))
        finally:
            work.free()  # stream-ordered: later work on this stream runs after
        status = int(info.get())
        if status < 0:
            raise cusolver.SolverError(f"{name}: argument {-status} was refused")
        if status > 0 and failure is not None:
            raise LinAlgError(failure)


def _stacked(a):
    """Whether ``a`` is a stack of matrices small enough for cuBLAS's batched LU."""
    return size_of(a.shape[:-2]) > 1 and a.shape[-1] <= BATCHED_LU_MAX


def _addresses(gpu, stack):
    """A device array of the addresses of the matrices of a contiguous stack
    (keep it until the call using it is queued)."""
    step = stack.shape[-1] * stack.shape[-2] * stack.itemsize
    count = size_of(stack.shape[:-2])
    return gpu.array(stack.ptr + step * np.arange(count, dtype=np.uint64))
