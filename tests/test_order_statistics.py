"""quantile, percentile, median and their nan forms (gpuarray.algorithms.order)
against numpy.

Both factories, numpy as the oracle: every method supported, axes None,
int and tuple, scalar and array quantiles, integer, float16 and float
input, rows holding NaN (a NaN row gives NaN; the nan forms skip them, an
all-NaN row gives NaN), numpy's result dtypes, errors.  Values agree
within one rounding of the input's or the result's dtype (the coarser)
relative to the largest result: the interpolation's order of operations
is numpy's, but a fused kernel computes 16-bit values in float32 and
rounds once, on the store.
"""
import warnings

import numpy as np
import pytest

from conftest import to_host

METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]
TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-7, np.dtype(np.float64): 1e-15}


def _data(dtype, with_nan):
    rng = np.random.default_rng(12)
    host = (rng.standard_normal((4, 7, 5)) * 10).astype(dtype)
    if with_nan:
        host[0, 1, :] = np.nan   # one NaN in every row along axis 1
        host[2, :, 0] = np.nan   # a row of NaN only
    return host


def _agree(got, expected, input_dtype=np.float64):
    """Equal within one rounding of the input's (or the result's) precision."""
    got = to_host(got)
    assert got.shape == expected.shape
    if not (expected.ndim == 0 and np.isnan(expected)):  # numpy's 0-d NaN keeps the input dtype
        assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), np.isnan(expected))
    finite = np.isfinite(expected)
    if finite.any():
        scale = np.abs(expected[finite]).max()
        error = np.abs(got.astype(np.float64)[finite] - expected[finite]).max()
        precision = max(TOLERANCE.get(got.dtype, 1e-15),
                        TOLERANCE.get(np.dtype(input_dtype), 1e-15))
        assert error <= precision * scale, (error, scale)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.float16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantiles_match_numpy(ng, name, dtype, method):
    floats = np.dtype(dtype).kind == "f"
    for host in (_data(dtype, False), _data(dtype, True)) if floats else (_data(dtype, False),):
        for axis in (None, 1, (0, 2), -1):
            for q in (0.0, 0.3, 0.5, 1.0, [0.1, 0.99], np.float64(0.7)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # numpy: all-NaN slice
                    expected = getattr(np, name)(host, q, axis=axis, method=method)
                _agree(getattr(ng, name)(host, q, axis=axis, method=method, keepdims=False),
                       expected, host.dtype)


def test_median_and_percentile(ng):
    host = _data(np.float32, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for axis in (None, 0, (1, 2)):
            _agree(ng.median(host, axis=axis, keepdims=False), np.median(host, axis=axis))
            _agree(ng.nanmedian(host, axis=axis, keepdims=False), np.nanmedian(host, axis=axis))
            _agree(ng.percentile(host, [5, 95], axis=axis, keepdims=False),
                   np.percentile(host, [5, 95], axis=axis))
            _agree(ng.nanpercentile(host, 40, axis=axis, keepdims=False),
                   np.nanpercentile(host, 40, axis=axis))
    _agree(ng.median(np.arange(10), keepdims=False), np.median(np.arange(10)))


def test_keepdims_and_out(ng):
    host = _data(np.float64, False)
    kept = ng.quantile(host, [0.25, 0.75], axis=(0, 2), keepdims=True)
    assert kept.shape == (2, 1, 7, 1)
    assert ng.quantile(host, [0.25, 0.75], axis=(0, 2)).shape == (2, 7)
    _agree(kept, np.quantile(host, [0.25, 0.75], axis=(0, 2), keepdims=True))
    out = ng.empty((4, 5), np.float64)
    assert ng.median(host, axis=1, keepdims=False, out=out) is out
    _agree(out, np.median(host, axis=1))


def test_errors(ng):
    host = np.arange(10.0)
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        ng.quantile(host, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        ng.percentile(host, [50, 101])
    with pytest.raises(ValueError, match="'foo' is not a valid method"):
        ng.quantile(host, 0.5, method="foo")
    with pytest.raises(NotImplementedError, match="hazen"):
        ng.quantile(host, 0.5, method="hazen")
    with pytest.raises(IndexError, match="out of bounds"):
        ng.quantile(np.zeros(0), 0.5)
