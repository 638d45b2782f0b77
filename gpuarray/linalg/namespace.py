"""``ng.linalg``: numpy's ``numpy.linalg`` and the array API's ``linalg`` extension.

In: tensors, op-trees or array_likes of the factory and numpy's arguments.
Out: tensors (factorisations, solutions), lazy op-trees (norms, traces,
products) or numpy's named tuples of them, with numpy's dtypes (integers
and bool computed in float64; ``eig``'s real or complex as the installed
numpy's) and numpy's ``LinAlgError`` for matrices that are not square,
not positive definite, singular, or (``eig``) not finite.

The argument checks, the dtype rule, stacks of matrices and everything
built from other functions (``inv`` from ``solve``, ``pinv``, ``lstsq``
and ``matrix_rank`` from the SVD, ``matrix_power``, the norms) are here,
shared by both factories.  The factorisations are the factory's
``_linalg`` engine: cuSOLVER on the GPU (:mod:`gpuarray.linalg.device`),
``numpy.linalg`` on the CPU (:mod:`gpuarray.linalg.functions`).
"""
import operator
from collections import namedtuple

import numpy as np

from ..core import dtypes
from ..core.optree import Expression

LinAlgError = np.linalg.LinAlgError
EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
QRResult = namedtuple("QRResult", "Q R")
SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
SVDResult = namedtuple("SVDResult", "U S Vh")
LstsqResult = namedtuple("LstsqResult", "x residuals rank s")


class LinAlg:
    """The ``linalg`` namespace of one factory (``ng.linalg.solve(A, b)``)."""

    LinAlgError = LinAlgError

    def __init__(self, factory):
        self._xp = factory

    def __repr__(self):
        return f"<linalg namespace of {self._xp!r}>"

    # -- factorisations -----------------------------------------------------
    def cholesky(self, x, /, *, upper=False):
        """Cholesky factor: lower ``L`` with ``L @ L^H == x`` (upper: its transpose).

        Raises
        ------
        LinAlgError
            Not square, or not positive definite.
        """
        a = self._square(x)
        lower = self._engine.cholesky(a)
        return self._adjoint(lower) if upper else lower

    def solve(self, x1, x2, /):
        """``x`` with ``x1 @ x == x2``; ``x2`` a vector or a stack of matrices, as numpy 2.

        Raises
        ------
        LinAlgError
            ``x1`` not square, or singular.
        """
        a = self._square(x1)
        b = self._matrix(x2, ndim=1, dtype=a.dtype)
        vector = b.ndim == 1
        if vector:
            b = b[:, None]
        if b.shape[-2] != a.shape[-1]:
            raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 "
                             f"({b.shape[-2]} is different from {a.shape[-1]})")
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = self._xp.broadcast_to(a, batch + a.shape[-2:])
        b = self._xp.broadcast_to(b, batch + b.shape[-2:])
        result = self._engine.solve(a, b)
        return result[..., 0] if vector else result

    def inv(self, x, /):
        """Inverse of each matrix (``solve`` against the identity).

        Raises
        ------
        LinAlgError
            Not square, or singular.
        """
        a = self._square(x)
        identity = self._xp.eye(a.shape[-1], dtype=a.dtype)
        return self._engine.solve(a, self._xp.broadcast_to(identity, a.shape))

    def det(self, x, /):
        """Determinant of each matrix (from its LU factorisation)."""
        sign, logabsdet = self._engine.slogdet(self._square(x))
        return self._xp.multiply(sign, self._xp.exp(logabsdet))

    def slogdet(self, x, /):
        """Sign and natural log of the absolute determinant, as numpy's named tuple."""
        return SlogdetResult(*self._engine.slogdet(self._square(x)))

    def eigh(self, x, /, UPLO="L"):  # noqa: N803 - numpy's parameter name
        """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices,
        from their lower (``UPLO="L"``) or upper triangle."""
        a = self._square(x)
        return EighResult(*self._engine.eigh(a, _uplo(UPLO), True))

    def eigvalsh(self, x, /, UPLO="L"):  # noqa: N803 - numpy's parameter name
        """Eigenvalues (ascending) of symmetric matrices."""
        return self._engine.eigh(self._square(x), _uplo(UPLO), False)[0]

    def eig(self, x, /):
        """Eigenvalues and right eigenvectors (columns, unit 2-norm, largest
        component real) of general square matrices, as ``numpy.linalg.eig``.

        Returns
        -------
        EigResult
            ``eigenvalues`` (..., M) and ``eigenvectors`` (..., M, M), in no
            particular order, in the installed numpy's dtypes: complex for
            complex matrices, and for real ones (integers and bool in
            float64) complex of their precision (complex64 for float32) from
            numpy 2.5 on; up to numpy 2.4 real where every eigenvalue of the
            stack is real -- a data-dependent rule, which on the GPU reads
            one boolean back.

        Raises
        ------
        LinAlgError
            Fewer than two dimensions, not square, infs or NaNs, or
            eigenvalues that did not converge.
        """
        return EigResult(*self._engine.eig(self._general(x), True))

    def eigvals(self, x, /):
        """Eigenvalues of general square matrices, as ``numpy.linalg.eigvals``
        (dtypes and errors as :meth:`eig`)."""
        return self._engine.eig(self._general(x), False)[0]

    def svd(self, x, /, full_matrices=True, compute_uv=True, hermitian=False):
        """Singular value decomposition ``x = U @ diag(S) @ Vh``, as numpy's
        (``S`` alone without ``compute_uv``)."""
        a = self._matrix(x)
        if not compute_uv:
            return self._engine.svd(a, False, False)[1]
        return SVDResult(*self._engine.svd(a, bool(full_matrices), True))

    def svdvals(self, x, /):
        """Singular values, descending."""
        return self._engine.svd(self._matrix(x), False, False)[1]

    def qr(self, x, /, mode="reduced"):
        """QR factorisation (``mode`` "reduced", "complete" or "r"), as numpy's."""
        if mode not in ("reduced", "complete", "r"):
            raise ValueError(f"Unrecognized mode '{mode}'")
        a = self._matrix(x)
        q, r = self._engine.qr(a, mode)
        return r if mode == "r" else QRResult(q, r)

    # -- built from the factorisations --------------------------------------
    def pinv(self, x, /, rcond=None, hermitian=False, *, rtol=None):
        """Moore-Penrose pseudo-inverse: singular values below ``rtol`` times the
        largest are dropped (default ``max(M, N) * eps``), as numpy's."""
        a = self._matrix(x)
        if 0 in a.shape[-2:]:  # no singular values: zeros of the transposed shape
            return self._xp.zeros(a.shape[:-2] + a.shape[-2:][::-1], a.dtype)
        u, s, vh = self._engine.svd(a, False, True)
        cutoff = self._cutoff(a, s, rcond if rtol is None else rtol)
        s_inv = self._xp.where(s > cutoff, 1 / self._xp.where(s > cutoff, s, 1), 0)
        return self._xp.matmul(self._adjoint(vh) * s_inv[..., None, :], self._adjoint(u))

    def lstsq(self, a, b, rcond=None):
        """Least-squares solution of ``a @ x = b``, as ``numpy.linalg.lstsq``
        (from the SVD, as numpy's gelsd): ``x``, the residuals' sums of
        squares (empty unless ``a`` has full column rank and more rows than
        columns), the rank and the singular values.

        Raises
        ------
        LinAlgError
            ``a`` or ``b`` not 2-D / 1-D, or rows that differ.
        """
        xp = self._xp
        a = self._matrix(a)
        b = self._matrix(b, ndim=1, dtype=a.dtype)
        if a.ndim != 2 or b.ndim > 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
        if b.shape[0] != a.shape[0]:
            raise LinAlgError("Incompatible dimensions")
        m, n = a.shape
        vector = b.ndim == 1
        rhs = b[:, None] if vector else b
        if 0 in a.shape:
            x = xp.zeros((n, rhs.shape[1]), a.dtype)
            s = xp.zeros((0,), dtypes.real_part(a.dtype))
            rank = 0
        else:
            u, s, vh = self._engine.svd(a, False, True)
            tolerance = max(m, n) * np.finfo(a.dtype).eps if rcond is None else rcond
            cutoff = float(xp.max(s)) * tolerance
            kept = s > cutoff
            rank = int(xp.sum(kept))
            inverse = xp.where(kept, 1 / xp.where(kept, s, 1), 0)
            x = xp.matmul(self._adjoint(vh), inverse[:, None] * xp.matmul(self._adjoint(u), rhs))
            x = xp.evaluate(x)
        if rank == n and m > n:
            residuals = xp.sum(xp.square(xp.abs(xp.subtract(xp.matmul(a, x), rhs))), axis=0)
        else:
            residuals = xp.zeros((0,), dtypes.real_part(a.dtype))
        return LstsqResult(x[:, 0] if vector else x, residuals, rank, s)

    def matrix_rank(self, x, /, tol=None, hermitian=False, *, rtol=None):
        """Number of singular values above the tolerance, as numpy's."""
        a = self._matrix(x)
        if 0 in a.shape[-2:]:
            return self._xp.zeros(a.shape[:-2], np.int64)
        s = self._engine.svd(a, False, False)[1]
        cutoff = tol if tol is not None else self._cutoff(a, s, rtol)
        return self._xp.sum(s > cutoff, axis=-1)

    def matrix_power(self, x, n, /):
        """``x`` multiplied by itself ``n`` times (``inv`` first for negative ``n``),
        by repeated squaring."""
        n = operator.index(n)
        a = self._square(x, keep_dtype=True)
        if n == 0:
            return self._xp.broadcast_to(self._xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
        if n < 0:
            a, n = self.inv(a), -n
        result, power = None, a
        while n:
            if n & 1:
                result = power if result is None else self._xp.evaluate(self._xp.matmul(result, power))
            n >>= 1
            if n:
                power = self._xp.evaluate(self._xp.matmul(power, power))
        return result

    # -- norms and products -----------------------------------------------
    def vector_norm(self, x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
        """The ``ord``-norm over ``axis`` (all axes by default), lazy."""
        xp = self._xp
        a = xp.operand(x) if isinstance(x, Expression) else xp.asarray(x)
        magnitude = xp.absolute(a)
        if ord == np.inf:
            return xp.max(magnitude, axis=axis, keepdims=keepdims)
        if ord == -np.inf:
            return xp.min(magnitude, axis=axis, keepdims=keepdims)
        if ord == 0:
            return xp.sum(xp.astype(xp.not_equal(a, 0), magnitude.dtype), axis=axis,
                          keepdims=keepdims)
        if ord == 1:
            return xp.sum(magnitude, axis=axis, keepdims=keepdims)
        if ord == 2:
            return xp.sqrt(xp.sum(xp.square(magnitude), axis=axis, keepdims=keepdims))
        total = xp.sum(xp.power(magnitude, ord), axis=axis, keepdims=keepdims)
        return xp.power(total, 1 / ord)

    def matrix_norm(self, x, /, *, keepdims=False, ord="fro"):  # noqa: A002
        """Frobenius, nuclear, 1, -1, 2, -2, inf or -inf norm of each matrix."""
        xp = self._xp
        a = self._matrix(x)
        axes = (-2, -1)
        if ord == "fro":
            result = xp.sqrt(xp.sum(xp.square(xp.absolute(a)), axis=axes))
        elif ord in ("nuc", 2, -2):
            s = self._engine.svd(a, False, False)[1]
            result = {"nuc": xp.sum, 2: xp.max, -2: xp.min}[ord](s, axis=-1)
        elif ord in (1, -1, np.inf, -np.inf):
            summed_axis = -2 if ord in (1, -1) else -1
            sums = xp.sum(xp.absolute(a), axis=summed_axis)
            result = (xp.max if ord > 0 else xp.min)(sums, axis=-1)
        else:
            raise ValueError(f"Invalid norm order '{ord}' for matrices")
        return xp.expand_dims(xp.expand_dims(result, -1), -1) if keepdims else result

    def norm(self, x, ord=None, axis=None, keepdims=False):  # noqa: A002
        """``numpy.linalg.norm``: a vector norm for one axis (or a flattened
        array), a matrix norm for two."""
        a = self._xp.operand(x) if isinstance(x, Expression) else self._xp.asarray(x)
        if axis is None and (ord is None or a.ndim == 1):
            return self.vector_norm(a, keepdims=keepdims, ord=2 if ord is None else ord)
        axes = tuple(range(a.ndim)) if axis is None else (
            (axis,) if isinstance(axis, int) else tuple(axis))
        if len(axes) == 1:
            return self.vector_norm(a, axis=axes[0], keepdims=keepdims,
                                    ord=2 if ord is None else ord)
        if len(axes) != 2:
            raise ValueError("Improper number of dimensions to norm.")
        moved = self._xp.moveaxis(a, axes, (-2, -1))
        result = self.matrix_norm(moved, ord="fro" if ord is None else ord)
        if keepdims:
            for ax in sorted(k % a.ndim for k in axes):
                result = self._xp.expand_dims(result, ax)
        return result

    def cross(self, x1, x2, /, *, axis=-1):
        """Cross product of 3-vectors along ``axis``."""
        return self._xp.cross(x1, x2, axis=axis)

    def diagonal(self, x, /, *, offset=0):
        """Diagonal ``offset`` of each matrix (the last two axes)."""
        return self._xp.diagonal(x, offset, -2, -1)

    def trace(self, x, /, *, offset=0, dtype=None):
        """Sum of diagonal ``offset`` of each matrix."""
        return self._xp.sum(self.diagonal(x, offset=offset), axis=-1, dtype=dtype)

    def matmul(self, x1, x2, /):
        """``x1 @ x2``."""
        return self._xp.matmul(x1, x2)

    def matrix_transpose(self, x, /):
        """The last two axes swapped."""
        return self._xp.matrix_transpose(x)

    def outer(self, x1, x2, /):
        """Outer product of two vectors."""
        return self._xp.outer(x1, x2)

    def tensordot(self, x1, x2, /, *, axes=2):
        """``numpy.tensordot``."""
        return self._xp.tensordot(x1, x2, axes)

    def vecdot(self, x1, x2, /, *, axis=-1):
        """Dot products of vectors along ``axis`` (the first conjugated)."""
        return self._xp.vecdot(x1, x2, axis=axis)

    # -- shared steps -----------------------------------------------------
    @property
    def _engine(self):
        return self._xp._linalg_engine()

    def _matrix(self, x, ndim=2, dtype=None):
        """``x`` as a tensor of at least ``ndim`` dimensions in a linalg dtype."""
        xp = self._xp
        a = xp._tensor(x) if isinstance(x, Expression) else xp.asarray(x)
        if a.ndim < ndim:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                              f"two-dimensional")
        target = dtype if dtype is not None else _linalg_dtype(a.dtype)
        return a if a.dtype == target else xp.evaluate(xp.astype(a, target))

    def _square(self, x, keep_dtype=False):
        a = self._matrix(x) if not keep_dtype else self._xp.asarray(x)
        if a.ndim < 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                              f"two-dimensional")
        if a.shape[-1] != a.shape[-2]:
            raise LinAlgError("Last 2 dimensions of the array must be square")
        return a

    def _general(self, x):
        """``x`` checked for ``eig``: square, and finite, as numpy's (one boolean
        read back; cuSOLVER's Xgeev would return garbage for NaNs)."""
        a = self._square(x)
        if a.size and not bool(self._xp.all(self._xp.isfinite(a))):
            raise LinAlgError("Array must not contain infs or NaNs")
        return a

    def _adjoint(self, x):
        """The conjugate transpose of each matrix (a view for real dtypes)."""
        xt = self._xp.matrix_transpose(x)
        return self._xp.conj(xt) if xt.dtype.kind == "c" else xt

    def _cutoff(self, a, s, rtol):
        """Singular values at or below this are zero (numpy's default tolerance)."""
        if rtol is None:
            rtol = max(a.shape[-2:]) * np.finfo(s.dtype).eps
        return self._xp.max(s, axis=-1, keepdims=True) * rtol


def _linalg_dtype(dtype):
    """numpy.linalg's dtype rule: floats and complex kept, integers and bool
    in float64, float16 and bfloat16 refused."""
    dtype = np.dtype(dtype)
    if dtypes.is_low_precision(dtype):
        raise TypeError(f"array type {dtypes.name(dtype)} is unsupported in linalg")
    return dtype if dtypes.is_inexact(dtype) else np.dtype(np.float64)


def _uplo(value):
    if value not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return value
