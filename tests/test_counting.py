"""bincount, histogram, histogramdd, histogram2d, digitize (gpuarray.algorithms.counting) and isin and the
``*1d`` set functions (gpuarray.algorithms.sets) against numpy.

Both factories, numpy as the oracle: counts exact, weighted sums within
float64 rounding; histogram edges equal numpy's bit for bit and every
value lands in numpy's bin (edges, the closed last bin, NaN and values
outside the range counted nowhere); membership with NaN (in nothing),
-0.0 (where 0.0 is) and empty inputs.  Errors are in test_bad_input.py.
"""
import warnings

import numpy as np
import pytest

from conftest import to_host


def _same(got, expected):
    got = to_host(got)
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


def test_bincount(ng):
    rng = np.random.default_rng(13)
    x = rng.integers(0, 40, 5000)
    weights = rng.standard_normal(5000)
    _same(ng.bincount(x), np.bincount(x))
    _same(ng.bincount(ng.array(x.astype(np.int16)), minlength=60), np.bincount(x, minlength=60))
    _same(ng.bincount(np.array([True, False, True])), np.bincount([True, False, True]))
    _same(ng.bincount(np.array([], np.int64), minlength=3), np.bincount([], minlength=3))
    got = to_host(ng.bincount(x, weights))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.bincount(x, weights), rtol=1e-12, atol=1e-12)
    again = to_host(ng.bincount(ng.array(x), ng.array(weights.astype(np.float32))))
    np.testing.assert_allclose(again, np.bincount(x, weights.astype(np.float32)), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8],
                         ids=lambda d: np.dtype(d).name)
def test_histogram(ng, dtype):
    rng = np.random.default_rng(14)
    host = (rng.standard_normal(3000) * 5).astype(dtype)
    if np.dtype(dtype).kind == "f":
        host[:3] = [np.nan, 1.0, -0.0]
    finite = host[np.isfinite(host)] if np.dtype(dtype).kind == "f" else host
    options = [dict(bins=7, range=(-3, 4)), dict(bins=np.array([-5, -1, 0, 0.5, 3])),
               dict(bins=4, range=(-2, 2), density=True),
               dict(bins=5, range=(-2, 2), weights=rng.random(3000))]
    for kwargs in options:
        counts, edges = ng.histogram(host, **kwargs)
        expected, expected_edges = np.histogram(host, **kwargs)
        _same(edges, expected_edges)
        np.testing.assert_allclose(to_host(counts), expected, rtol=1e-12)
        assert to_host(counts).dtype == expected.dtype
    counts, edges = ng.histogram(host.reshape(50, 60), bins=3, range=(-1, 1))  # flattened
    _same(counts, np.histogram(host.reshape(50, 60), bins=3, range=(-1, 1))[0])
    counts, edges = ng.histogram(finite, bins=9)  # the range from the data
    expected, expected_edges = np.histogram(finite, bins=9)
    _same(counts, expected)
    _same(edges, expected_edges)
    _same(ng.histogram_bin_edges(finite, bins=4), np.histogram_bin_edges(finite, bins=4))
    # more bins than a block counts in shared memory: global counters
    if host.dtype.itemsize >= 4:
        counts, _ = ng.histogram(finite, bins=9000, range=(-20.0, 20.0))
        _same(counts, np.histogram(finite, bins=9000, range=(-20.0, 20.0))[0])


def test_histogram_of_integers_and_bool(ng):
    rng = np.random.default_rng(18)
    for host in (rng.integers(-2**40, 2**40, 500), rng.integers(0, 7, 500).astype(np.uint16),
                 rng.random(500) < 0.3):
        counts, edges = ng.histogram(host, bins=6, range=(0, 5))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy: bool converted to uint8
            expected, expected_edges = np.histogram(host, bins=6, range=(0, 5))
        _same(counts, expected)
        _same(edges, expected_edges)


def test_histogram_of_constant_and_empty(ng):
    for host in (np.full(5, 3.0), np.zeros(0, np.float32)):
        counts, edges = ng.histogram(host, bins=3)
        expected, expected_edges = np.histogram(host, bins=3)
        _same(counts, expected)
        _same(edges, expected_edges)


def test_digitize(ng):
    host = np.random.default_rng(15).standard_normal(200)
    for bins in (np.array([-1.0, 0.0, 1.5]), np.array([2.0, 0.0, -1.0])):
        for right in (False, True):
            _same(ng.digitize(host, bins, right), np.digitize(host, bins, right))


def test_membership_and_set_functions(ng):
    rng = np.random.default_rng(16)
    a = rng.integers(0, 15, (4, 6)).astype(np.float32)
    a[0, 0], a[1, 1] = np.nan, -0.0
    b = rng.integers(5, 25, 9).astype(np.float32)
    b[:2] = [np.nan, 0.0]
    for invert in (False, True):
        _same(ng.isin(a, b, invert=invert), np.isin(a, b, invert=invert))
    _same(ng.isin(ng.array(a), ng.array(b)), np.isin(a, b))
    _same(ng.isin(a, []), np.isin(a, []))
    _same(ng.intersect1d(a, b), np.intersect1d(a, b))
    for got, expected in zip(ng.intersect1d(a, b, return_indices=True),
                             np.intersect1d(a, b, return_indices=True)):
        _same(got, expected)
    _same(ng.union1d(a, b), np.union1d(a, b))
    _same(ng.setdiff1d(a, b), np.setdiff1d(a, b))
    _same(ng.setdiff1d(np.array([5, 1, 3]), [3], assume_unique=True),
          np.setdiff1d([5, 1, 3], [3], assume_unique=True))
    _same(ng.setxor1d(a, b), np.setxor1d(a, b))
    _same(ng.intersect1d(np.arange(4), np.arange(2, 9)), np.intersect1d(np.arange(4), np.arange(2, 9)))


def test_histogramdd_and_histogram2d(ng):
    rng = np.random.default_rng(29)
    points = rng.standard_normal((500, 3))
    with_nan = points.copy()
    with_nan[0, 1] = np.nan
    cases = [(points, dict(bins=4)),
             (points, dict(bins=(3, 4, 5), range=[(-2, 2), (-1, 1), (-3, 3)])),
             (with_nan, dict(bins=3, range=[(-2, 2)] * 3)),
             (points, dict(bins=[np.array([-2, 0, 2.0]), 3, 4])),
             (points, dict(bins=3, density=True)),
             (points.astype(np.float32), dict(bins=3, weights=rng.random(500)))]
    for data, kwargs in cases:
        counts, edges = ng.histogramdd(data, **kwargs)
        expected, expected_edges = np.histogramdd(data, **kwargs)
        assert to_host(counts).dtype == expected.dtype
        np.testing.assert_allclose(to_host(counts), expected, rtol=1e-12)
        for got, want in zip(edges, expected_edges):
            _same(got, want)
    x, y = rng.standard_normal(300), rng.standard_normal(300)
    for got, want in zip(ng.histogram2d(ng.array(x), y, bins=(5, 6)),
                         np.histogram2d(x, y, bins=(5, 6))):
        _same(got, want)
