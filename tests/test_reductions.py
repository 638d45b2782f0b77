"""Reductions: every reduction x axis x keepdims x rank x dtype against numpy,
reductions inside expressions (batch-norm, softmax at many row lengths,
different axes, nesting), argmax ties, NaN handling, empty axes."""

import zlib

import numpy as np
import pytest

from conftest import ALL_DTYPES, BF16, assert_matches, dtype_id, is_float

REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin",
              "any", "all", "ptp"]
ARG = ("argmax", "argmin")


def seed_of(*parts):
    return zlib.crc32(repr(parts).encode())


def _proxy(x):
    return x.astype(np.float16) if x.dtype == BF16 else x


def make_data(rng, name, shape, dtype):
    """Inputs suited to the reduction: ties for max/min/arg*, factors near 1
    for prod, many zeros for any/all."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        p = {"all": 0.85, "any": 0.15}.get(name, 0.5)
        return np.asarray(rng.random(shape) < p)
    if name == "prod":
        if dtype.kind in "iu":
            vals = rng.choice([-1, 1, 1, 1, 2], size=shape) if dtype.kind == "i" \
                else rng.choice([1, 1, 1, 2], size=shape)
            return np.asarray(vals).astype(dtype)
        return np.asarray(rng.uniform(0.9, 1.11, size=shape) * rng.choice([-1, 1], size=shape)
                          ).astype(dtype)
    if name in ("any", "all"):
        p0 = 0.85 if name == "any" else 0.1
        v = np.where(rng.random(shape) < p0, 0, rng.integers(1, 5, size=shape))
        return np.asarray(v).astype(dtype)
    if name in ("max", "min", "argmax", "argmin", "ptp"):
        if dtype.kind in "iu":
            lo = -5 if dtype.kind == "i" else 0
            return np.asarray(rng.integers(lo, lo + 10, size=shape)).astype(dtype)
        return np.asarray(rng.integers(-6, 7, size=shape) * 0.5).astype(dtype)
    if dtype.kind in "iu":
        lo = -20 if dtype.kind == "i" else 0
        return np.asarray(rng.integers(lo, lo + 40, size=shape)).astype(dtype)
    return np.asarray(rng.uniform(-2, 2, size=shape)).astype(dtype)


def np_reduce(name, x, axis, keepdims):
    """numpy's result for reduction ``name`` (float results computed in
    float64 then rounded to numpy's result dtype); None if numpy raises
    TypeError."""
    fn = getattr(np, name)
    kw = {"axis": axis, "keepdims": keepdims}
    has_bf16 = x.dtype == BF16
    with np.errstate(all="ignore"):
        try:
            dtype = np.asarray(fn(_proxy(x), **kw)).dtype
        except TypeError:
            return None
        if has_bf16 and dtype == np.float16:
            dtype = BF16
        if is_float(dtype):
            vals = np.asarray(fn(x.astype(np.float64), **kw)).astype(dtype)
        else:
            xe = x.astype(np.float32) if has_bf16 else x
            vals = np.asarray(fn(xe, **kw)).astype(dtype)
    return vals, dtype


def _scale(name, x, axis):
    """Magnitude the accumulated rounding error is relative to."""
    a = np.abs(x.astype(np.float64))
    if a.size == 0:
        return 1.0
    with np.errstate(all="ignore"):
        if name == "sum":
            s = np.sum(a, axis=axis)
        elif name == "prod":
            s = np.prod(a, axis=axis)
        elif name in ("mean",):
            s = np.mean(a, axis=axis)
        elif name == "var":
            s = np.mean(a * a, axis=axis)
        elif name == "std":
            s = np.sqrt(np.mean(a * a, axis=axis))
        else:
            s = a
    s = np.asarray(s)
    fin = s[np.isfinite(s)]
    return float(fin.max()) if fin.size else 1.0


def call_reduction(ng, name, t, axis, keepdims):
    fn = getattr(ng, name)
    if keepdims is None:  # the default: numpy's, the reduced axes dropped
        return fn(t, axis=axis)
    return fn(t, axis=axis, keepdims=keepdims)


def check_reduction(ng, name, x, axis, keepdims, view=None):
    t = ng.array(x)
    if view is not None:
        t = view(t)
        x = view(x)
    exp = np_reduce(name, x, axis, False if keepdims is None else keepdims)
    if exp is None:
        with pytest.raises(TypeError):
            call_reduction(ng, name, t, axis, keepdims)
        return
    vals, dtype = exp
    expr = call_reduction(ng, name, t, axis, keepdims)
    assert tuple(expr.shape) == vals.shape, f"shape {expr.shape}, numpy {vals.shape}"
    assert expr.dtype == dtype, f"dtype {expr.dtype}, numpy {dtype}"
    out = ng.empty(expr.shape, dtype=expr.dtype)
    out[...] = expr
    assert_matches(out.get(), vals, dtype, scale=_scale(name, x, axis),
                   transcendental=(name == "std"))


# --------------------------------------------------------------------------
# every reduction x every dtype
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 1, 0], ids=["axisNone", "axis1", "axis0"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_dtypes(ng, name, dtype, axis):
    rng = np.random.default_rng(seed_of(name, str(dtype), axis))
    x = make_data(rng, name, (6, 37), dtype)
    check_reduction(ng, name, x, axis, None)


# --------------------------------------------------------------------------
# every reduction x rank x axis x keepdims
# --------------------------------------------------------------------------

RANK_AXES = [
    ((7,), None), ((7,), 0), ((7,), -1), ((7,), (0,)),
    ((5, 7), None), ((5, 7), 0), ((5, 7), 1), ((5, 7), -1), ((5, 7), -2), ((5, 7), (0, 1)),
    ((5, 7), (1, 0)),
    ((3, 4, 5), None), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), 2), ((3, 4, 5), -1),
    ((3, 4, 5), (0, 2)), ((3, 4, 5), (1, 2)), ((3, 4, 5), (0, 1)),
    ((2, 3, 4, 5), None), ((2, 3, 4, 5), 0), ((2, 3, 4, 5), 3), ((2, 3, 4, 5), -2),
    ((2, 3, 4, 5), (1, 3)), ((2, 3, 4, 5), (0, 1, 2)), ((2, 3, 4, 5), (0, 1, 2, 3)),
    ((2, 3, 4, 5), (0, 3)),
]
RANK_CASES = [(n, s, a, k) for n in REDUCTIONS for s, a in RANK_AXES for k in (True, False)
              if not (n in ARG and isinstance(a, tuple))]


@pytest.mark.parametrize("name,shape,axis,keepdims", RANK_CASES,
                         ids=[f"{n}-{'x'.join(map(str, s))}-ax{a}-kd{k}".replace(" ", "")
                              for n, s, a, k in RANK_CASES])
def test_reduction_axes(ng, name, shape, axis, keepdims):
    rng = np.random.default_rng(seed_of(name, shape, axis, keepdims))
    x = make_data(rng, name, shape, np.float32)
    check_reduction(ng, name, x, axis, keepdims)


INT_RANK_CASES = [(n, s, a) for n in ("sum", "prod", "max", "argmin", "any", "mean")
                  for s, a in RANK_AXES[::2] if not (n in ARG and isinstance(a, tuple))]


@pytest.mark.parametrize("name,shape,axis", INT_RANK_CASES,
                         ids=[f"{n}-{'x'.join(map(str, s))}-ax{a}".replace(" ", "")
                              for n, s, a in INT_RANK_CASES])
def test_reduction_axes_int(ng, name, shape, axis):
    rng = np.random.default_rng(seed_of(name, shape, axis, "int"))
    x = make_data(rng, name, shape, np.int16)
    check_reduction(ng, name, x, axis, None)


REDUCTION_VIEWS = {
    "T": ((5, 7), lambda x: x.T),
    "reverse_step": ((8, 9), lambda x: x[::-1, ::2]),
    "transpose3d": ((3, 4, 5), lambda x: x.transpose(2, 0, 1)),
    "neg_inner": ((4, 3, 6), lambda x: x[:, ::-1, 1::2]),
    "newaxis": ((4, 6), lambda x: x[:, None, ::-1]),
}


@pytest.mark.parametrize("view", list(REDUCTION_VIEWS))
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_of_views(ng, name, view):
    shape, fn = REDUCTION_VIEWS[view]
    rng = np.random.default_rng(seed_of(name, view))
    x = make_data(rng, name, shape, np.float32)
    ndim = fn(x).ndim
    for axis in (None, 0, ndim - 1):
        check_reduction(ng, name, x, axis, None, view=fn)
    if name not in ARG:
        check_reduction(ng, name, x, (0, ndim - 1), False, view=fn)


@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)],
                         ids=dtype_id)
def test_var_std_ddof(ng, ddof, dtype):
    rng = np.random.default_rng(seed_of("ddof", ddof, str(dtype)))
    x = make_data(rng, "var", (6, 11), dtype)
    t = ng.array(x)
    for axis in (None, 1, 0):
        for name in ("var", "std"):
            want = getattr(np, name)(x.astype(np.float64), axis=axis, ddof=ddof)
            rdt = np.float64 if dtype.kind in "iu" else dtype
            got = getattr(ng, name)(t, axis=axis, ddof=ddof)
            assert got.dtype == rdt
            assert_matches(got.get(), want.astype(rdt), rdt, scale=_scale(name, x, axis),
                           transcendental=True)


# --------------------------------------------------------------------------
# reductions inside expressions
# --------------------------------------------------------------------------

BN_SHAPES = [(4, 7), (33, 100), (3, 1000), (200, 31), (2, 5000), (64, 256), (1, 1), (5, 1)]


def _batchnorm_ref(x, axis, eps):
    x = x.astype(np.float64)
    return (1.0 / np.sqrt(np.var(x, axis=axis, keepdims=True) + eps)
            * (x - np.mean(x, axis=axis, keepdims=True)))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16,
                                   np.dtype(np.float64)], ids=dtype_id)
@pytest.mark.parametrize("shape", BN_SHAPES, ids=["x".join(map(str, s)) for s in BN_SHAPES])
def test_batchnorm_expression(ng, shape, dtype):
    rng = np.random.default_rng(seed_of("bn", shape, str(dtype)))
    x = (rng.standard_normal(shape) * 3 + rng.uniform(-5, 5, size=(shape[0], 1))).astype(dtype)
    eps = 1e-5
    A = ng.array(x)
    for axis in (1, 0):
        expr = (ng.reciprocal(ng.sqrt(ng.var(A, axis=axis, keepdims=True) + eps))
                * (A - ng.mean(A, axis=axis, keepdims=True)))
        assert expr.shape == shape and expr.dtype == dtype
        out = ng.empty(shape, dtype=dtype)
        out[:] = expr
        want = _batchnorm_ref(x, axis, eps)
        # values are O(1); error dominated by the mean/var accumulations
        assert_matches(out.get(), want.astype(dtype), dtype, scale=4.0, transcendental=True)
    # in place: A[:] = f(A) reads all of A before overwriting it
    A[:] = (ng.reciprocal(ng.sqrt(ng.var(A, axis=1, keepdims=True) + eps))
            * (A - ng.mean(A, axis=1, keepdims=True)))
    assert_matches(A.get(), _batchnorm_ref(x, 1, eps).astype(dtype), dtype, scale=4.0,
                   transcendental=True)


SOFTMAX_LENGTHS = [1, 7, 31, 32, 33, 100, 1000, 5000, 40000]
MANY_ROWS = {1: 512, 7: 512, 31: 512, 32: 512, 33: 512, 100: 300, 1000: 96, 5000: 40,
             40000: 24}


def _softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_data(rng, rows, n, dtype):
    # per-row offsets up to +-80: without a correct max stage exp() overflows
    x = rng.uniform(-15, 15, size=(rows, n)) + rng.uniform(-80, 80, size=(rows, 1))
    return x.astype(dtype)


@pytest.mark.parametrize("rows", ["few", "many"])
@pytest.mark.parametrize("n", SOFTMAX_LENGTHS)
def test_softmax_row_lengths(ng, n, rows):
    nrows = 2 if rows == "few" else MANY_ROWS[n]
    rng = np.random.default_rng(seed_of("softmax", n, rows))
    x = _softmax_data(rng, nrows, n, np.float32)
    A = ng.array(x)
    e = ng.exp(A - ng.max(A, axis=1, keepdims=True))
    expr = e / ng.sum(e, axis=1, keepdims=True)
    out = ng.empty(x.shape, dtype=np.float32)
    want = _softmax_ref(x)
    for _ in range(3):  # a race shows up intermittently: run it a few times
        out[:] = -1
        out[:] = expr
        got = out.get()
        assert np.all(np.isfinite(got))
        assert_matches(got, want.astype(np.float32), np.float32, transcendental=True)
        np.testing.assert_allclose(got.astype(np.float64).sum(axis=1), 1.0, rtol=2e-4)
    # the max -> sum stages alone
    s = ng.sum(ng.exp(A - ng.max(A, axis=1, keepdims=True)), axis=1, keepdims=True)
    x64 = x.astype(np.float64)
    want_s = np.exp(x64 - x64.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)
    got_s = s.get()
    assert got_s.shape == (nrows, 1)
    assert_matches(got_s, want_s.astype(np.float32), np.float32, rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, np.dtype(np.float64)], ids=dtype_id)
@pytest.mark.parametrize("n", [7, 32, 33, 1000, 5000])
def test_softmax_dtypes(ng, n, dtype):
    rng = np.random.default_rng(seed_of("softmax-dt", n, str(dtype)))
    x = _softmax_data(rng, 37, n, dtype)
    A = ng.array(x)
    e = ng.exp(A - ng.max(A, axis=1, keepdims=True))
    out = ng.empty(x.shape, dtype=dtype)
    out[:] = e / ng.sum(e, axis=1, keepdims=True)
    assert_matches(out.get(), _softmax_ref(x).astype(dtype), dtype, transcendental=True)


def test_softmax_axis0_and_3d(ng):
    rng = np.random.default_rng(21)
    x = rng.uniform(-50, 50, size=(300, 17)).astype(np.float32)
    A = ng.array(x)
    e = ng.exp(A - ng.max(A, axis=0, keepdims=True))
    got = (e / ng.sum(e, axis=0, keepdims=True)).get()
    x64 = x.astype(np.float64)
    ee = np.exp(x64 - x64.max(axis=0, keepdims=True))
    assert_matches(got, (ee / ee.sum(axis=0, keepdims=True)).astype(np.float32), np.float32,
                   transcendental=True)
    y = rng.uniform(-50, 50, size=(3, 129, 5)).astype(np.float32)
    B = ng.array(y)
    e = ng.exp(B - ng.max(B, axis=1, keepdims=True))
    got = (e / ng.sum(e, axis=1, keepdims=True)).get()
    y64 = y.astype(np.float64)
    ee = np.exp(y64 - y64.max(axis=1, keepdims=True))
    assert_matches(got, (ee / ee.sum(axis=1, keepdims=True)).astype(np.float32), np.float32,
                   transcendental=True)


DIFF_AXES_SHAPES = [(5, 7), (64, 300), (1000, 3), (3, 2000)]


@pytest.mark.parametrize("shape", DIFF_AXES_SHAPES, ids=["x".join(map(str, s)) for s in DIFF_AXES_SHAPES])
def test_reductions_over_different_axes(ng, shape):
    rng = np.random.default_rng(seed_of("diffaxes", shape))
    x = rng.uniform(-3, 3, size=shape).astype(np.float32)
    A = ng.array(x)
    x64 = x.astype(np.float64)
    out = ng.empty(shape, dtype=np.float32)
    out[:] = A - ng.mean(A, axis=0, keepdims=True) - ng.mean(A, axis=1, keepdims=True)
    want = x64 - x64.mean(axis=0, keepdims=True) - x64.mean(axis=1, keepdims=True)
    assert_matches(out.get(), want.astype(np.float32), np.float32, scale=6.0)
    out[:] = ng.max(A, axis=0, keepdims=True) * ng.sum(A, axis=1, keepdims=True) + A
    want = x64.max(axis=0, keepdims=True) * x64.sum(axis=1, keepdims=True) + x64
    assert_matches(out.get(), want.astype(np.float32), np.float32,
                   scale=float(np.abs(want).max()) + 3 * np.abs(x64).sum(axis=1).max())
    # in place, the same tensor on both sides
    A[:] = A - ng.mean(A, axis=0, keepdims=True) - ng.mean(A, axis=1, keepdims=True)
    want = x64 - x64.mean(axis=0, keepdims=True) - x64.mean(axis=1, keepdims=True)
    assert_matches(A.get(), want.astype(np.float32), np.float32, scale=6.0)


def test_reductions_over_different_axes_3d(ng):
    rng = np.random.default_rng(22)
    x = rng.uniform(-3, 3, size=(3, 4, 5)).astype(np.float64)
    A = ng.array(x)
    expr = (A - ng.mean(A, axis=(0, 2), keepdims=True)
            + ng.max(A, axis=1, keepdims=True) * ng.min(A, axis=(0, 1), keepdims=True))
    want = (x - x.mean(axis=(0, 2), keepdims=True)
            + x.max(axis=1, keepdims=True) * x.min(axis=(0, 1), keepdims=True))
    assert_matches(expr.get(), want, np.float64)
    expr = ng.sum(A, axis=0, keepdims=True) - ng.sum(A, axis=2, keepdims=True) + ng.mean(A, keepdims=True)
    want = x.sum(axis=0, keepdims=True) - x.sum(axis=2, keepdims=True) + x.mean(keepdims=True)
    assert_matches(expr.get(), want, np.float64)


NESTED = {
    "sum_of_centered": (lambda L, a: L.sum(a - L.mean(a, axis=1, keepdims=True), axis=0, keepdims=True),
                        lambda a: np.sum(a - a.mean(axis=1, keepdims=True), axis=0, keepdims=True)),
    "max_of_sum": (lambda L, a: L.max(L.sum(a, axis=1, keepdims=True), axis=0, keepdims=True),
                   lambda a: np.max(a.sum(axis=1, keepdims=True), axis=0, keepdims=True)),
    "var_by_hand": (lambda L, a: L.mean(L.square(a - L.mean(a, axis=1, keepdims=True)), axis=1,
                                        keepdims=True),
                    lambda a: np.mean(np.square(a - a.mean(axis=1, keepdims=True)), axis=1,
                                      keepdims=True)),
    "sum_max_times": (lambda L, a: L.sum(L.max(a, axis=0, keepdims=True) * a, axis=1, keepdims=True),
                      lambda a: np.sum(a.max(axis=0, keepdims=True) * a, axis=1, keepdims=True)),
    "std_ratio": (lambda L, a: L.std(a - L.min(a, axis=0, keepdims=True), axis=1, keepdims=True)
                  / L.mean(abs(a), axis=1, keepdims=True),
                  lambda a: np.std(a - a.min(axis=0, keepdims=True), axis=1, keepdims=True)
                  / np.mean(np.abs(a), axis=1, keepdims=True)),
    "sum_all_of_rowmax": (lambda L, a: L.sum(L.max(a, axis=1, keepdims=True), keepdims=True),
                          lambda a: np.sum(a.max(axis=1, keepdims=True), keepdims=True)),
    "argmax_of_rowsum": (lambda L, a: L.argmax(L.sum(a, axis=1, keepdims=True), axis=0, keepdims=True),
                         lambda a: np.argmax(a.sum(axis=1, keepdims=True), axis=0, keepdims=True)),
    "mean_default_keepdims": (lambda L, a: L.mean(a, axis=1) * 2,
                              lambda a: a.mean(axis=1) * 2),
    "centered_by_total": (lambda L, a: a - L.mean(a, keepdims=True)
                          + L.sum(a, axis=0, keepdims=True) / L.sum(abs(a), keepdims=True),
                          lambda a: a - a.mean() + a.sum(axis=0, keepdims=True)
                          / np.abs(a).sum()),
}


@pytest.mark.parametrize("shape", [(6, 9), (40, 130), (3, 3000)], ids=["6x9", "40x130", "3x3000"])
@pytest.mark.parametrize("name", list(NESTED))
def test_nested_reductions(ng, name, shape):
    fn, ref = NESTED[name]
    rng = np.random.default_rng(seed_of("nested", name, shape))
    x = rng.uniform(0.1, 2, size=shape).astype(np.float32)
    x[0] += 1.0  # row 0 has the largest sum by a margin (argmax_of_rowsum)
    A = ng.array(x)
    want = np.asarray(ref(x.astype(np.float64)))
    expr = fn(ng, A)
    assert tuple(expr.shape) == want.shape
    got = expr.get()
    if name.startswith("argmax"):
        np.testing.assert_array_equal(got, want)
        return
    assert_matches(got, want.astype(np.float32), np.float32,
                   scale=float(np.abs(x).sum(axis=None)) / 8, transcendental=True)


# --------------------------------------------------------------------------
# argmax / argmin ties, NaN, empty axes, big ints, out=
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float16),
                                   np.dtype(np.uint8), np.dtype(np.bool_), BF16], ids=dtype_id)
def test_argmax_ties_first_occurrence(ng, dtype):
    rng = np.random.default_rng(23)
    x = rng.integers(0, 3, size=(9, 40)).astype(dtype)  # many ties
    x[4] = x[4, 0]  # a constant row
    t = ng.array(x)
    xe = x.astype(np.float32) if dtype == BF16 else x
    for name in ARG:
        for axis in (None, 0, 1, -1):
            for view, vfn in (("id", lambda a: a), ("T", lambda a: a.T),
                              ("rev", lambda a: a[::-1, ::-3])):
                want = getattr(np, name)(vfn(xe), axis=axis, keepdims=True)
                got = getattr(ng, name)(vfn(t), axis=axis, keepdims=True)
                assert got.dtype == np.int64
                np.testing.assert_array_equal(got.get(), want, err_msg=f"{name} {axis} {view}")
            want = getattr(np, name)(xe, axis=axis)
            got = getattr(ng, name)(t, axis=axis, keepdims=False)
            np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
                                   BF16], ids=dtype_id)
def test_nan_handling(ng, dtype):
    x = np.arange(1.0, 31.0).reshape(5, 6)
    x[1, 2] = np.nan
    x[1, 4] = np.nan
    x[3, 0] = np.nan
    x[4, 5] = np.nan
    x = x.astype(dtype)
    xe = x.astype(np.float32) if dtype == BF16 else x
    t = ng.array(x)
    for axis in (None, 0, 1):
        for name in ("max", "min", "sum", "prod", "mean", "ptp", "var"):
            got = getattr(ng, name)(t, axis=axis, keepdims=True).get()
            want = getattr(np, name)(x.astype(np.float64), axis=axis, keepdims=True)
            # compare NaN positions, and finite values loosely
            np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), np.isnan(want),
                                          err_msg=f"{name} axis={axis}")
        for name in ARG:
            got = getattr(ng, name)(t, axis=axis, keepdims=True).get()
            want = getattr(np, name)(xe, axis=axis, keepdims=True)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} axis={axis}")
        for name in ("any", "all"):
            got = getattr(ng, name)(t, axis=axis, keepdims=True).get()
            want = getattr(np, name)(xe, axis=axis, keepdims=True)
            np.testing.assert_array_equal(got, want, err_msg=f"{name} axis={axis}")
    # NaN in the middle of a long row
    y = np.ones((3, 5000), np.float32)
    y[1, 3333] = np.nan
    got = ng.max(ng.array(y), axis=1, keepdims=True).get()
    assert np.isnan(got[1, 0]) and got[0, 0] == 1.0 and got[2, 0] == 1.0
    got = ng.argmin(ng.array(y), axis=1, keepdims=True).get()
    np.testing.assert_array_equal(got.ravel(), [0, 3333, 0])


@pytest.mark.parametrize("shape,axis", [((3, 0), 1), ((0, 4), 0), ((0,), 0), ((2, 0, 3), None),
                                        ((2, 0, 3), (0, 1))],
                         ids=["3x0-ax1", "0x4-ax0", "0-ax0", "2x0x3-None", "2x0x3-ax01"])
def test_empty_axis(ng, shape, axis):
    x = np.zeros(shape, np.float32)
    t = ng.array(x)
    for name in ("sum", "prod", "any", "all"):
        want = getattr(np, name)(x, axis=axis)
        got = getattr(ng, name)(t, axis=axis)
        assert tuple(got.shape) == want.shape
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want, err_msg=name)
    xi = np.zeros(shape, np.int8)
    want = np.sum(xi, axis=axis, keepdims=False)
    got = ng.sum(ng.array(xi), axis=axis, keepdims=False)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.get(), want)


def test_empty_views_past_their_buffer(ng):
    """An empty view may start past its buffer's end (the last matrix of an
    empty stack, a reversed empty axis); reducing it to a non-empty result
    reads nothing, as numpy's (the conformance suite's tensordot found it)."""
    x = np.zeros((2, 0, 3), np.float32)
    t = ng.array(x)
    for view, ref in ((t[1], x[1]), (t[1][::-1], x[1][::-1]), (t[:, :, ::-1][1], x[:, :, ::-1][1])):
        np.testing.assert_array_equal(ng.sum(view, axis=0).get(), ref.sum(axis=0))
        np.testing.assert_array_equal(ng.prod(view * 2 + 1, axis=0).get(), np.prod(ref * 2 + 1, axis=0))
    a, b = ng.zeros((3, 0), np.float32), ng.zeros((0, 4), np.float32)
    np.testing.assert_array_equal(ng.tensordot(a, b, axes=1).get(), np.zeros((3, 4)))


def test_empty_max_raises(ng):
    t = ng.array(np.zeros((3, 0), np.float32))
    with pytest.raises(ValueError, match="zero-size array"):
        ng.max(t, axis=1, keepdims=True).get()
    with pytest.raises(ValueError):
        ng.argmin(t, axis=1, keepdims=True).get()


def test_large_int64_reductions_exact(ng):
    x = np.array([[2**60 + 1, 3, -(2**59) + 5, 2**53 + 1],
                  [-(2**61), 2**62 - 1, 7, -(2**53) - 3]], dtype=np.int64)
    t = ng.array(x)
    for axis in (None, 0, 1):
        for name in ("sum", "max", "min", "argmax", "argmin"):
            want = getattr(np, name)(x, axis=axis)
            np.testing.assert_array_equal(getattr(ng, name)(t, axis=axis).get(), want)
    u = np.array([2**63 + 5, 2**62, 3], dtype=np.uint64)
    np.testing.assert_array_equal(ng.sum(ng.array(u), keepdims=True).get(), np.sum(u, keepdims=True))
    np.testing.assert_array_equal(ng.max(ng.array(u), keepdims=True).get(), np.max(u, keepdims=True))
    p = np.array([2**31 + 1, 2**20 + 3], dtype=np.int64)
    np.testing.assert_array_equal(ng.prod(ng.array(p), keepdims=True).get(), np.prod(p, keepdims=True))


def test_reduction_out_argument(ng):
    rng = np.random.default_rng(24)
    x = rng.uniform(-1, 1, size=(7, 13)).astype(np.float32)
    t = ng.array(x)
    c = ng.empty((7, 1), dtype=np.float32)
    ng.sum(t, axis=1, out=c, keepdims=True)
    assert_matches(c.get(), x.astype(np.float64).sum(axis=1, keepdims=True).astype(np.float32),
                   np.float32, scale=13)
    c1 = ng.empty((7,), dtype=np.float32)
    ng.mean(t, axis=1, keepdims=False, out=c1)
    assert_matches(c1.get(), x.astype(np.float64).mean(axis=1).astype(np.float32), np.float32,
                   scale=1)
    ci = ng.empty((1, 13), dtype=np.int64)
    ng.argmax(t, axis=0, out=ci, keepdims=True)
    np.testing.assert_array_equal(ci.get(), np.argmax(x, axis=0, keepdims=True))
    big = ng.zeros((2, 7, 1), dtype=np.float32)
    ng.max(t, axis=1, out=big[1], keepdims=True)
    want = np.zeros((2, 7, 1), np.float32)
    want[1] = x.max(axis=1, keepdims=True)
    np.testing.assert_array_equal(big.get(), want)
    s = ng.empty((), dtype=np.float32)
    ng.sum(t, keepdims=False, out=s)
    assert_matches(s.get(), np.float32(x.astype(np.float64).sum()), np.float32, scale=100)


def test_reduction_of_broadcast_expression(ng):
    rng = np.random.default_rng(25)
    a = rng.uniform(-1, 1, size=(6, 1, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(4, 1)).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
        got = ng.sum(A * B + 1, axis=axis, keepdims=True).get()
        want = np.sum(a64 * b64 + 1, axis=axis, keepdims=True)
        assert_matches(got, want.astype(np.float32), np.float32, scale=float(np.abs(want).max()) + 60)
        got = ng.max(A - B, axis=axis, keepdims=True).get()
        want = np.max(a64 - b64, axis=axis, keepdims=True)
        assert_matches(got, want.astype(np.float32), np.float32)


# --------------------------------------------------------------------------
# no axes, scalars, and axis arguments numpy refuses
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_over_no_axes(ng, name, dtype):
    """axis=(): every element on its own, in numpy's result dtype (argmax: TypeError)."""
    rng = np.random.default_rng(seed_of(name, str(dtype), "no axes"))
    x = make_data(rng, name, (3, 5), dtype)
    # keepdims=False drops nothing here: half the dtypes check that, half the default
    keepdims = False if ALL_DTYPES.index(dtype) % 2 else None
    check_reduction(ng, name, x, (), keepdims)


#: operands with no axes: Python and numpy scalars, and a 0-d tensor (made from the host value)
NO_AXES_OPERANDS = {
    "float": 2.5,
    "int": 3,
    "bool": True,
    "float32": np.float32(-1.5),
    "uint8": np.uint8(7),
    "0-d tensor": np.array(0.75, np.float32),
}


@pytest.mark.parametrize("axis", [None, ()], ids=["axisNone", "axisEmpty"])
@pytest.mark.parametrize("operand", list(NO_AXES_OPERANDS))
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_of_scalars(ng, name, operand, axis):
    """numpy reduces a scalar to itself (argmax to 0); here the result is a 0-d tensor."""
    value = NO_AXES_OPERANDS[operand]
    arg = ng.array(value) if isinstance(value, np.ndarray) else value
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(getattr(np, name)(value, axis=axis))
    except TypeError:  # ptp of a bool, argmax over axis=()
        with pytest.raises(TypeError):
            getattr(ng, name)(arg, axis=axis)
        return
    node = getattr(ng, name)(arg, axis=axis)
    assert (node.shape, node.dtype) == ((), want.dtype)
    got = node.get()
    assert isinstance(got, np.ndarray) and got.shape == ()
    assert_matches(got, want, want.dtype)


#: axis arguments numpy refuses on a 2-D array, each with numpy's exception
BAD_AXES = [True, np.True_, (0, True), 1.0, np.float64(0.0), "0", (0, 0), (1, -1), 2, -3,
            (0, 2)]


@pytest.mark.parametrize("axis", BAD_AXES, ids=repr)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_bad_axes_raise_numpys_errors(ng, name, axis):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(Exception) as expected:
        getattr(np, name)(x, axis=axis)
    with pytest.raises(expected.type) as got:
        getattr(ng, name)(ng.array(x), axis=axis)
    if expected.type is not TypeError:  # numpy's TypeError wording differs by function
        assert str(got.value) == str(expected.value)
