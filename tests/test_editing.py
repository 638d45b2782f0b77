"""append, insert, delete, fill_diagonal (gpuarray.algorithms.editing), interp
(gpuarray.algorithms.interpolation), select, piecewise, resize, trim_zeros
(gpuarray.algorithms.choosing) and convolve, correlate
(gpuarray.algorithms.convolving) against numpy.

Both factories, numpy as the oracle: values, shapes and dtypes for ints,
slices, sequences and masks as ``obj``, blocks and broadcast values, every
axis and the flattened form; fill_diagonal tall, wrapped and 3-d;
interp at, between and beyond the samples, NaN, one sample.  Errors are
in test_bad_input.py.
"""
import numpy as np
import pytest

from conftest import to_host

A = np.arange(6.0).reshape(2, 3)


def _same(got, expected):
    got = to_host(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("call", [
    ("append", (A, [[9.0, 9.0, 9.0]]), {"axis": 0}), ("append", (A, [1.0, 2.0]), {}),
    ("delete", (A, 1), {"axis": 1}), ("delete", (A, [0, 2]), {"axis": 1}),
    ("delete", (A, [True, False]), {"axis": 0}), ("delete", (A, slice(0, 5, 2)), {}),
    ("insert", (A, 1, [7.0, 8.0]), {"axis": 1}), ("insert", (A, [1, 0, 1], [7.0, 8.0, 9.0]), {"axis": 1}),
    ("insert", (A, 1, [[7.0], [8.0]]), {"axis": 1}), ("insert", (A.ravel(), [2, 2], [5.0, 6.0]), {}),
    ("insert", (A, 2, 5.5), {}), ("insert", (A, -1, [1.0, 2.0, 3.0]), {"axis": 0}),
    ("insert", (A, slice(None), 0.0), {"axis": 1}), ("insert", (A.ravel(), slice(1, None, 2), 9.0), {}),
], ids=lambda c: f"{c[0]}-{c[1][1]}-{c[2]}")
def test_append_insert_delete(ng, call):
    name, args, kwargs = call
    _same(getattr(ng, name)(*args, **kwargs), getattr(np, name)(*args, **kwargs))
    on_device = (ng.array(args[0]),) + args[1:]
    _same(getattr(ng, name)(*on_device, **kwargs), getattr(np, name)(*args, **kwargs))


@pytest.mark.parametrize("shape,wrap,value", [((3, 3), False, 5.0), ((5, 3), True, [1.0, 2.0]),
                                              ((5, 3), False, 7.0), ((3, 3, 3), False, [1.0, 2.0]),
                                              ((2, 4), False, 3.0)], ids=str)
def test_fill_diagonal(ng, shape, wrap, value):
    target, expected = ng.array(np.zeros(shape)), np.zeros(shape)
    ng.fill_diagonal(target, value, wrap)
    np.fill_diagonal(expected, value, wrap)
    _same(target, expected)


def _close(got, expected):
    """Within rounding of the terms: the GPU contracts numpy's
    ``slope * (x - xp[j]) + fp[j]`` into one fused multiply-add."""
    got = to_host(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


def test_interp(ng):
    rng = np.random.default_rng(27)
    xp = np.sort(rng.uniform(0, 10, 20))
    fp = rng.standard_normal(20)
    x = np.concatenate([rng.uniform(-2, 12, 200), xp, [np.nan]])
    _close(ng.interp(x, xp, fp), np.interp(x, xp, fp))
    _close(ng.interp(ng.array(x), ng.array(xp), fp, left=-5.0, right=7.0),
           np.interp(x, xp, fp, left=-5.0, right=7.0))
    _same(ng.interp([0.0, 1.0, 2.0], [1.0], [5.0]), np.interp([0.0, 1.0, 2.0], [1.0], [5.0]))
    _close(ng.interp(x.astype(np.float32).reshape(1, -1), xp, fp),
           np.interp(x.astype(np.float32).reshape(1, -1), xp, fp))
    with pytest.raises(NotImplementedError, match="period"):
        ng.interp(x, xp, fp, period=3.0)


def test_select_piecewise_resize_trim_zeros(ng):
    x = np.arange(6.0)
    t = ng.array(x)
    _same(ng.select([x < 2, x > 4], [x, x ** 2], 9), np.select([x < 2, x > 4], [x, x ** 2], 9))
    _same(ng.select([t < 2, t > 4], [t, t * t], 9), np.select([x < 2, x > 4], [x, x ** 2], 9))
    _same(ng.select([x < 2], [np.arange(6)]), np.select([x < 2], [np.arange(6)]))
    _same(ng.piecewise(x, [x < 2, x >= 4], [lambda v: -v, 7, 0]),
          np.piecewise(x, [x < 2, x >= 4], [lambda v: -v, 7, 0]))
    _same(ng.piecewise(t, [t < 2], [lambda v: v * 3, 100.0]),
          np.piecewise(x, [x < 2], [lambda v: v * 3, 100.0]))
    _same(ng.resize(np.arange(3), (2, 4)), np.resize(np.arange(3), (2, 4)))
    _same(ng.resize(ng.array(np.arange(5.0)), 3), np.resize(np.arange(5.0), 3))
    _same(ng.resize(np.arange(3), 0), np.resize(np.arange(3), 0))
    padded = np.array([0, 0, 1, 2, 0, 3, 0, 0])
    for trim in ("fb", "f", "b"):
        _same(ng.trim_zeros(padded, trim), np.trim_zeros(padded, trim))
    _same(ng.trim_zeros(np.zeros(3)), np.trim_zeros(np.zeros(3)))


@pytest.mark.parametrize("sizes", [(10, 3), (3, 10), (7, 7), (8, 4), (1, 5), (6, 1)], ids=str)
def test_convolve_and_correlate(ng, sizes):
    rng = np.random.default_rng(30)
    a, v = rng.standard_normal(sizes[0]), rng.standard_normal(sizes[1])
    for mode in ("full", "same", "valid"):
        for name in ("convolve", "correlate"):
            got = to_host(getattr(ng, name)(ng.array(a), v, mode))
            expected = getattr(np, name)(a, v, mode)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    _same(ng.convolve(np.arange(5), np.array([1, 2, 3])), np.convolve(np.arange(5), [1, 2, 3]))


def test_choose(ng):
    index = np.array([[0, 1, 2], [2, 1, 0]])
    choices = [np.arange(3), np.full((2, 3), 10.5), 7]
    _same(ng.evaluate(ng.choose(index, choices)), np.choose(index, choices))
    _same(ng.evaluate(ng.choose(ng.array(index), [ng.array(np.arange(3)), 2, 3])),
          np.choose(index, [np.arange(3), 2, 3]))
    for mode in ("wrap", "clip"):
        _same(ng.evaluate(ng.choose([5, -1, 2], [[1, 2, 3], [4, 5, 6]], mode=mode)),
              np.choose([5, -1, 2], [[1, 2, 3], [4, 5, 6]], mode=mode))
    _same(ng.evaluate(ng.choose(np.array([True, False]), [[1, 2], [3, 4]])),
          np.choose(np.array([True, False]), [[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        ng.choose([0, 2], [[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="rule 'safe'"):
        ng.choose(np.array([0.0, 1.0]), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="0-length sequence"):
        ng.choose([0], [])
    with pytest.raises(ValueError, match="clipmode"):
        ng.choose([0], [[1]], mode="bad")


def test_putmask(ng):
    host = np.arange(12.0).reshape(3, 4)
    t = ng.array(host)
    ng.putmask(t, t > 4, [100.0, 200.0, 300.0])
    np.putmask(host, host > 4, [100.0, 200.0, 300.0])
    _same(t, host)
    ng.putmask(t, np.zeros(12, bool), 1.0)
    ng.putmask(t, t < 3, [])
    _same(t, host)
    with pytest.raises(ValueError, match="same size"):
        ng.putmask(t, np.ones(5, bool), 1.0)
    with pytest.raises(TypeError, match="first argument"):
        ng.putmask(host, host > 1, 0)


def test_block(ng):
    a, b, c = np.eye(2), np.zeros((2, 3)), np.ones((1, 5))
    for arrays in ([[a, b], [c]], [1, 2, 3], [[1, 2], [3, 4]], [a, a], [[[a]]]):
        _same(ng.block(arrays), np.block(arrays))
    _same(ng.block([[ng.array(a), b], [c]]), np.block([[a, b], [c]]))
    with pytest.raises(ValueError, match="List depths are mismatched"):
        ng.block([[1], [[2]]])
    with pytest.raises(ValueError, match="cannot be empty"):
        ng.block([])
    with pytest.raises(TypeError, match="is a tuple"):
        ng.block(([1], [2]))
