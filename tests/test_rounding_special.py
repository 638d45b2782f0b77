"""around/round, fix, nan_to_num (gpuarray.core.rounding), signbit, isposinf,
isneginf, isreal, iscomplex, fmax, fmin, logaddexp, logaddexp2
(gpuarray.core.special_values), array_equal, array_equiv, amax, amin against
numpy.

Both factories, numpy as the oracle, float16 to float64 and integers, with
NaN (of either sign), infinities and -0.0 in the data.  Rounding is exact
(each step rounded to the dtype, as numpy's loops); logaddexp within a few
units of the dtype's last place (its log1p and exp round differently).
"""
import warnings

import numpy as np
import pytest

from conftest import to_host

FLOATS = [np.float16, np.float32, np.float64]


def _data(dtype, n=400):
    rng = np.random.default_rng(25)
    host = (rng.standard_normal(n) * 100).astype(dtype)
    host[:5] = [np.nan, np.inf, -np.inf, -0.0, -np.nan]
    return host


def _same(got, expected):
    got = to_host(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_rounding(ng, dtype):
    host = _data(dtype)
    t = ng.array(host)
    for decimals in (0, 1, 2, -1, -2):
        _same(ng.evaluate(ng.around(t, decimals)), np.around(host, decimals))
        _same(ng.evaluate(ng.round(t, decimals)), np.round(host, decimals))
    _same(ng.evaluate(ng.fix(t)), np.fix(host))
    _same(ng.evaluate(ng.nan_to_num(t)), np.nan_to_num(host))
    _same(ng.evaluate(ng.nan_to_num(t, nan=-1.0, posinf=5.0, neginf=-5.0)),
          np.nan_to_num(host, nan=-1.0, posinf=5.0, neginf=-5.0))
    ng.nan_to_num(t, copy=False)
    _same(t, np.nan_to_num(host))


def test_integer_rounding_is_half_to_even(ng):
    host = np.array([1250, 1350, -1250, -1350, 1251, 50, 150, -50, 7, 0], np.int64)
    for decimals in (0, 2, -1, -2, -3):
        _same(ng.evaluate(ng.around(ng.array(host), decimals)), np.around(host, decimals))
    _same(ng.evaluate(ng.fix(ng.array(host))), np.fix(host))
    _same(ng.evaluate(ng.nan_to_num(ng.array(host))), np.nan_to_num(host))
    with pytest.raises(TypeError):
        ng.around(ng.array(np.array([True])))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_special_values(ng, dtype):
    host = _data(dtype)
    other = np.random.default_rng(26).permutation(host)
    t, u = ng.array(host), ng.array(other)
    for name in ("signbit", "isposinf", "isneginf"):
        _same(ng.evaluate(getattr(ng, name)(t)), getattr(np, name)(host))
    for name in ("fmax", "fmin"):
        _same(ng.evaluate(getattr(ng, name)(t, u)), getattr(np, name)(host, other))
    _same(ng.evaluate(ng.signbit(ng.array(np.array([-3, 0, 4])))), np.signbit([-3, 0, 4]))
    _same(ng.isreal(t), np.isreal(host))
    _same(ng.iscomplex(t), np.iscomplex(host))
    tolerance = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}[dtype]
    for name in ("logaddexp", "logaddexp2"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy: inf - inf
            expected = getattr(np, name)(host, other)
        got = to_host(ng.evaluate(getattr(ng, name)(t, u)))
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=tolerance)


def test_equality_and_aliases(ng):
    assert ng.array_equal([1, 2], [1, 2]) and not ng.array_equal([1, 2], [1, 3])
    assert not ng.array_equal([1.0, np.nan], [1.0, np.nan])
    assert ng.array_equal(ng.array(np.array([1.0, np.nan])), [1.0, np.nan], equal_nan=True)
    assert not ng.array_equal([1], [1, 2]) and ng.array_equal(np.zeros((0, 2)), np.zeros((0, 2)))
    assert ng.array_equiv([1, 2], [[1, 2], [1, 2]]) and not ng.array_equiv([1, 2], [1, 2, 3])
    host = np.arange(12.0).reshape(3, 4)
    _same(ng.amax(ng.array(host), axis=1, keepdims=False), np.amax(host, axis=1))
    _same(ng.amin(ng.array(host), axis=0, keepdims=False), np.amin(host, axis=0))
