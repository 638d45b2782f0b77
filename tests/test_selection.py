"""compress, extract, put, put_along_axis, place, lexsort (gpuarray.algorithms.selection)
against numpy.

Both factories, numpy as the oracle: results and targets bit for bit,
through contiguous and strided targets, with repeated positions (the last
value wins, as in numpy), every ``mode`` of ``put``, values repeated when
shorter, device and host indices.  Errors are in test_bad_input.py.
"""
import numpy as np
import pytest

from conftest import to_host


def _same(got, expected):
    got = to_host(got)
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


@pytest.fixture
def host():
    return np.random.default_rng(20).standard_normal((4, 6)).astype(np.float32)


def _targets(ng, host):
    """A contiguous target and a strided one holding the same values."""
    return ng.array(host), ng.array(np.ascontiguousarray(host.T)).T


def test_compress_and_extract(ng, host):
    for condition, axis in (([0, 1, 1, 0], 0), ([1, 0, 1], 1), ([1, 0, 1], None), ([], 0)):
        _same(ng.compress(condition, host, axis=axis), np.compress(condition, host, axis=axis))
    _same(ng.compress(ng.array(np.array([True, False, True, True])), host, axis=0),
          np.compress([True, False, True, True], host, axis=0))
    _same(ng.extract(host > 0, host), np.extract(host > 0, host))
    _same(ng.extract(ng.array(host) > 0.5, ng.array(host)), np.extract(host > 0.5, host))


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_put(ng, host, mode):
    cases = [([1, 2, 3], [9.0, 8.0]), ([2, 2, 5, -1], [1.0, 2.0, 3.0, 4.0]), ([0], 7.0)]
    if mode != "raise":
        cases.append(([0, -30, 30], [1.0, 2.0, 3.0]))
    for ind, values in cases:
        for target in _targets(ng, host):
            expected = host.copy()
            np.put(expected, ind, values, mode)
            ng.put(target, ind, values, mode)
            _same(target, expected)
    target = ng.array(host)
    ng.put(target, ng.array(np.array([5, 5, 0])), ng.array(np.array([1.0, 2.0], np.float32)), mode)
    expected = host.copy()
    np.put(expected, [5, 5, 0], [1.0, 2.0], mode)
    _same(target, expected)


def test_put_along_axis(ng, host):
    rng = np.random.default_rng(21)
    for axis in (0, 1, None):
        if axis is None:
            index = np.array([3, 3, 7, -1])
        else:
            index = np.argsort(host, axis=axis)
            index = index[:2] if axis == 0 else index[:, :2]
        values = rng.standard_normal(index.shape).astype(np.float32)
        for target in _targets(ng, host):
            expected = host.copy()
            np.put_along_axis(expected, index, values, axis)
            ng.put_along_axis(target, ng.array(index), values, axis)
            _same(target, expected)
    target, expected = ng.array(host), host.copy()
    ng.put_along_axis(target, np.array([[0], [5], [1], [1]]), -1.0, 1)
    np.put_along_axis(expected, np.array([[0], [5], [1], [1]]), -1.0, 1)
    _same(target, expected)


def test_place(ng, host):
    for values in ([1.0, 2.0], [5.0], np.arange(30.0, dtype=np.float32)):
        for target in _targets(ng, host):
            expected = host.copy()
            np.place(expected, host > 0, values)
            ng.place(target, host > 0, values)
            _same(target, expected)
    target = ng.array(host)
    ng.place(target, host > 10, [])  # nothing to place: no values needed
    _same(target, host)


def test_lexsort(ng):
    rng = np.random.default_rng(22)
    keys = (rng.standard_normal(40), rng.integers(0, 3, 40), rng.integers(0, 2, 40))
    _same(ng.lexsort(keys), np.lexsort(keys))
    table = rng.integers(0, 2, (3, 4, 5))
    _same(ng.lexsort(table), np.lexsort(table))
    _same(ng.lexsort(list(table), axis=1), np.lexsort(table, axis=1))
    _same(ng.lexsort(ng.array(table)), np.lexsort(table))


def test_writers_need_a_tensor(ng, host):
    for call in (lambda: ng.put(host, [0], 1.0), lambda: ng.place(host, host > 0, [1.0]),
                 lambda: ng.put_along_axis(host, np.zeros((1, 6), np.int64), 1.0, 0)):
        with pytest.raises(TypeError, match="writes into a tensor of this factory"):
            call()
