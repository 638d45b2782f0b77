"""``ng.linalg``: numpy.linalg as the oracle, on both factories (cuSOLVER on the GPU).

Values where they are unique (solutions, determinants, eigenvalues,
singular values, the Cholesky factor, norms); reconstructions where signs
and complex phases are free (eigenvectors, singular vectors, Q and R, and
that they are unitary); stacks of matrices, strided views, empty and 1x1
matrices, numpy's dtypes (real eigenvalues and singular values of complex
matrices) and its LinAlgError.
"""
import numpy as np
import pytest

from conftest import normal_array, to_host

DTYPES = [np.dtype(np.float32), np.dtype(np.float64)]
IDS = ["f32", "f64"]
#: the dtypes of the factorisations that take complex matrices too
WITH_COMPLEX = DTYPES + [np.dtype(np.complex64), np.dtype(np.complex128)]
WITH_COMPLEX_IDS = IDS + ["c64", "c128"]


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _close(got, want, dtype):
    got = to_host(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    scale = max(np.abs(want).max(), 1.0) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=_tol(dtype) * scale)


def _spd(dtype, shape, seed=0):
    """Hermitian (real: symmetric) positive definite matrices."""
    a = normal_array(np.complex128 if np.dtype(dtype).kind == "c" else np.float64, shape, seed)
    n = shape[-1]
    return (a @ _h(a) + n * np.eye(n)).astype(dtype)


def _h(x):
    """The conjugate transpose of each matrix."""
    return np.conj(np.swapaxes(x, -1, -2))


def _identities(x):
    """Identities of the shape of ``x``'s matrices (square), one per matrix."""
    return np.broadcast_to(np.eye(x.shape[-1]), x.shape)


def _check_eigh(ng, t, a, dtype):
    """eigvalsh and eigh of Hermitian ``a``, as ``t`` and as each triangle
    alone: values and dtypes as numpy's, ``A V == V diag(w)``, ``V`` unitary."""
    values = to_host(ng.linalg.eigvalsh(t))
    want = np.linalg.eigvalsh(a)
    assert values.dtype == want.dtype
    _close(values, want, dtype)
    # only the triangle named is read: the other holds zeros in the last two
    for given, uplo in ((t, "L"), (ng.array(np.tril(a)), "L"), (ng.array(np.triu(a)), "U")):
        w, v = (to_host(x) for x in ng.linalg.eigh(given, UPLO=uplo))
        want = np.linalg.eigh(a, UPLO=uplo)
        assert (w.dtype, v.dtype) == (want.eigenvalues.dtype, want.eigenvectors.dtype)
        assert v.shape == want.eigenvectors.shape
        _close(w, want.eigenvalues, dtype)
        _close(a @ v, v * w[..., None, :], dtype)
        _close(_h(v) @ v, _identities(v), dtype)


def _check_svd(ng, t, a, dtype):
    """svdvals and svd (reduced and full) of ``a`` (as ``t``): values, shapes
    and dtypes as numpy's, ``U S Vh == A``, orthonormal columns of ``U`` and rows of ``Vh``."""
    values = to_host(ng.linalg.svdvals(t))
    want = np.linalg.svd(a, compute_uv=False)
    assert values.dtype == want.dtype
    _close(values, want, dtype)
    for full in (False, True):
        u, s, vh = (to_host(x) for x in ng.linalg.svd(t, full_matrices=full))
        want = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (want.U.shape, want.S.shape, want.Vh.shape)
        assert (u.dtype, s.dtype, vh.dtype) == (want.U.dtype, want.S.dtype, want.Vh.dtype)
        _close(s, want.S, dtype)
        k = s.shape[-1]
        _close(u[..., :k] * s[..., None, :] @ vh[..., :k, :], a, dtype)
        _close(_h(u) @ u, _identities(_h(u) @ u), dtype)
        _close(vh @ _h(vh), _identities(vh @ _h(vh)), dtype)
        if k == 0:  # numpy's vectors of a matrix without elements: identities
            assert np.array_equal(u, want.U) and np.array_equal(vh, want.Vh)


def _check_qr(ng, t, a, dtype):
    """qr of ``a`` (as ``t``) in every mode: shapes and dtypes as numpy's,
    ``Q R == A``, ``Q`` with orthonormal columns, ``R`` upper triangular and
    ``R^H R == A^H A`` (the same for every choice of phases)."""
    for mode in ("reduced", "complete"):
        q, r = (to_host(x) for x in ng.linalg.qr(t, mode=mode))
        want = np.linalg.qr(a, mode=mode)
        assert (q.shape, r.shape) == (want.Q.shape, want.R.shape)
        assert (q.dtype, r.dtype) == (want.Q.dtype, want.R.dtype)
        _close(q @ r, a, dtype)
        _close(_h(q) @ q, _identities(_h(q) @ q), dtype)
        assert not np.tril(r, -1).any()
        if 0 in a.shape[-2:]:
            assert np.array_equal(q, want.Q)
    r = to_host(ng.linalg.qr(t, mode="r"))
    want = np.linalg.qr(a, mode="r")
    assert (r.shape, r.dtype) == (want.shape, want.dtype)
    assert not np.tril(r, -1).any()
    _close(_h(r) @ r, _h(a) @ a, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_solve_inv_det(ng, dtype):
    a = normal_array(dtype, (3, 5, 5)) + 3 * np.eye(5, dtype=dtype)
    b = normal_array(dtype, (3, 5, 2), seed=1)
    t = ng.array(a)
    _close(ng.linalg.solve(t, ng.array(b)), np.linalg.solve(a, b), dtype)
    _close(ng.linalg.solve(t[0], ng.array(b[0, :, 0])), np.linalg.solve(a[0], b[0, :, 0]), dtype)
    _close(ng.linalg.inv(t), np.linalg.inv(a), dtype)
    _close(ng.linalg.det(t), np.linalg.det(a), dtype)
    sign, logabsdet = ng.linalg.slogdet(t)
    want = np.linalg.slogdet(a)
    _close(sign, want.sign, dtype)
    _close(logabsdet, want.logabsdet, dtype)
    assert to_host(ng.linalg.inv(t)).dtype == dtype


def test_a_singular_member_of_a_stack_raises(ng):
    stack = np.stack([np.eye(4), np.ones((4, 4)), 2 * np.eye(4)])
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        ng.linalg.solve(ng.array(stack), ng.array(np.ones((3, 4, 1))))
    np.testing.assert_allclose(to_host(ng.linalg.det(ng.array(stack))), np.linalg.det(stack),
                               atol=1e-12)
    sign, logabsdet = ng.linalg.slogdet(ng.array(stack))
    assert to_host(sign)[1] == 0 and to_host(logabsdet)[1] == -np.inf


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_stacks_broadcast_and_wide_matrices_factor_one_by_one(ng, dtype):
    a = normal_array(dtype, (2, 1, 6, 6), seed=4) + 3 * np.eye(6, dtype=dtype)
    b = normal_array(dtype, (3, 6, 2), seed=5)
    _close(ng.linalg.solve(ng.array(a), ng.array(b)), np.linalg.solve(a, b), dtype)
    big = normal_array(dtype, (2, 130, 130), seed=6) + 12 * np.eye(130, dtype=dtype)
    _close(ng.linalg.slogdet(ng.array(big))[1], np.linalg.slogdet(big)[1], dtype)


def test_singular_and_not_square_raise(ng):
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        ng.linalg.inv(ng.array(np.ones((3, 3))))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        ng.linalg.det(ng.array(np.ones((2, 3))))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        ng.linalg.inv(ng.array(np.ones(3)))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        ng.linalg.cholesky(ng.array(-np.eye(3)))
    assert to_host(ng.linalg.det(ng.array(np.ones((3, 3))))) == 0
    with pytest.raises(TypeError, match="unsupported in linalg"):
        ng.linalg.inv(ng.array(np.eye(2, dtype=np.float16)))


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
def test_cholesky_and_eigh(ng, dtype):
    a = _spd(dtype, (2, 6, 6))
    t = ng.array(a)
    _close(ng.linalg.cholesky(t), np.linalg.cholesky(a), dtype)
    _close(ng.linalg.cholesky(t, upper=True), np.linalg.cholesky(a, upper=True), dtype)
    _check_eigh(ng, t, a, dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5), (2, 3, 5), (3, 7, 2)],
                         ids=["tall", "wide", "stack", "wide-stack", "tall-stack"])
def test_svd_qr_and_friends(ng, dtype, shape):
    a = normal_array(dtype, shape, seed=2)
    t = ng.array(a)
    _check_svd(ng, t, a, dtype)
    _check_qr(ng, t, a, dtype)
    _close(ng.linalg.pinv(t), np.linalg.pinv(a), dtype)
    assert np.array_equal(to_host(ng.linalg.matrix_rank(t)), np.linalg.matrix_rank(a))
    _close(ng.linalg.matrix_norm(t, ord="nuc"), np.linalg.matrix_norm(a, ord="nuc"), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
def test_factorisations_of_strided_views(ng, dtype):
    a = normal_array(dtype, (3, 8, 10), seed=11)
    t = ng.array(a)
    # every other matrix and row, the columns reversed: wide, non-contiguous
    _check_svd(ng, t[::2, 1::2, ::-1], a[::2, 1::2, ::-1], dtype)
    _check_qr(ng, t[::2, 1::2, ::-1], a[::2, 1::2, ::-1], dtype)
    # transposed views: tall, columns adjacent in memory
    _check_svd(ng, ng.matrix_transpose(t)[..., ::3], np.swapaxes(a, -1, -2)[..., ::3], dtype)
    _check_qr(ng, ng.matrix_transpose(t)[1], a[1].T, dtype)
    h = _spd(dtype, (2, 5, 5), seed=12)
    # reversed rows and columns and a transpose of a Hermitian matrix are Hermitian
    _check_eigh(ng, ng.array(h)[:, ::-1, ::-1], h[:, ::-1, ::-1], dtype)
    _check_eigh(ng, ng.matrix_transpose(ng.array(h)), np.swapaxes(h, -1, -2), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0), (0, 4, 4), (1, 1), (2, 1, 1)],
                         ids=["0x3", "3x0", "stack-0x0", "no-matrices", "1x1", "stack-1x1"])
def test_factorisations_of_empty_and_1x1_matrices(ng, dtype, shape):
    a = normal_array(dtype, shape, seed=13)
    _check_svd(ng, ng.array(a), a, dtype)
    _check_qr(ng, ng.array(a), a, dtype)
    if shape[-1] == shape[-2]:
        h = _spd(dtype, shape, seed=14)
        _check_eigh(ng, ng.array(h), h, dtype)
        t = ng.array(h)
        _close(ng.linalg.cholesky(t), np.linalg.cholesky(h), dtype)
        _close(ng.linalg.inv(t), np.linalg.inv(h), dtype)
        _close(ng.linalg.det(t), np.linalg.det(h), dtype)
        for got, want in zip(ng.linalg.slogdet(t), np.linalg.slogdet(h)):
            _close(got, want, dtype)
            assert to_host(got).dtype == want.dtype
        rhs = normal_array(dtype, shape[:-1] + (2,), seed=15)
        _close(ng.linalg.solve(t, ng.array(rhs)), np.linalg.solve(h, rhs), dtype)


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
def test_solve_without_right_hand_sides_still_refuses_a_singular_matrix(ng, dtype):
    a = _spd(dtype, (3, 3), seed=16)
    assert to_host(ng.linalg.solve(ng.array(a), ng.zeros((3, 0), dtype))).shape == (3, 0)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        ng.linalg.solve(ng.zeros((3, 3), dtype), ng.zeros((3, 0), dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_norms_powers_and_products(ng, dtype):
    a = normal_array(dtype, (3, 4, 4), seed=3)
    t = ng.array(a)
    for ord_ in ("fro", 1, -1, np.inf, -np.inf, 2, -2):
        _close(ng.linalg.matrix_norm(t, ord=ord_), np.linalg.matrix_norm(a, ord=ord_), dtype)
    for ord_ in (2, 1, np.inf, -np.inf, 0, 3):
        _close(ng.linalg.vector_norm(t, axis=-1, ord=ord_),
               np.linalg.vector_norm(a, axis=-1, ord=ord_), dtype)
    _close(ng.linalg.norm(t), np.linalg.norm(a), dtype)
    _close(ng.linalg.norm(t[0], axis=0), np.linalg.norm(a[0], axis=0), dtype)
    _close(ng.linalg.norm(t, axis=(1, 2), keepdims=True),
           np.linalg.norm(a, axis=(1, 2), keepdims=True), dtype)
    for n in (0, 1, 3, -2):
        _close(ng.linalg.matrix_power(t + 4 * ng.eye(4, dtype=dtype), n),
               np.linalg.matrix_power(a + 4 * np.eye(4, dtype=dtype), n), dtype)
    _close(ng.linalg.trace(t, offset=1), np.linalg.trace(a, offset=1), dtype)
    _close(ng.linalg.diagonal(t), np.linalg.diagonal(a), dtype)
    _close(ng.linalg.matmul(t, t), a @ a, dtype)
    _close(ng.linalg.vecdot(t, t), np.linalg.vecdot(a, a), dtype)


def test_integers_compute_in_float64(ng):
    a = np.array([[2, 1], [1, 3]])
    got = to_host(ng.linalg.inv(ng.array(a)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.inv(a))


def test_empty_matrices(ng):
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        a = np.zeros(shape)
        got = to_host(ng.linalg.pinv(ng.array(a)))
        assert got.shape == np.linalg.pinv(a).shape and not got.any()
        assert np.array_equal(to_host(ng.linalg.matrix_rank(ng.array(a))), np.linalg.matrix_rank(a))


@pytest.mark.parametrize("dtype", WITH_COMPLEX, ids=WITH_COMPLEX_IDS)
def test_lstsq(ng, dtype):
    a = normal_array(dtype, (8, 3), seed=7)
    for b in (normal_array(dtype, (8,), seed=8), normal_array(dtype, (8, 2), seed=9)):
        got, want = ng.linalg.lstsq(ng.array(a), ng.array(b)), np.linalg.lstsq(a, b)
        _close(got.x, want[0], dtype)
        _close(got.residuals, want[1], dtype)
        assert got.residuals.dtype == want[1].dtype and got.s.dtype == want[3].dtype
        assert got.rank == want[2]
        _close(got.s, want[3], dtype)
    wide = ng.linalg.lstsq(ng.array(a[:2]), ng.array(a[:2, 0]))
    assert to_host(wide.residuals).shape == (0,) and wide.rank == 2
    deficient = np.column_stack([a[:, 0], a[:, 0]])
    assert ng.linalg.lstsq(ng.array(deficient), ng.array(a[:, 1])).rank == 1
    with pytest.raises(np.linalg.LinAlgError, match="Incompatible dimensions"):
        ng.linalg.lstsq(ng.array(a), ng.array(np.ones(3, dtype)))


def test_polyfit(ng):
    rng = np.random.default_rng(8)
    x = np.linspace(-1, 2, 12)
    y = 3 * x ** 2 - x + 0.5 + 0.01 * rng.standard_normal(12)
    both = np.column_stack([y, 2 * y])
    w = rng.random(12)
    for args, kwargs in (((x, y, 2), {}), ((x, both, 3), {}), ((x, y, 2), {"w": w}),
                         ((x, y, 2), {"cov": True}), ((x, both, 2), {"cov": "unscaled"}),
                         ((x, y, 1), {"full": True})):
        got = ng.polyfit(ng.array(args[0]), ng.array(args[1]), args[2], **kwargs)
        want = np.polyfit(*args, **kwargs)
        for g, v in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(to_host(g), v, rtol=1e-8, atol=1e-10)
    with pytest.warns(np.exceptions.RankWarning):
        ng.polyfit(ng.array(np.ones(5)), ng.array(np.arange(5.0)), 2)
    with pytest.raises(ValueError, match="deg >= 0"):
        ng.polyfit(ng.array(x), ng.array(y), -1)
    with pytest.raises(TypeError, match="same length"):
        ng.polyfit(ng.array(x), ng.array(y[:5]), 1)


@pytest.mark.parametrize("dtype", [np.dtype(np.complex64), np.dtype(np.complex128)],
                         ids=["c64", "c128"])
def test_complex_solve_det_and_cholesky(ng, dtype):
    rng = np.random.default_rng(9)
    shape = (3, 5, 5)
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    a += 4 * np.eye(5, dtype=dtype)
    b = (rng.standard_normal((3, 5, 2)) + 1j * rng.standard_normal((3, 5, 2))).astype(dtype)
    tol = 2e-4 if dtype == np.complex64 else 1e-10
    for got, want in ((ng.linalg.solve(ng.array(a), ng.array(b)), np.linalg.solve(a, b)),
                      (ng.linalg.solve(ng.array(a[0]), ng.array(b[0])), np.linalg.solve(a[0], b[0])),
                      (ng.linalg.inv(ng.array(a)), np.linalg.inv(a)),
                      (ng.linalg.det(ng.array(a)), np.linalg.det(a)),
                      (ng.linalg.det(ng.array(a[1])), np.linalg.det(a[1]))):
        got = to_host(got)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    sign, logabsdet = ng.linalg.slogdet(ng.array(a))
    want = np.linalg.slogdet(a)
    assert to_host(logabsdet).dtype == want.logabsdet.dtype
    np.testing.assert_allclose(to_host(sign), want.sign, rtol=tol, atol=tol)
    hermitian = a @ np.conj(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(to_host(ng.linalg.cholesky(ng.array(hermitian))),
                               np.linalg.cholesky(hermitian), rtol=tol, atol=tol * 10)
