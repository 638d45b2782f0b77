"""Sorting, searching, set functions, gathers and array indexing (gpuarray.algorithms)
against numpy.

Both factories, numpy as the oracle, every dtype: sort and argsort
(stable: numpy's ``kind="stable"``; NaN last, -0.0 equal to 0.0, ties
kept in order), the array API's descending sort, searchsorted, the nonzero
family, unique and the array API's unique_*, take and take_along_axis,
and ``t[key]`` / ``t[key] = value`` with one integer or boolean array
among basic entries.  Seeded randomized differential tests draw shapes,
axes, repeated and negative indices, masks, NaN and signed zeros.  Errors
are checked in test_bad_input.py; repeated calls must not allocate.
"""
import numpy as np
import pytest
from numpy.exceptions import AxisError

from conftest import ALL_DTYPES, BF16, assert_no_new_allocations, dtype_id, is_float, to_host

SORT_CASES = [((7,), -1), ((7,), None), ((3, 5, 7), -1), ((3, 5, 7), 0), ((3, 5, 7), 1),
              ((3, 5, 7), None), ((1,), 0), ((0,), 0), ((2, 0, 3), 1), ((4, 300), 1),
              ((2000,), 0), ((65, 2, 3), 0)]


def _data(rng, shape, dtype):
    """Few distinct values (ties), and for floats NaN, inf and both zeros."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        picks = np.array([info.min, info.max, 0, 1, 2, 3, info.max // 2], dtype=dtype)
        return rng.choice(picks, size=shape)
    picks = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0, 3.0, 0.25], np.float32)
    return rng.choice(picks, size=shape).astype(dtype)


def _exact(host):
    """Host data numpy sorts natively (bfloat16 widened exactly to float32)."""
    return host.astype(np.float32) if host.dtype == BF16 else host


def _same(got, expected):
    """Bitwise-equal values up to NaN payloads and the sign of zero."""
    got = to_host(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(_exact(got), _exact(np.asarray(expected)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape,axis", SORT_CASES, ids=str)
def test_sort_and_argsort(ng, dtype, shape, axis):
    rng = np.random.default_rng(len(shape) * 100 + (axis or 7))
    host = _data(rng, shape, dtype)
    t = ng.array(host)
    _same(ng.sort(t, axis=axis), np.sort(_exact(host), axis=axis))
    positions = ng.argsort(t, axis=axis)
    assert positions.dtype == np.int64
    _same(positions, np.argsort(_exact(host), axis=axis, kind="stable"))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.int16),
                                   np.dtype(np.uint64), np.dtype(np.bool_)], ids=dtype_id)
def test_descending_is_stable_with_nan_first(ng, dtype):
    host = _data(np.random.default_rng(3), (4, 50), dtype)
    values = _exact(host).astype(np.float64)

    def order(row):
        return sorted(range(len(row)), key=lambda i: (not np.isnan(row[i]), -row[i]))
    expected = np.array([order(row) for row in values])
    _same(ng.argsort(host, descending=True), expected)
    _same(ng.sort(host, axis=1, descending=True), np.take_along_axis(_exact(host), expected, 1))


def test_sort_accepts_every_numpy_kind_and_strided_views(ng):
    host = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    view = ng.array(host)[::2, ::-3]
    for kind in ("quicksort", "mergesort", "heapsort", "stable", "q", "S"):
        _same(ng.sort(view, kind=kind), np.sort(host[::2, ::-3]))
    _same(ng.argsort(view * 2 - 1, axis=0), np.argsort(host[::2, ::-3] * 2 - 1, axis=0))
    _same(ng.sort([3, 1, 2]), np.array([1, 2, 3]))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float16), BF16,
                                   np.dtype(np.int8), np.dtype(np.uint32)], ids=dtype_id)
def test_searchsorted(ng, dtype, side):
    rng = np.random.default_rng(5)
    haystack = np.sort(_exact(_data(rng, (40,), dtype))).astype(dtype)
    needles = _data(rng, (3, 7), dtype)
    expected = np.searchsorted(_exact(haystack), _exact(needles), side)
    _same(ng.searchsorted(ng.array(haystack), ng.array(needles), side), expected)
    shuffled = rng.permutation(haystack)
    sorter = np.argsort(_exact(shuffled), kind="stable")
    _same(ng.searchsorted(shuffled, needles, side, sorter=sorter), expected)
    _same(ng.searchsorted(haystack, 1, side), np.searchsorted(_exact(haystack), 1, side))
    _same(ng.searchsorted(haystack[:0], needles, side), np.zeros(needles.shape, np.int64))


def test_searchsorted_promotes_as_numpy(ng):
    haystack = np.array([0.5, 1.0, 1.5, 2.0])
    _same(ng.searchsorted(haystack, np.array([1, 2], np.int64)),
          np.searchsorted(haystack, np.array([1, 2])))
    _same(ng.searchsorted(np.arange(5), 2.5), np.searchsorted(np.arange(5), 2.5))


@pytest.mark.parametrize("shape", [(9,), (3, 4, 5), (0, 3), (2, 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.float32), BF16,
                                   np.dtype(np.int64)], ids=dtype_id)
def test_nonzero_family(ng, dtype, shape):
    host = _data(np.random.default_rng(6), shape, dtype)
    reference = _exact(host)
    got = ng.nonzero(host)
    assert len(got) == len(shape)
    for g, e in zip(got, np.nonzero(reference)):
        _same(g, e)
    _same(ng.flatnonzero(host), np.flatnonzero(reference))
    _same(ng.argwhere(host), np.argwhere(reference))
    _same(ng.argwhere(np.zeros(shape, dtype)), np.argwhere(np.zeros(shape)))


def test_argwhere_of_0d(ng):
    _same(ng.argwhere(np.array(5)), np.argwhere(np.array(5)))
    _same(ng.argwhere(np.array(0)), np.argwhere(np.array(0)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_unique(ng, dtype):
    host = _data(np.random.default_rng(7), (5, 13), dtype)
    reference = _exact(host)
    for equal_nan in (True, False):
        got = ng.unique(host, True, True, True, equal_nan=equal_nan)
        expected = np.unique(reference, True, True, True, equal_nan=equal_nan)
        for g, e in zip(got, expected):
            _same(g, e)
    _same(ng.unique(host), np.unique(reference))
    # the array API's forms keep NaNs distinct; ours are sorted (numpy's
    # need not be), and which NaN is which is up to the sort, so the inverse
    # and first positions are checked by what they mean
    values, counts = np.unique(reference, return_counts=True, equal_nan=False)
    for name in ("unique_all", "unique_counts", "unique_inverse"):
        got = getattr(ng, name)(host)
        assert got._fields == getattr(np, name)(reference)._fields
        _same(got.values, values)
        if "counts" in got._fields:
            _same(got.counts, counts)
        values = _exact(to_host(got.values))
        if "inverse_indices" in got._fields:
            _same(values[to_host(got.inverse_indices)], reference)
        if "indices" in got._fields:
            _same(reference.reshape(-1)[to_host(got.indices)], values)
    _same(ng.unique_values(host), values)


def test_unique_of_empty_and_errors(ng):
    values, index, inverse, counts = ng.unique(np.zeros((0, 2), np.float32), True, True, True)
    assert values.shape == index.shape == counts.shape == (0,) and inverse.shape == (0, 2)
    with pytest.raises(AxisError):
        ng.unique(np.zeros((2, 2)), axis=2)


@pytest.mark.parametrize("shape,axis", [((40, 3), 0), ((4, 30, 2), 1), ((5, 20), -1),
                                        ((3, 0), 0), ((0, 2), 0)], ids=str)
def test_unique_along_an_axis(ng, shape, axis):
    """Sub-arrays sorted lexicographically, first positions, 1-D inverse, counts."""
    host = np.random.default_rng(24).integers(0, 2, shape).astype(np.float32)
    got = ng.unique(host, True, True, True, axis=axis)
    for g, e in zip(got, np.unique(host, True, True, True, axis=axis)):
        _same(g, e)
    rows = np.array([[np.nan, 1], [np.nan, 1], [-0.0, 2], [0.0, 2]])
    for g, e in zip(ng.unique(rows, axis=0, return_counts=True),
                    np.unique(rows, axis=0, return_counts=True)):  # NaN rows equal no row
        _same(g, e)


@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float16), BF16,
                                   np.dtype(np.int8), np.dtype(np.bool_)], ids=dtype_id)
def test_take(ng, dtype):
    rng = np.random.default_rng(8)
    host = _data(rng, (3, 5, 4), dtype)
    reference = _exact(host)
    index = rng.integers(-5, 5, size=(2, 6))
    for axis in (0, 1, 2, None, -1):
        size = host.size if axis is None else host.shape[axis]
        picks = index % size - (index < 0) * 0  # negatives kept: -size <= i < size
        picks = np.where(picks >= size, picks - size, picks)
        for indices in (picks, ng.array(picks), ng.array(picks.astype(np.int32))):
            _same(ng.take(host, indices, axis=axis), np.take(reference, picks, axis=axis))
    for mode in ("wrap", "clip"):
        wild = rng.integers(-40, 40, size=7)
        _same(ng.take(host, wild, axis=1, mode=mode), np.take(reference, wild, 1, mode=mode))
    _same(ng.take(host, 2), np.take(reference, 2))
    out = ng.empty((3, 2, 4), host.dtype)
    assert ng.take(host, [1, -1], axis=1, out=out) is out
    _same(out, np.take(reference, [1, -1], axis=1))


def test_device_index_out_of_range_raises_numpy_error(ng):
    t = ng.array(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        ng.take(t, ng.array(np.array([0, 7, 1])), axis=1)
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        ng.take_along_axis(t, ng.array(np.array([[0], [-5], [1]])), axis=1)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        t[ng.array(np.array([3]))] = 1.0


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.uint8)],
                         ids=dtype_id)
def test_take_along_axis(ng, dtype):
    rng = np.random.default_rng(9)
    host = _data(rng, (4, 6, 5), dtype)
    reference = _exact(host)
    for axis in (0, 1, 2, -1):
        order = np.argsort(reference, axis=axis, kind="stable")
        _same(ng.take_along_axis(host, order, axis=axis),
              np.take_along_axis(reference, order, axis=axis))
        shape = [1, 1, 1]
        shape[axis] = 3
        picks = rng.integers(-host.shape[axis], host.shape[axis], size=shape)
        _same(ng.take_along_axis(host, ng.array(picks), axis=axis),
              np.take_along_axis(reference, picks, axis=axis))
    flat = rng.integers(0, host.size, size=9)
    _same(ng.take_along_axis(host, flat, axis=None),
          np.take_along_axis(reference, flat, axis=None))


def _random_key(rng, shape):
    """One integer or boolean array among basic entries, numpy-style."""
    at = int(rng.integers(0, len(shape)))
    items = []
    for d, size in enumerate(shape):
        if d == at:
            if rng.random() < 0.4:
                covered = int(rng.integers(1, len(shape) - d + 1))
                items.append(rng.random(shape[d:d + covered]) < 0.5)
                return tuple(items + [slice(None)] * (len(shape) - d - covered)), True
            items.append(rng.integers(-size, size, size=tuple(rng.integers(1, 4, size=rng.integers(0, 3)))))
        else:
            items.append([slice(None), slice(1, None, 2), slice(None, None, -1),
                          int(rng.integers(0, size))][int(rng.integers(0, 4))])
    if rng.random() < 0.3:
        items.insert(int(rng.integers(0, len(items) + 1)), None)
    return tuple(items), False


@pytest.mark.parametrize("seed", range(6))
def test_array_indexing_get_and_set_random(ng, seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 4)))
        host = rng.standard_normal(shape).astype(np.float32)
        key, is_mask = _random_key(rng, shape)
        t = ng.array(host)
        expected = host[key]
        _same(t[key], expected)
        # set: a scalar, then values of the result's shape (repeats: the last wins)
        for value in (np.float32(7.5), rng.standard_normal(expected.shape).astype(np.float32)):
            target, reference = ng.array(host), host.copy()
            target[key] = value
            reference[key] = value
            _same(target, reference)
        if is_mask:
            device_key = tuple(ng.array(k) if isinstance(k, np.ndarray) else k for k in key)
            _same(t[device_key], expected)


def _random_multi_key(rng, shape):
    """Two or more index arrays (a mask among them at times) with basic entries."""
    items = []
    for size in shape:
        roll = rng.random()
        if roll < 0.5:
            items.append(rng.integers(-size, size, size=(2, 3)[:int(rng.integers(1, 3))]))
        elif roll < 0.6:
            items.append(rng.random(size) < 0.5)
        elif roll < 0.8:
            items.append(int(rng.integers(0, size)))
        else:
            items.append([slice(None), slice(None, None, -2)][int(rng.integers(0, 2))])
    arrays = [k for k, item in enumerate(items) if getattr(item, "ndim", 0)]
    for k in range(len(items)):
        if len(arrays) >= 2:
            break
        if k not in arrays:
            items[k] = np.array([0, shape[k] - 1])
            arrays.append(k)
    if rng.random() < 0.3:
        items.insert(int(rng.integers(0, len(items) + 1)), None)
    return tuple(items)


@pytest.mark.parametrize("seed", range(6))
def test_several_index_arrays_random(ng, seed):
    """numpy's rules for keys with several arrays: broadcast indices, integers as
    0-d indices, masks as their nonzero(), the result's axes in numpy's place."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        shape = tuple(int(s) for s in rng.integers(2, 5, size=rng.integers(2, 4)))
        host = rng.standard_normal(shape).astype(np.float32)
        key = _random_multi_key(rng, shape)
        try:
            expected = host[key]
        except IndexError:  # the mask and an index array do not broadcast: numpy refuses
            with pytest.raises(IndexError):
                ng.array(host)[key]
            continue
        _same(ng.array(host)[key], expected)
        device_key = tuple(ng.array(k) if isinstance(k, np.ndarray) else k for k in key)
        _same(ng.array(host)[device_key], expected)
        for value in (np.float32(-3.0), rng.standard_normal(expected.shape).astype(np.float32)):
            target, reference = ng.array(host), host.copy()
            target[key] = value
            reference[key] = value
            _same(target, reference)


def test_mask_from_an_expression_and_repeated_set(ng):
    host = np.arange(-6.0, 6.0, dtype=np.float32).reshape(3, 4)
    t = ng.array(host)
    _same(t[t > 0], host[host > 0])
    t[t < 0] = 0.0
    _same(t, np.maximum(host, 0))
    t = ng.array(host)
    t[[0, 2, 0, -3]] = np.arange(16, dtype=np.float32).reshape(4, 4)
    reference = host.copy()
    reference[[0, 2, 0, -3]] = np.arange(16, dtype=np.float32).reshape(4, 4)
    _same(t, reference)


BOOLEAN_SCALAR_KEYS = [True, False, np.True_, np.False_, (slice(1, None), np.False_),
                       ([0, 2], np.True_), (np.True_, [1, 2]), (slice(None), True, [1, 2]),
                       (0, np.True_), ([0], False), (Ellipsis, True), (Ellipsis, True, 1),
                       (None, np.True_, 0), (1, slice(None), False), (True, True)]


@pytest.mark.parametrize("key", BOOLEAN_SCALAR_KEYS, ids=repr)
def test_boolean_scalar_keys_add_an_axis(ng, key):
    """numpy reads ``True``/``False`` (Python's, numpy's, 0-d arrays) as 0-d
    masks: a new axis of length 1 or 0, never the integers 1 and 0."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ng.array(host)
    got = t[key]
    _same(got, host[key])
    if got.size:
        got[...] = -5.0  # an advanced index copies: the source is unchanged
        _same(t, host)
    for value in (np.float32(-1.0), np.arange(4, dtype=np.float32)):
        target, reference = ng.array(host), host.copy()
        try:
            reference[key] = value
        except ValueError:  # the value does not broadcast to the new axes
            with pytest.raises(ValueError, match="could not broadcast"):
                target[key] = value
            continue
        target[key] = value
        _same(target, reference)
    as_array = tuple(np.asarray(k) if isinstance(k, (bool, np.bool_)) else k
                     for k in (key if type(key) is tuple else (key,)))
    _same(t[tuple(ng.array(k) if isinstance(k, np.ndarray) and k.ndim == 0 else k
                  for k in as_array)], host[as_array])


def test_partition_is_a_valid_partition(ng):
    host = np.random.default_rng(17).standard_normal((5, 9))
    for kth in (0, 4, -1, [2, 6]):
        got = to_host(ng.partition(host, kth, axis=1))
        for k in np.atleast_1d(kth):
            pivot = got[:, k:k + 1] if k >= 0 else got[:, k:][:, :1]
            assert (got[:, :k] <= pivot).all() and (got[:, k:] >= pivot).all()
        np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(host, axis=1))
    order = to_host(ng.argpartition(host, 2, axis=0))
    np.testing.assert_array_equal(np.take_along_axis(host, order, 0), np.sort(host, axis=0))


def test_sort_axis_errors(ng):
    with pytest.raises(AxisError):
        ng.argsort(np.zeros((2, 2)), axis=-3)


def test_repeated_calls_allocate_nothing_new(ng):
    host = _data(np.random.default_rng(10), (64, 33), np.dtype(np.float32))
    t = ng.array(host)

    def step():
        ng.sort(t, axis=0)
        ng.argsort(t, axis=None)
        ng.unique(t, return_inverse=True, return_counts=True)
        ng.take(t, ng.array(np.array([3, 1])), axis=1)
        t[t > 1] = 1.0
    step()
    before = ng.stats()
    step()
    assert_no_new_allocations(ng, before)


def test_results_are_new_contiguous_tensors(ng):
    t = ng.array(np.arange(24.0).reshape(2, 3, 4))
    for result in (ng.sort(t, axis=0), ng.argsort(t, axis=1), t[[1, 0]], t[:, [2, 0]]):
        assert result.is_contiguous
        assert not is_float(result.dtype) or result.buffer is not t.buffer


def test_tensor_methods_and_where_alone(ng):
    host = np.array([[3.0, -1.0, 2.0], [0.0, 5.0, -4.0]], np.float32)
    t = ng.array(host)
    _same(t.argsort(axis=0), np.argsort(host, axis=0, kind="stable"))
    _same((t * 2).argsort(), np.argsort(host * 2, kind="stable"))
    for got, expected in zip(t.nonzero(), host.nonzero()):
        _same(got, expected)
    for got, expected in zip(ng.where(t > 0), np.where(host > 0)):
        _same(got, expected)
    _same(t.take([2, 0], axis=1), host.take([2, 0], axis=1))
    _same(t[0].searchsorted(2.5), np.searchsorted(host[0], 2.5))
    view = t[:, ::-1]
    view.sort(axis=1)  # in place, through a strided view
    expected = host.copy()
    expected[:, ::-1] = np.sort(host[:, ::-1], axis=1)
    _same(t, expected)
    with pytest.raises(TypeError):
        t.sort(axis=None)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, np.dtype(np.float32),
                                   np.dtype(np.float64)], ids=dtype_id)
def test_nans_of_either_sign_sort_last(ng, dtype):
    """NaNs with the sign bit set (x86's 0/0 makes them) sort last too, as in numpy."""
    rng = np.random.default_rng(19)
    host = rng.standard_normal(100_000).astype(np.float32)
    picks = rng.random(host.size)
    host[picks < 0.3] = -np.nan
    host[picks > 0.9] = np.nan
    host = host.astype(dtype)
    for data in (host, np.full(5000, -np.nan, np.float32).astype(dtype), host[:1]):
        got = to_host(ng.sort(data))
        np.testing.assert_array_equal(_exact(got), np.sort(_exact(data)))
    assert np.signbit(_exact(host)[picks < 0.3]).all()  # the test data hold negative NaNs
