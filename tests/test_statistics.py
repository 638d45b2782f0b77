"""average, cov, corrcoef, trapezoid, ediff1d (gpuarray.core.statistics) and gradient
(gpuarray.core.calculus) against numpy.

Both factories, numpy as the oracle: numpy's dtypes and shapes (``average``
with ``keepdims=False`` for numpy's; kept axes by default), values within
the rounding of the dtype (the sums' order differs).  Errors are in
test_bad_input.py.
"""
import numpy as np
import pytest

from conftest import to_host


def _close(got, expected, rtol=2e-6):
    got = to_host(got) if not isinstance(got, np.ndarray) else got
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-6)


@pytest.fixture
def data():
    return np.random.default_rng(28).standard_normal((3, 40)).astype(np.float32)


def test_average(ng, data):
    _close(ng.average(data, keepdims=False), np.average(data))
    weights = np.arange(40) + 1
    _close(ng.average(data, axis=1, weights=weights, keepdims=False),
           np.average(data, axis=1, weights=weights))
    _close(ng.average(ng.array(data), axis=1, weights=weights * 1.0, keepdims=True),
           np.average(data, axis=1, weights=weights * 1.0, keepdims=True))
    _close(ng.average(ng.array(data), axis=1), np.average(data, axis=1))
    got = ng.average(data, axis=0, weights=[1, 2, 3], returned=True, keepdims=False)
    for g, e in zip(got, np.average(data, axis=0, weights=[1, 2, 3], returned=True)):
        _close(g, e)
    _close(ng.average(np.arange(6).reshape(2, 3), axis=0, keepdims=False),
           np.average(np.arange(6).reshape(2, 3), axis=0))


def test_cov_and_corrcoef(ng, data):
    _close(ng.cov(data), np.cov(data), 1e-12)
    _close(ng.cov(data[0]), np.cov(data[0]), 1e-12)
    _close(ng.cov(data.T, rowvar=False), np.cov(data.T, rowvar=False), 1e-12)
    _close(ng.cov(data, bias=True), np.cov(data, bias=True), 1e-12)
    _close(ng.cov(data, ddof=2), np.cov(data, ddof=2), 1e-12)
    _close(ng.cov(data[0], data[1]), np.cov(data[0], data[1]), 1e-12)
    _close(ng.corrcoef(data), np.corrcoef(data), 1e-12)
    _close(ng.corrcoef(ng.array(data[0]), data[2]), np.corrcoef(data[0], data[2]), 1e-12)
    with pytest.raises(NotImplementedError, match="fweights"):
        ng.cov(data, fweights=[1, 2, 3])


def test_trapezoid_and_ediff1d(ng, data):
    _close(ng.trapezoid(data, axis=1), np.trapezoid(data, axis=1))
    spacing = np.cumsum(np.linspace(0.5, 1.5, 40))
    _close(ng.trapezoid(data, x=spacing, axis=1), np.trapezoid(data, x=spacing, axis=1))
    _close(ng.trapezoid(data, dx=0.5, axis=0), np.trapezoid(data, dx=0.5, axis=0))
    _close(ng.trapezoid(np.arange(5)), np.trapezoid(np.arange(5)))
    _close(ng.ediff1d(data[:2, :3], to_begin=-1, to_end=[9, 9]),
           np.ediff1d(data[:2, :3], to_begin=-1, to_end=[9, 9]))
    _close(ng.ediff1d(np.arange(5)), np.ediff1d(np.arange(5)))


def test_gradient(ng):
    rng = np.random.default_rng(31)
    y = np.array([1.0, 2.0, 4.0, 7.0, 11.0])
    uneven = np.array([0, 1, 1.5, 3.5, 4])
    table = rng.standard_normal((4, 6)).astype(np.float32)
    cases = [((y,), {}), ((y, 2.0), {}), ((np.array([1, 2, 4, 7, 11]),), {"edge_order": 2}),
             ((y, uneven), {}), ((y, uneven), {"edge_order": 2}), ((y, np.arange(5.0) * 3), {}),
             ((table,), {}), ((table, 0.5, 2.0), {}), ((table,), {"axis": 1, "edge_order": 2}),
             ((ng.array(table), np.cumsum(rng.random(6) + 0.1)), {"axis": 1})]
    for args, kwargs in cases:
        got = ng.gradient(*args, **kwargs)
        host_args = tuple(to_host(a) if hasattr(a, "backend") else a for a in args)
        expected = np.gradient(*host_args, **kwargs)
        if not isinstance(expected, tuple):
            got, expected = (got,), (expected,)
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _close(g, e, 1e-6)
