"""isclose / allclose / diff / outer / flip against numpy on both factories.

They are built from views and fused elementwise operations, so the GPU runs
them through the fusion compiler; numpy is the oracle for values, shapes,
dtypes and the errors (numpy's wording).
"""
import numpy as np
import pytest
from conftest import assert_matches

FLOATS = [np.float16, np.float32, np.float64]
SPECIAL = np.array([1.0, np.inf, np.nan, -np.inf, 1e-9, 2.0, -0.0, 1.0 + 1e-6])
OTHER = np.array([1.0 + 1e-6, np.inf, np.nan, np.inf, 0.0, 2.1, 0.0, 1.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_and_allclose(ng, dtype, equal_nan):
    a, b = SPECIAL.astype(dtype), OTHER.astype(dtype)
    A, B = ng.array(a), ng.array(b)
    got = ng.evaluate(ng.isclose(A, B, equal_nan=equal_nan))
    assert_matches(got, np.isclose(a, b, equal_nan=equal_nan))
    assert_matches(ng.evaluate(ng.isclose(A, 1.0, rtol=0, atol=1e-3)),
                   np.isclose(a, 1.0, rtol=0, atol=1e-3))
    assert ng.allclose(A, A, equal_nan=equal_nan) == np.allclose(a, a, equal_nan=equal_nan)
    assert ng.allclose(A[4:6], B[4:6], atol=0.2) == np.allclose(a[4:6], b[4:6], atol=0.2)
    assert ng.allclose(A[:0], B[:0]) is True


@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
@pytest.mark.parametrize("n, axis", [(1, -1), (2, 1), (0, 0), (3, 2)])
def test_diff(ng, dtype, n, axis):
    x = (np.arange(2 * 5 * 6).reshape(2, 5, 6) ** 2 % 17).astype(dtype)
    assert_matches(ng.evaluate(ng.diff(ng.array(x), n, axis)), np.diff(x, n, axis))


def test_diff_errors(ng):
    with pytest.raises(ValueError, match="order must be non-negative but got -1"):
        ng.diff(ng.zeros((3,)), -1)
    with pytest.raises(ValueError, match="at least one dimensional"):
        ng.diff(ng.zeros(()))
    with pytest.raises(np.exceptions.AxisError,
                       match="axis 2 is out of bounds for array of dimension 1"):
        ng.diff(ng.zeros((3,)), axis=2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_outer(ng, dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)).astype(dtype), rng.standard_normal(4).astype(dtype)
    assert_matches(ng.evaluate(ng.outer(ng.array(a), ng.array(b))), np.outer(a, b))
    assert_matches(ng.evaluate(ng.outer(ng.array(b), ng.array(b) * 2)), np.outer(b, b * 2))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_flip_is_a_view(ng, axis):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    X = ng.array(x)
    view = ng.flip(X, axis)
    assert_matches(view, np.flip(x, axis))
    view[...] = 0  # a view: writes land in X
    assert float(X.get().sum()) == 0.0
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        ng.flip(X, 3)
