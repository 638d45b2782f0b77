"""cumsum, cumprod, nancumsum, nancumprod, cumulative_sum, cumulative_prod
(gpuarray.core.scans) against numpy.

Both factories, numpy as the oracle: values (floats against numpy's
float64 result on the same values, within the dtype's tolerance relative
to the largest partial result; integers and bool exact, wrapping as
numpy's do), shapes, result dtypes (numpy's widening of small integers),
errors with numpy's class and message.  A seeded randomized test draws
shapes, axes, strided views and NaN/inf; a kernel-count test pins the
log-step passes.
"""
import math

import numpy as np
import pytest
from numpy.exceptions import AxisError

from conftest import BF16, assert_matches, is_float, random_array, same_error, to_host

DTYPES = [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int32),
          np.dtype(np.int64), np.dtype(np.float16), BF16, np.dtype(np.float32),
          np.dtype(np.float64)]
CASES = [((), None), ((), 0), ((1,), 0), ((7,), None), ((3, 5, 7), None), ((3, 5, 7), 0),
         ((3, 5, 7), 1), ((3, 5, 7), -1), ((2, 0, 3), 1), ((1000,), 0), ((4, 33), 1)]


def _oracle(name, host, axis, dtype=None):
    """numpy's result: in float64 for floats (then the result dtype is numpy's own)."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, as ours gives NaN
        expected = getattr(np, name)(host, axis=axis, dtype=dtype)
        if is_float(expected.dtype):
            return getattr(np, name)(host.astype(np.float64), axis=axis), expected.dtype
    return expected, expected.dtype


def _check(ng, name, host, axis, **kwargs):
    got = getattr(ng, name)(ng.array(host), axis=axis, **kwargs)
    expected, dtype = _oracle(name, host, axis, kwargs.get("dtype"))
    assert_matches(got, expected, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape, axis", CASES, ids=str)
def test_cumsum(ng, dtype, shape, axis):
    host = random_array(np.random.default_rng(len(shape)), shape, dtype)
    _check(ng, "cumsum", host, axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape, axis", [((), None), ((9,), 0), ((3, 4, 5), 1), ((2, 6), None)],
                         ids=str)
def test_cumprod(ng, dtype, shape, axis):
    rng = np.random.default_rng(7)
    # factors near one keep float products in range; integers wrap as numpy's do
    host = (random_array(rng, shape, dtype, 0.5, 1.5) if is_float(dtype)
            else random_array(rng, shape, dtype, -9, 9))
    _check(ng, "cumprod", host, axis)


def test_integer_sums_wrap_as_numpy(ng):
    host = np.array([2**62, 2**62, 2**62, -5], np.int64)
    assert np.array_equal(to_host(ng.cumsum(ng.array(host))), np.cumsum(host))
    host = np.array([200, 200, 200], np.uint8)
    assert np.array_equal(to_host(ng.cumsum(ng.array(host), dtype=np.uint8)),
                          np.cumsum(host, dtype=np.uint8))


def test_dtype_out_and_views(ng):
    host = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
    t = ng.array(host)
    _check(ng, "cumsum", host, 1, dtype=np.int32)
    _check(ng, "cumprod", host[:, :3] / 8, 0, dtype=np.float64)
    assert_matches(ng.cumsum(t.T, axis=0), np.cumsum(host.T, axis=0))
    assert_matches(ng.cumsum(t[::2, ::-1], axis=1), np.cumsum(host[::2, ::-1], axis=1))
    assert_matches(ng.cumsum(t * 2 + 1, axis=0), np.cumsum(host * 2 + 1, axis=0))
    out = ng.empty((4, 6), np.float64)
    assert ng.cumsum(t, axis=0, out=out) is out
    assert_matches(out, np.cumsum(host.astype(np.float64), axis=0))
    ng.cumsum(t, axis=1, out=t)  # in place, as numpy allows
    assert_matches(t, np.cumsum(host, axis=1))


def test_nan_and_infinities_propagate(ng):
    host = np.array([[1.0, np.nan, 2.0, 3.0], [np.inf, 1.0, -np.inf, 2.0]], np.float32)
    for name in ("cumsum", "cumprod"):
        expected, _ = _oracle(name, host, 1)
        assert_matches(getattr(ng, name)(ng.array(host), axis=1), expected.astype(np.float32))


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int16)],
                         ids=str)
def test_nan_ignoring(ng, name, dtype):
    host = random_array(np.random.default_rng(11), (4, 6), dtype, 0.5, 1.5)
    if is_float(dtype):
        host[[0, 2, 3], [1, 0, 5]] = np.nan
    for axis in (None, 0, 1):
        _check(ng, name, host, axis)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_functions(ng, name):
    host = random_array(np.random.default_rng(3), (3, 5), np.dtype(np.float32), 0.5, 1.5)
    for axis in (0, 1, -1):
        for initial in (False, True):
            got = getattr(ng, name)(ng.array(host), axis=axis, include_initial=initial)
            want = getattr(np, name)(host.astype(np.float64), axis=axis, include_initial=initial)
            assert_matches(got, want.astype(np.float32))
    ints = np.array([3, 1, 2], np.int16)
    got = getattr(ng, name)(ng.array(ints), include_initial=True)
    assert_matches(got, getattr(np, name)(ints, include_initial=True))
    assert_matches(getattr(ng, name)(ng.array(np.ones(())), include_initial=True),
                   getattr(np, name)(np.ones(()), include_initial=True))


def test_errors(ng):
    host = np.ones((2, 3), np.float32)
    t = ng.array(host)
    for call in (lambda m, x: m.cumsum(x, axis=2), lambda m, x: m.cumsum(x, axis=-3),
                 lambda m, x: m.cumprod(x, axis=1.5), lambda m, x: m.cumulative_sum(x),
                 lambda m, x: m.cumulative_prod(x, axis=5),
                 lambda m, x: m.cumsum(x[0, 0], axis=1)):
        same_error(lambda: call(ng, t), lambda: call(np, host))
    with pytest.raises(ValueError, match="provided out is the wrong size for the accumulation"):
        ng.cumsum(t, out=ng.empty((2, 3)))
    with pytest.raises(AxisError):
        ng.cumsum(t, axis=3)


def test_randomized_against_numpy(ng):
    rng = np.random.default_rng(2026)
    for _ in range(25):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(1, 9)) for _ in range(ndim))
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        host = random_array(rng, shape, dtype)
        if is_float(dtype) and host.size > 2:
            host.reshape(-1)[rng.integers(host.size, size=2)] = [np.nan, np.inf]
        axis = None if rng.random() < 0.2 else int(rng.integers(-ndim, ndim))
        t = ng.array(host)
        if ndim > 1 and rng.random() < 0.5:  # a strided view as the input
            t, host = t[..., ::-1], host[..., ::-1]
        got = ng.cumsum(t, axis=axis)
        expected, dtype_ = _oracle("cumsum", host, axis)
        assert_matches(got, expected, dtype=dtype_, err_msg=f"{shape} axis={axis} {dtype}")


def _launches(ng, fn):
    fn()
    before = ng.stats()["kernels_launched"]
    fn()
    return ng.stats()["kernels_launched"] - before


def test_single_pass_scan_kernels(gpu_ng):
    """A contiguous row of the accumulation type is one scan; other inputs add
    a copy in, and results of another type a store."""
    t = gpu_ng.ones((1000,), np.float32)
    assert _launches(gpu_ng, lambda: gpu_ng.cumsum(t)) == 1
    assert _launches(gpu_ng, lambda: gpu_ng.cumsum(t[::2])) == 2
    small = gpu_ng.ones((40, 1000), np.int8)
    assert _launches(gpu_ng, lambda: gpu_ng.cumprod(small, axis=1, dtype=np.int8)) == 3


def test_bool_results_take_the_log_step_scan(gpu_ng):
    """One copy in, then two kernels per doubling of the reach."""
    t = gpu_ng.ones((1000,), np.bool_)
    launches = _launches(gpu_ng, lambda: gpu_ng.cumsum(t, dtype=np.bool_))
    assert launches == 1 + 2 * math.ceil(math.log2(1000))


def test_long_rows_and_many_rows(ng):
    """Sizes past one CUB tile, by rows and as one row; integers wrap as numpy's."""
    rng = np.random.default_rng(11)
    host = rng.integers(-100, 100, size=(7, 30001)).astype(np.int32)
    for axis in (0, 1, None):
        assert_matches(ng.cumsum(ng.array(host), axis=axis), np.cumsum(host, axis=axis))
    assert_matches(ng.cumprod(ng.array(host), axis=1, dtype=np.int16),
                   np.cumprod(host, axis=1, dtype=np.int16))
    floats = rng.random((3, 70000)).astype(np.float32)
    assert_matches(ng.cumsum(ng.array(floats), axis=1),
                   np.cumsum(floats.astype(np.float64), axis=1), dtype=np.float32)
