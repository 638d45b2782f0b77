"""``ng.linalg.eig`` and ``eigvals``: general (non-symmetric) matrices, numpy as the oracle,
on both factories (cuSOLVER's Xgeev on the GPU).

Eigenvectors are unique only up to a phase (and their order is the
solver's), so they are checked without numpy's: ``A v == lambda v``, unit
2-norm columns, and the eigenvalues matched to numpy's as multisets.
Dtypes are the installed numpy's: up to numpy 2.4 real matrices give real
results when every eigenvalue of the stack is real, complex otherwise;
from numpy 2.5 on complex always.
"""
import numpy as np
import pytest

from conftest import normal_array, to_host

DTYPES = [np.dtype(np.float32), np.dtype(np.float64),
          np.dtype(np.complex64), np.dtype(np.complex128)]
IDS = ["f32", "f64", "c64", "c128"]
#: numpy 2.5 made eig's results complex for every real matrix (numpy/numpy#30411);
#: up to 2.4 they are real where every eigenvalue of the stack is
KEEPS_REAL = np.linalg.eigvals(np.eye(1)).dtype.kind == "f"


def _real_spectrum(dtype):
    """The dtype of eig's results for matrices of ``dtype`` with real eigenvalues."""
    return np.dtype(dtype) if KEEPS_REAL else np.result_type(dtype, np.complex64)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _matched(got, want):
    """``got`` reordered to pair each of ``want``'s values with its nearest
    unused one (eigenvalues come in no particular order)."""
    got, order = list(got), []
    for w in want:
        k = int(np.argmin([abs(g - w) for g in got]))
        order.append(got.pop(k))
    return np.array(order)


def _check_eig(ng, a, dtype):
    """eig and eigvals of ``a`` against numpy's: dtypes and shapes, eigenvalues
    as multisets, ``A V == V diag(w)`` and unit columns."""
    t = ng.array(a)
    want = np.linalg.eig(a)
    w, v = (to_host(x) for x in ng.linalg.eig(t))
    values = to_host(ng.linalg.eigvals(t))
    assert (w.dtype, v.dtype, values.dtype) == (want.eigenvalues.dtype,
                                                want.eigenvectors.dtype,
                                                np.linalg.eigvals(a).dtype)
    assert (w.shape, v.shape, values.shape) == (want.eigenvalues.shape,
                                                want.eigenvectors.shape,
                                                want.eigenvalues.shape)
    if not a.size:
        return w, v
    scale = max(np.abs(a).max(), 1.0) * a.shape[-1]
    tol = _tol(dtype) * scale
    for idx in np.ndindex(a.shape[:-2]):
        np.testing.assert_allclose(_matched(w[idx], want.eigenvalues[idx]),
                                   want.eigenvalues[idx], rtol=0, atol=tol)
        np.testing.assert_allclose(_matched(values[idx], w[idx]), w[idx], rtol=0, atol=tol)
        np.testing.assert_allclose(a[idx] @ v[idx], v[idx] * w[idx][None, :], rtol=0, atol=tol)
        np.testing.assert_allclose(np.linalg.norm(v[idx], axis=0), 1, rtol=0, atol=tol)
    return w, v


def _with_pairs(dtype, seed=0):
    """Real 5x5 matrices similar to blocks with eigenvalues 1 +/- 2i, -0.5 +/- 1i and 3."""
    blocks = np.zeros((5, 5))
    blocks[:2, :2] = [[1, -2], [2, 1]]
    blocks[2:4, 2:4] = [[-0.5, -1], [1, -0.5]]
    blocks[4, 4] = 3
    s = normal_array(np.float64, (5, 5), seed) + 4 * np.eye(5)
    return (s @ blocks @ np.linalg.inv(s)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_random_matrices_and_stacks(ng, dtype):
    _check_eig(ng, normal_array(dtype, (6, 6), seed=1), dtype)
    w, _ = _check_eig(ng, normal_array(dtype, (2, 3, 5, 5), seed=2), dtype)
    if dtype.kind == "f":  # random real matrices have complex pairs: numpy's complex results
        assert w.dtype.kind == "c"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_complex_conjugate_pairs(ng, dtype):
    a = _with_pairs(dtype)
    w, v = _check_eig(ng, a, dtype)
    expected = np.array([1 + 2j, 1 - 2j, -0.5 + 1j, -0.5 - 1j, 3])
    np.testing.assert_allclose(_matched(w, expected), expected, atol=50 * _tol(dtype))
    if dtype.kind == "f":  # a pair's vectors are each other's conjugates
        first = int(np.argmin(np.abs(w - (1 + 2j))))
        second = int(np.argmin(np.abs(w - (1 - 2j))))
        np.testing.assert_allclose(v[:, second], np.conj(v[:, first]), atol=50 * _tol(dtype))
    # a 2x2 rotation: eigenvalues +/- i
    w, _ = _check_eig(ng, np.array([[0, 1], [-1, 0]], dtype), dtype)
    np.testing.assert_allclose(_matched(w, [1j, -1j]), [1j, -1j], atol=_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_real_spectra_give_numpys_dtypes(ng, dtype):
    sym = normal_array(dtype, (2, 5, 5), seed=3)
    sym = sym + np.conj(np.swapaxes(sym, -1, -2))  # symmetric (Hermitian): real eigenvalues
    w, v = _check_eig(ng, sym, dtype)
    assert w.dtype == _real_spectrum(dtype)
    tri = np.triu(normal_array(dtype, (4, 4), seed=4)) + np.diag(np.arange(4)).astype(dtype)
    w, v = _check_eig(ng, tri, dtype)  # non-symmetric, real distinct eigenvalues
    assert w.dtype == v.dtype == _real_spectrum(dtype)
    # a stack with one matrix of complex pairs (a rotation block: +/- i) is
    # complex throughout, as numpy's
    pairs = tri.copy()
    pairs[:2, :2] = [[0, 1], [-1, 0]]
    mixed = np.stack([tri, pairs])
    w, _ = _check_eig(ng, mixed, dtype)
    assert w.dtype == np.result_type(dtype, np.complex64)


def test_integers_and_bool_compute_in_float64(ng):
    w, v = _check_eig(ng, np.array([[2, 1], [1, 2]], np.int32), np.float64)
    assert w.dtype == v.dtype == _real_spectrum(np.float64)
    w, _ = _check_eig(ng, np.array([[0, 1], [-1, 0]], np.int64), np.float64)
    assert w.dtype == np.complex128
    _check_eig(ng, np.eye(3, dtype=bool), np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (1, 1), (3, 1, 1)],
                         ids=["0x0", "stack-0x0", "no-matrices", "1x1", "stack-1x1"])
def test_empty_and_1x1(ng, dtype, shape):
    _check_eig(ng, normal_array(dtype, shape, seed=5), dtype)


def test_errors_as_numpys(ng):
    with pytest.raises(np.linalg.LinAlgError, match="Last 2 dimensions of the array must be square"):
        ng.linalg.eig(ng.array(np.ones((2, 3))))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        ng.linalg.eigvals(ng.array(np.ones(3)))
    for bad in (np.nan, np.inf):
        a = np.eye(3)
        a[1, 2] = bad
        for function in (ng.linalg.eig, ng.linalg.eigvals):
            with pytest.raises(np.linalg.LinAlgError, match="must not contain infs or NaNs"):
                function(ng.array(np.stack([np.eye(3), a])))
    with pytest.raises(TypeError, match="unsupported in linalg"):
        ng.linalg.eig(ng.array(np.eye(2, dtype=np.float16)))


def test_result_is_numpys_named_tuple(ng):
    a = _with_pairs(np.float64)
    result = ng.linalg.eig(ng.array(a))
    w, v = result
    assert result.eigenvalues is w and result.eigenvectors is v
    # strided and transposed views are read as the matrices they show
    _check_eig(ng, np.ascontiguousarray(a.T), np.float64)
    got = to_host(ng.linalg.eigvals(ng.matrix_transpose(ng.array(a))[::-1, ::-1]))
    want = np.linalg.eigvals(a.T[::-1, ::-1])
    np.testing.assert_allclose(_matched(got, want), want, atol=1e-9)
