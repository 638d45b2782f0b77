"""numpy's elementwise extras (gpuarray.core.numpy_math), NaN-ignoring reductions
(gpuarray.core.nan_reductions) and pad (gpuarray.core.padding) against numpy.

Every case runs on both factories with numpy as the oracle: same values
(NaN, infinities and the sign of zeros included), dtype and shape; bad
input raises numpy's exception class with numpy's message.  fp16/bf16
results are compared with the float64 result rounded to the dtype (math
runs in fp32 here).  A seeded randomized differential test draws shapes,
widths, modes and constants for pad.
"""
import re
import warnings

import ml_dtypes
import numpy as np
import pytest
from numpy.exceptions import AxisError

from conftest import BF16, FLOAT_DTYPES, assert_matches, dtype_id, is_float, random_array

INT_CASES = [np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int64), np.dtype(np.bool_)]
PAD_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int8),
              np.dtype(np.uint16), np.dtype(np.int64), np.dtype(np.bool_)]


def _finfo(dtype):
    return ml_dtypes.finfo(dtype) if np.dtype(dtype) == BF16 else np.finfo(dtype)


def _data(dtype, shape=(6, 11), seed=0, lo=-4.0, hi=4.0, specials=True):
    """Random values of ``dtype``; for floats (``specials``) the first ones are
    the special values: signed zeros, infinities, NaN, halves, the smallest
    subnormal and normal, the largest value."""
    dtype = np.dtype(dtype)
    x = random_array(np.random.default_rng(seed), shape, dtype, lo=lo, hi=hi)
    if specials and is_float(dtype):
        info = _finfo(dtype)
        values = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -2.5, 3.0, float(info.smallest_subnormal),
                  -float(info.tiny), float(info.max), -float(info.max) / 3][:x.size]
        x.reshape(-1)[:len(values)] = np.array(values).astype(dtype)
    return x


def _compute(x):
    """``x`` in the dtype its math runs in here (fp32 for fp16/bf16)."""
    return x.astype(np.float32) if x.dtype in (np.float16, BF16) else x


def _exact(got, want, dtype=None):
    """Same values, dtype and shape, bit for bit on floats (NaN equal, zeros signed)."""
    assert_matches(got, want, dtype=dtype, rtol=0, atol=0)
    got, want = np.asarray(got.get(), np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


def _quiet(fn, *args, **kwargs):
    """numpy's result with its RuntimeWarnings (divide by zero, all-NaN slices) silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# -- elementwise ------------------------------------------------------------
@pytest.mark.parametrize("name", ["rint", "hypot", "cbrt", "copysign", "remainder"])
def test_functions_the_op_table_had(ng, name):
    x, y = _data(np.float32, seed=1), _data(np.float32, seed=2)
    args = (x, y)[:getattr(np, name).nin]
    got = getattr(ng, name)(*[ng.array(a) for a in args])
    assert_matches(got, _quiet(getattr(np, name), *args), scale=1, transcendental=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_CASES, ids=dtype_id)
def test_divmod(ng, dtype):
    x, y = _data(dtype, seed=1), _data(dtype, seed=2)
    quotient, remainder = ng.divmod(ng.array(x), ng.array(y))
    want_q, want_r = _quiet(np.divmod, x, y)
    assert_matches(quotient, want_q, scale=1)
    assert_matches(remainder, want_r, scale=1)
    q, r = ng.empty(x.shape, want_q.dtype), ng.empty(x.shape, want_r.dtype)
    assert ng.divmod(ng.array(x), ng.array(y), out=(q, r)) == (q, r)
    assert_matches(r, want_r, scale=1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_CASES, ids=dtype_id)
def test_modf(ng, dtype):
    x = _data(dtype)
    fraction, whole = ng.modf(ng.array(x))
    want_fraction, want_whole = np.modf(x)
    _exact(fraction, want_fraction)
    _exact(whole, want_whole)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_CASES + [np.dtype(np.uint64)], ids=dtype_id)
def test_frexp(ng, dtype):
    x = _data(dtype, lo=-1e4, hi=1e4)
    if is_float(dtype):  # every binade, and both sides of each power of two
        info = _finfo(dtype)
        powers = np.exp2(np.arange(int(info.minexp) - int(info.nmant), int(info.maxexp)))
        x = np.concatenate([x.reshape(-1), powers, -powers * 0.75, powers * 1.5]).astype(dtype)
        x = np.concatenate([x, np.nextafter(powers.astype(np.float64), 0).astype(dtype)])
    mantissa, exponent = ng.frexp(ng.array(x))
    want_mantissa, want_exponent = np.frexp(x)
    _exact(mantissa, want_mantissa)
    _exact(exponent, want_exponent, dtype=np.int32)
    m, e = ng.empty(x.shape, want_mantissa.dtype), ng.empty(x.shape, np.int64)
    ng.frexp(ng.array(x), out=(m, e))
    _exact(e, want_exponent.astype(np.int64))


@pytest.mark.parametrize("exponent_dtype", [np.int8, np.int32, np.int64], ids=dtype_id)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int16)], ids=dtype_id)
def test_ldexp(ng, dtype, exponent_dtype):
    x = _data(dtype, shape=(8, 9))
    info = _finfo(np.float64 if not is_float(dtype) else dtype)
    span = int(info.maxexp) - int(info.minexp) + int(info.nmant)
    # exponents from far below the subnormals to far above the largest value
    n = np.random.default_rng(3).integers(-span - 5, span + 5, x.shape)
    n.reshape(-1)[:6] = [0, 1, -1, 5000, -5000, 2**31 - 1]
    limits = np.iinfo(exponent_dtype)
    n = np.clip(n, limits.min, limits.max).astype(exponent_dtype)
    want = _quiet(np.ldexp, x.astype(np.float32) if dtype == BF16 else x, n)
    if dtype == BF16 and np.dtype(exponent_dtype) != np.int64:
        want = want.astype(BF16)  # numpy's bfloat16 loop takes int32 exponents
    _exact(ng.ldexp(ng.array(x), ng.array(n)), want)
    by_3 = _quiet(lambda: np.ldexp(_compute(x), 3).astype(np.ldexp.resolve_dtypes((x.dtype, int, None))[-1]))
    _exact(ng.ldexp(ng.array(x), 3), by_3)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_CASES + [np.dtype(np.int32)], ids=dtype_id)
def test_fmod(ng, dtype):
    x, y = _data(dtype, seed=1), _data(dtype, seed=2, lo=-5, hi=5)
    if not is_float(dtype):
        x.reshape(-1)[:2] = np.iinfo(dtype).min if dtype.kind == "i" else 0
        y.reshape(-1)[:3] = [-1 if dtype.kind == "i" else 1, 0, 3]
    _exact(ng.fmod(ng.array(x), ng.array(y)), _quiet(np.fmod, x, y))
    _exact(ng.fmod(ng.array(x), 3), _quiet(np.fmod, x, 3))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_CASES, ids=dtype_id)
def test_heaviside(ng, dtype):
    x, h = _data(dtype, seed=1), _data(dtype, seed=2)
    x.reshape(-1)[-4:] = 0
    _exact(ng.heaviside(ng.array(x), ng.array(h)), np.heaviside(x, h))
    # bfloat16 with a Python float stays bfloat16 (NEP 50; ml_dtypes gives float32)
    _exact(ng.heaviside(ng.array(x), 0.5), np.heaviside(x, 0.5).astype(x.dtype if is_float(dtype) else None))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int16), np.dtype(np.bool_)], ids=dtype_id)
def test_sinc(ng, dtype):
    x = _data(dtype)
    x.reshape(-1)[-5:] = [1, -2, 3, 0.25, -0.5]
    result_dtype = dtype if is_float(dtype) else np.dtype(np.float64)
    want = _quiet(np.sinc, _compute(x)).astype(result_dtype)
    assert_matches(ng.sinc(ng.array(x)), want, scale=1, transcendental=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int32)], ids=dtype_id)
@pytest.mark.parametrize("coefficients", [[2.0, -1.0, 0.5, 3.0], np.array([1.5, -2, 0.25], np.float32),
                                          [1, 2, 3], [7], []], ids=["f64", "f32", "int", "one", "none"])
def test_polyval(ng, dtype, coefficients):
    x = _data(dtype, lo=-2, hi=2)
    p = np.asarray(coefficients)
    want_dtype = np.polyval(p, np.zeros(1, dtype)).dtype  # numpy's promotion of p and x
    want = _quiet(lambda: np.polyval(p, x.astype(np.float64)).astype(want_dtype))
    assert_matches(ng.polyval(coefficients, ng.array(x)), want)
    if len(p):  # coefficients on the device: 0-d views in the tree
        assert_matches(ng.polyval(ng.array(p), ng.array(x)), want)


SCALAR_CALLS = [
    ("divmod", (7, -3)), ("divmod", (np.float32(7.5), 2)), ("modf", (-2.5,)), ("modf", (3,)),
    ("frexp", (np.float16(48),)), ("frexp", (0.0,)), ("ldexp", (3, 2)), ("ldexp", (np.float32(1.5), -130)),
    ("fmod", (7, -3)), ("fmod", (np.int8(-7), 3)), ("fmod", (-7.5, 2)), ("heaviside", (0.0, 0.25)),
    ("heaviside", (np.float16(-1), 0.5)), ("sinc", (0,)), ("sinc", (0.5,)), ("polyval", ([1, 2], 3)),
    ("polyval", ([1.5, 2], np.float32(3))),
]


@pytest.mark.parametrize("name, args", SCALAR_CALLS, ids=[f"{c[0]}{c[1]}" for c in SCALAR_CALLS])
def test_scalar_operands(ng, name, args):
    got, want = getattr(ng, name)(*args), getattr(np, name)(*args)
    for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want))):
        _exact(g, np.asarray(w))


def test_polyval_is_one_fused_tree(ng):
    x = np.linspace(-1, 1, 50).astype(np.float32)
    X = ng.array(x)
    tree = ng.polyval(np.array([1, -2, 3, -4, 5], np.float32), X)
    before = ng.stats()["kernels_launched"]
    out = ng.evaluate(tree)
    assert ng.stats()["kernels_launched"] - before == 1
    assert_matches(out, np.polyval(np.array([1, -2, 3, -4, 5], np.float32), x))
    assert_matches(ng.polyval([1.0, 2.0], 3.0), np.polyval([1.0, 2.0], 3.0))


# -- NaN-ignoring reductions -------------------------------------------------
NAN_FUNCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                 "count_nonzero"]
AXES = [None, 0, -1, (0, 2), ()]


def _nan_data(dtype):
    """(3, 4, 5) values with scattered NaN and infinities, one all-NaN row along
    axis 1 and one along axis 2 (floats), zeros (all)."""
    x = _data(dtype, shape=(3, 4, 5), seed=4, lo=-3, hi=3, specials=False)
    if is_float(dtype):
        x[1, :, 2] = np.nan
        x[2, 3, :] = np.nan
        x[0, 1, 1], x[0, 2, 3] = np.inf, -np.inf
    x[0, 0, :2] = 0
    return x


def _nan_oracle(name, x, axis, keepdims, **kwargs):
    """numpy's result: floats computed in float64 and rounded to ``x``'s dtype
    (numpy treats bfloat16 as having no NaN), integers as they are."""
    if not is_float(x.dtype):
        return _quiet(getattr(np, name), x, axis=axis, keepdims=keepdims, **kwargs)
    want = _quiet(getattr(np, name), x.astype(np.float64), axis=axis, keepdims=keepdims, **kwargs)
    return np.asarray(want).astype(np.int64 if name in ("count_nonzero", "nanargmax", "nanargmin")
                                   else x.dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int32), np.dtype(np.uint8),
                                                  np.dtype(np.bool_)], ids=dtype_id)
@pytest.mark.parametrize("name", NAN_FUNCTIONS)
def test_nan_reductions(ng, dtype, name):
    x = _nan_data(dtype)
    X = ng.array(x)
    for axis in AXES:
        for keepdims in (True, False):
            want = _nan_oracle(name, x, axis, keepdims)
            got = getattr(ng, name)(X, axis=axis, keepdims=keepdims)
            assert_matches(got, want, err_msg=f"{name} axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int16)], ids=dtype_id)
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("ddof", [1, 4.5, 6])
def test_nan_variance_ddof(ng, dtype, name, ddof):
    x = _nan_data(dtype)
    for axis in (None, 1, (0, 2)):
        want = _nan_oracle(name, x, axis, False, ddof=ddof)
        got = getattr(ng, name)(ng.array(x), axis=axis, keepdims=False, ddof=ddof)
        assert_matches(got, want, err_msg=f"{name} axis={axis}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int8), np.dtype(np.bool_)], ids=dtype_id)
@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nan_arg_reductions(ng, dtype, name):
    x = _data(dtype, shape=(3, 4, 5), seed=5, specials=False)
    if is_float(dtype):
        x[1, :3, 2] = np.nan  # no slice all NaN
        x[2, 3, 1:] = np.nan
    for axis in (None, 0, 1, -1):
        for keepdims in (True, False):
            got = getattr(ng, name)(ng.array(x), axis=axis, keepdims=keepdims)
            assert_matches(got, _nan_oracle(name, x, axis, keepdims), err_msg=f"axis={axis}")


def test_nan_reduction_defaults_and_out(ng):
    x = _nan_data(np.float32)
    X = ng.array(x)
    assert ng.nansum(X).shape == ()  # keepdims=False, as numpy's and ng.sum
    assert ng.count_nonzero(X, axis=1).shape == (3, 5)
    assert ng.count_nonzero(X, axis=1, keepdims=True).shape == (3, 1, 5)
    assert ng.nanargmax(X[0], axis=1).shape == ng.argmax(X[0], axis=1).shape == (4,)
    out = ng.empty((3, 5), np.float64)
    assert ng.nanmean(X, axis=1, keepdims=False, out=out) is out
    assert_matches(out, _quiet(np.nanmean, x.astype(np.float64), axis=1), rtol=1e-6)
    assert_matches(ng.nanmax(X * 2 + 1, axis=2), _quiet(np.nanmax, x * 2 + 1, axis=2))
    assert_matches(ng.nansum(np.float32(np.nan)), np.float32(0))
    assert_matches(ng.nanmean(ng.array(np.full((2, 3), np.nan))), np.float64(np.nan))


def test_nan_reductions_fuse(ng):
    x = _data(np.float32, shape=(16, 40), seed=6, specials=False)
    x[3, ::3] = np.nan
    X, Y = ng.array(x), ng.empty(x.shape, np.float32)
    for _ in range(2):  # cold (compile) and warm
        before = ng.stats()["kernels_launched"]
        Y[:] = (X - ng.nanmean(X, axis=1, keepdims=True)) / ng.nanstd(X, axis=1, keepdims=True)
        assert ng.stats()["kernels_launched"] - before == 1
    x64 = x.astype(np.float64)
    want = _quiet(lambda: (x64 - np.nanmean(x64, axis=1, keepdims=True))
                  / np.nanstd(x64, axis=1, keepdims=True))
    assert_matches(Y, want.astype(np.float32), scale=10)


# -- pad ----------------------------------------------------------------------
PAD_CASES = [
    ((5,), 2, "constant", {}),
    ((5,), 2, "constant", {"constant_values": 2.7}),
    ((5,), (1, 3), "constant", {"constant_values": (-1, 7)}),
    ((3, 4), ((1, 2), (3, 0)), "constant", {"constant_values": ((1, 2), (3, 4))}),
    ((3, 4), {1: (2, 1)}, "constant", {"constant_values": 9}),
    ((3, 4), 2, "edge", {}),
    ((2, 3, 4), ((0, 1), (2, 0), (1, 1)), "edge", {}),
    ((4,), 9, "reflect", {}),
    ((3, 4), ((5, 2), (7, 9)), "reflect", {}),
    ((3, 4), ((5, 2), (7, 9)), "reflect", {"reflect_type": "odd"}),
    ((1, 4), 3, "reflect", {}),
    ((4,), 11, "symmetric", {}),
    ((3, 2), ((4, 7), (5, 1)), "symmetric", {"reflect_type": "odd"}),
    ((3,), 10, "wrap", {}),
    ((2, 3), ((3, 5), (7, 1)), "wrap", {}),
    ((0, 3), ((0, 0), (1, 2)), "edge", {}),
    ((0, 3), 2, "constant", {"constant_values": 5}),
    ((), 3, "reflect", {}),
]


@pytest.mark.parametrize("dtype", PAD_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape, width, mode, kwargs", PAD_CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in PAD_CASES])
def test_pad(ng, dtype, shape, width, mode, kwargs):
    x = _data(dtype, shape, lo=0, hi=9, specials=False)
    want = _quiet(np.pad, _compute(x), width, mode, **kwargs).astype(dtype)
    assert_matches(ng.pad(ng.array(x), width, mode, **kwargs), want)


def test_pad_of_a_tree_and_empty_mode(ng):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_matches(ng.pad(ng.array(x) * 2, 1, "wrap"), np.pad(x * 2, 1, "wrap"))
    got = ng.pad(ng.array(x), ((1, 0), (0, 2)), "empty")
    assert got.shape == (4, 6)
    assert_matches(got[1:, :4], x)


def test_pad_randomized_against_numpy(ng):
    rng = np.random.default_rng(20240615)
    modes = ["constant", "edge", "reflect", "symmetric", "wrap"]
    for case in range(120):
        ndim = int(rng.integers(0, 4))
        shape = tuple(int(d) for d in rng.integers(0, 5, ndim) + (rng.random(ndim) < 0.9))
        dtype = [np.float32, np.int16, np.bool_][case % 3]
        x = random_array(rng, shape, dtype)
        width = [int(rng.integers(0, 9)), (int(rng.integers(0, 4)), int(rng.integers(0, 9))),
                 rng.integers(0, 9, (ndim, 2)).tolist()][case % 3 if ndim else 0]
        mode = modes[int(rng.integers(0, len(modes)))]
        kwargs = {}
        if mode == "constant" and rng.random() < 0.7:
            kwargs["constant_values"] = rng.integers(-3, 4, (ndim, 2)).tolist() if ndim else 2
        if mode in ("reflect", "symmetric") and rng.random() < 0.5:
            kwargs["reflect_type"] = "odd"
        label = f"case {case}: {shape} {dtype.__name__} {width} {mode} {kwargs}"
        try:
            want = np.pad(x, width, mode, **kwargs)
        except ValueError as err:  # an empty axis extended by copying
            with pytest.raises(ValueError) as got:
                ng.pad(ng.array(x), width, mode, **kwargs)
            assert str(got.value) == str(err), label
            continue
        assert_matches(ng.pad(ng.array(x), width, mode, **kwargs), want, err_msg=label)


# -- errors -----------------------------------------------------------------
BAD_CALLS = [
    ("pad", ((3,), 1.5), {}),
    ("pad", ((3,), -1), {}),
    ("pad", ((3,), ((1, 2), (3, 4))), {}),
    ("pad", ((2, 3), [[1, 2, 3]]), {}),
    ("pad", ((3,), 1, "foo"), {}),
    ("pad", ((3,), 1, "edge"), {"constant_values": 3}),
    ("pad", ((3,), 1, "wrap"), {"reflect_type": "odd"}),
    ("pad", ((0, 3), 1, "reflect"), {}),
    ("pad", ((0, 3), ((1, 0), (0, 0)), "wrap"), {}),
    ("pad", ((3,), 1), {"constant_values": 300, "dtype": np.int8}),
    ("pad", ((3,), 1), {"constant_values": np.nan, "dtype": np.int8}),
    ("nanmax", ((0, 3),), {"axis": 0}),
    ("nanmin", ((0, 3),), {}),
    ("nanmax", ((0, 3),), {"dtype": np.int8}),
    ("nanargmax", ((0,),), {}),
    ("nanargmax", ((2, 3),), {"axis": (0, 1)}),
    ("nanargmin", ((2, 3),), {"axis": 2}),
    ("nansum", ((2, 3),), {"axis": 2}),
    ("nanprod", ((2, 3),), {"axis": -3}),
    ("nanmean", ((2, 3),), {"axis": (0, 0)}),
    ("nanvar", ((2, 3),), {"axis": 5}),
    ("nanstd", ((2, 3),), {"axis": (1, 7)}),
    ("count_nonzero", ((2, 3),), {"axis": 2}),
    ("ldexp", ((3,), (3,)), {}),
    ("ldexp", ((3,), (3,)), {"dtypes": (np.float32, np.uint64)}),
    ("polyval", ((), (3,)), {}),
]


def _bad_operands(ng, shapes, kwargs):
    """Host and factory operands of an error case: zeros of each shape and dtype."""
    dtypes = kwargs.pop("dtypes", None) or [kwargs.pop("dtype", np.float32)] * len(shapes)
    hosts = [np.zeros(shape, dtype) for shape, dtype in zip(shapes, dtypes)]
    return hosts, [ng.array(h) for h in hosts]


@pytest.mark.parametrize("name, args, kwargs", BAD_CALLS,
                         ids=[f"{c[0]}{c[1]}{c[2]}" for c in BAD_CALLS])
def test_bad_input_raises_as_numpy(ng, name, args, kwargs):
    kwargs = dict(kwargs)
    if name == "pad":  # only the array is an array
        dtype = kwargs.pop("dtype", np.float32)
        hosts = [np.zeros(args[0], dtype), *args[1:]]
        ours = [ng.array(hosts[0]), *args[1:]]
    else:
        hosts, ours = _bad_operands(ng, args, kwargs)
    with pytest.raises(Exception) as want:
        getattr(np, name)(*hosts, **kwargs)
    with pytest.raises(want.type) as got:
        getattr(ng, name)(*ours, **kwargs)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


def test_all_nan_slice(ng):
    x = np.array([[1.0, np.nan], [np.nan, np.nan]])
    for name in ("nanargmax", "nanargmin"):
        for axis in (None, 0, 1):
            if axis is not None:  # numpy: an error for any all-NaN slice
                with pytest.raises(ValueError, match="All-NaN slice encountered"):
                    getattr(np, name)(x, axis=axis)
                with pytest.raises(ValueError, match="^All-NaN slice encountered$"):
                    getattr(ng, name)(ng.array(x), axis=axis)
        assert_matches(getattr(ng, name)(ng.array(x), keepdims=False), getattr(np, name)(x))
        with pytest.raises(ValueError, match="^All-NaN slice encountered$"):
            getattr(ng, name)(ng.array(x[1]))


def test_other_errors(ng):
    X = ng.array(np.zeros(3, np.float32))
    for name, args in (("divmod", (X, 2)), ("modf", (X,)), ("frexp", (X,))):
        for out, host_out in (((X,), (np.zeros(3),)), (X, np.zeros(3))):  # numpy's errors
            with pytest.raises(Exception) as want:
                getattr(np, name)(*[np.zeros(3, np.float32) for _ in args], out=host_out)
            with pytest.raises(want.type, match=re.escape(str(want.value))):
                getattr(ng, name)(*args, out=out)
    for mode in ("mean", "linear_ramp", np.sum):
        with pytest.raises(NotImplementedError, match="not implemented by gpuarray"):
            ng.pad(X, 1, mode)
    with pytest.raises(AxisError):
        ng.nanmax(X, axis=1)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        ng.polyval(ng.array(np.float32(2)), X)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, np.dtype(np.float32),
                                   np.dtype(np.float64)], ids=dtype_id)
def test_nextafter_and_spacing_step_in_the_dtypes_units(ng, dtype):
    info = _finfo(dtype)
    edges = [0.0, -0.0, 1.0, -1.0, 3.5, float(info.max), -float(info.max),
             float(info.smallest_subnormal), np.inf, -np.inf, np.nan]
    x = np.array(edges * 2, dtype)
    y = np.array([1.0, -1.0, 2.0, -2.0, 0.0, np.inf, -np.inf, 0.0, 0.0, 0.0, 1.0]
                 + [np.nan, 0.0, 1.0, -1.0, 3.5, 0.0, 0.0, -1.0, np.inf, 5.0, 2.0], dtype)
    with np.errstate(all="ignore"):
        want_next = np.nextafter(x, y)
        want_spacing = np.spacing(x)
    got_next = ng.evaluate(ng.nextafter(ng.array(x), ng.array(y))).get()
    got_spacing = ng.evaluate(ng.spacing(ng.array(x))).get()
    assert got_next.dtype == dtype and got_spacing.dtype == dtype
    np.testing.assert_array_equal(got_next.astype(np.float64), want_next.astype(np.float64))
    np.testing.assert_array_equal(got_spacing.astype(np.float64), want_spacing.astype(np.float64))
    assert np.array_equal(np.signbit(got_next), np.signbit(want_next))


def test_nextafter_of_integers_is_float64(ng):
    got = ng.evaluate(ng.nextafter(ng.array(np.array([1, 2], np.int32)), 3)).get()
    np.testing.assert_array_equal(got, np.nextafter(np.array([1, 2], np.int32), 3))
