"""The 8-bit floats float8_e4m3fn and float8_e5m2 as storage dtypes.

ml_dtypes (numpy's reference for them) is the oracle: decoding of every
bit pattern, encoding (astype) bit for bit over a dense float32 grid --
ties, subnormals, overflow, infinities, NaN, signed zeros -- and from
float64 (numpy's astype rounds through float32, twice), nextafter and
spacing over every pattern.  Arithmetic runs in float32 and rounds once on
store, so fused results are checked against float32 math on the decoded
values, rounded once.  Stochastic rounding is checked statistically.
Every test runs on the CPU factory and, where a GPU is, on the GPU one.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpuarray
import gpuarray.numpy as gnp
from conftest import BF16, get_factory, same_error
from gpuarray.cuda import interop

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
FP8 = [E4M3, E5M2]
IDS = ["e4m3fn", "e5m2"]
PATTERNS = np.arange(256, dtype=np.uint8)


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _same_bits(got, want):
    """Bit-identical arrays (any NaN where a NaN, the sign kept)."""
    got, want = np.atleast_1d(got), np.atleast_1d(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(np.signbit(got.astype(np.float32)), np.signbit(want.astype(np.float32)))
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _values(dtype):
    """Every pattern of ``dtype``, as values of it."""
    return PATTERNS.view(dtype)


def _float32_grid():
    """float32s over every fp8 binade and below: each exponent from 2**-27 to
    2**17 with the top 5 mantissa bits in every combination (both formats'
    kept bits, their halfway bit and the next) and the rest zero, one,
    all ones or mixed; both signs; the boundaries and the specials."""
    exponents = np.arange(100, 145, dtype=np.uint32)
    top = np.arange(32, dtype=np.uint32) << 18
    low = np.array([0, 1, 0x1FFFF, 0x3FFFF, 0x2A5A5], np.uint32)
    grid = (exponents[:, None, None] << 23) | top[None, :, None] | low[None, None, :]
    grid = np.concatenate([grid.ravel(), grid.ravel() | np.uint32(0x80000000)]).view(np.float32)
    edges = np.array([0.0, 448, 464, 480, 57344, 61440, 65536, 3e38, np.inf, np.nan, 1e-45, 1e-40,
                      2.0 ** -9, 2.0 ** -10, 2.0 ** -16, 2.0 ** -17], np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)),
                            np.nextafter(edges, np.float32(0))])
    nans = np.array([0x7F800001, 0x7FA00000, 0x7FFFFFFF], np.uint32).view(np.float32)
    return np.concatenate([grid, edges, -edges, nans, -nans])


def _neighbours(values, dtype):
    """The dtype values just below and just above each float32 value."""
    grid = _values(dtype).astype(np.float32)
    grid = np.unique(grid[np.isfinite(grid)])
    place = np.searchsorted(grid, values, side="right")
    return grid[np.maximum(place - 1, 0)], grid[np.minimum(place, grid.size - 1)]


# -- dtypes and names ------------------------------------------------------------
def test_names_and_namespace():
    assert gpuarray.float8_e4m3fn == E4M3 and gpuarray.float8_e5m2 == E5M2
    assert gnp.float8_e4m3fn == E4M3 and gnp.float8_e5m2 == E5M2
    ng = get_factory("cpu")
    assert ng.float8_e4m3fn == E4M3
    assert "float8_e4m3fn" not in ng.__array_namespace_info__().dtypes()
    assert "float8_e5m2" not in ng.__array_namespace_info__().dtypes(kind="real floating")
    assert ng.isdtype(E4M3, "real floating") and ng.isdtype(E5M2, "real floating")
    assert ng.finfo(E4M3).max == 448.0 and ng.finfo(E5M2).max == 57344.0
    assert ng.finfo(ng.ones(2, E5M2)).smallest_normal == 2.0 ** -14


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_creation_and_host_round_trip(ng, dtype):
    host = _values(dtype).reshape(16, 16)
    t = ng.array(host)
    assert t.dtype == dtype and t.itemsize == 1 and t.nbytes == 256 and t.strides == (16, 1)
    got = t.get()
    assert got.dtype == dtype and got.tobytes() == host.tobytes()
    assert np.asarray(t).tobytes() == host.tobytes()
    assert ng.asarray(host[3]).get().tobytes() == host[3].tobytes()
    assert ng.empty((2, 3), dtype=dtype).dtype == dtype
    assert ng.zeros((2, 3), dtype).get().tobytes() == bytes(6)
    np.testing.assert_array_equal(ng.ones((4,), dtype).get().astype(np.float32), np.ones(4))
    _same_bits(ng.full((5,), -2.5, dtype).get(), np.full((5,), -2.5, dtype))
    _same_bits(ng.full((2,), np.nan, dtype).get(), np.full((2,), np.nan, dtype))
    # a double between two neighbours, within float's half-ulp of their midpoint: numpy's
    # np.full rounds it through float32, twice, as every store here does
    close = 1.0625 + 2.0 ** -40
    _same_bits(ng.full((3,), close, dtype).get(), np.full((3,), close, dtype))
    _same_bits(ng.zeros_like(t).get(), np.zeros_like(host))
    _same_bits(t.copy().get(), host)


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_repr_tolist_item(ng, dtype):
    host = np.array([1.5, -2.25, 0.1, 0.0, -0.0, np.nan], dtype)
    t = ng.array(host)
    name = type(t).__name__
    assert repr(t) == name + np.array_repr(host)[len("array"):]
    assert str(t) == str(host)
    assert t.tolist()[:5] == host.tolist()[:5] and np.isnan(t.tolist()[5])
    assert t[1].item() == float(host[1]) and float(t[0]) == 1.5
    assert repr(ng.array(host[:2].reshape(1, 2))).startswith(name + "([[")


# -- decoding and encoding, bit for bit ----------------------------------------------
@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_decode_every_pattern(ng, dtype):
    values = _values(dtype)
    t = ng.array(values)
    # float32: every bit, NaNs included (float's quiet NaN, the sign kept)
    f32 = ng.astype(t, np.float32).get()
    assert np.array_equal(f32.view(np.uint32), values.astype(np.float32).view(np.uint32))
    # float64: the values (a NaN's sign through the float-to-double conversion is the machine's)
    got, want = ng.astype(t, np.float64).get(), values.astype(np.float64)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_encode_float32_grid(ng, dtype):
    x = _float32_grid()
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(dtype)
    _same_bits(ng.astype(ng.array(x), dtype).get(), want)
    out = ng.empty(x.shape, dtype)
    out[:] = ng.array(x)  # a store: the same rounding
    _same_bits(out.get(), want)


def test_overflow_boundaries(ng):
    x = np.array([448, 463.99, 464, 464.01, 480, 1e6, np.inf, -np.inf, -464, -464.01], np.float32)
    got = ng.astype(ng.array(x), E4M3).get().astype(np.float32)
    np.testing.assert_array_equal(got[:3], [448, 448, 448])
    assert np.isnan(got[3:8]).all() and got[8] == -448 and np.isnan(got[9])
    y = np.array([57344, 61439.99, 61440, 1e6, -np.inf, np.nan], np.float32)
    got = ng.astype(ng.array(y), E5M2).get().astype(np.float32)
    np.testing.assert_array_equal(got[:5], [57344, 57344, np.inf, np.inf, -np.inf])
    assert np.isnan(got[5])


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_encode_float64_rounds_through_float32(ng, dtype):
    grid = _values(dtype).astype(np.float64)
    grid = np.unique(grid[np.isfinite(grid)])
    mids = (grid[1:] + grid[:-1]) / 2
    x = np.concatenate([mids, mids * (1 + 2.0 ** -40), mids * (1 - 2.0 ** -40),
                        mids * (1 + 2.0 ** -20), grid, [1e300, -1e300, 1e-300, np.nan]])
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(dtype)
    _same_bits(ng.astype(ng.array(x), dtype).get(), want)
    out = ng.empty(x.shape, dtype)
    out[:] = ng.array(x)
    _same_bits(out.get(), want)


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
@pytest.mark.parametrize("other", [np.float16, BF16, np.int8, np.uint8, np.bool_, np.int32,
                                   np.float64, np.complex64],
                         ids=["float16", "bfloat16", "int8", "uint8", "bool", "int32", "float64",
                              "complex64"])
def test_astype_both_ways(ng, dtype, other):
    other = np.dtype(other)
    rng = np.random.default_rng(3)
    if other.kind in "iub":
        source = rng.integers(-100 if other.kind == "i" else 0, 2 if other.kind == "b" else 100,
                              64).astype(other)
    else:
        source = (rng.standard_normal(64) * 8).astype(other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        _same_bits(ng.astype(ng.array(source), dtype).get(), source.astype(dtype))
        fp8 = (rng.standard_normal(64) * 8).astype(dtype)
        if other.kind in "iu":  # in range and whole: numpy's casts agree there
            whole = np.trunc(fp8.astype(np.float32))
            fp8 = (np.abs(whole) if other.kind == "u" else whole).astype(dtype)
        got = ng.astype(ng.array(fp8), other).get()
        want = fp8.astype(other)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


# -- arithmetic in float32, rounded once ---------------------------------------------
@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_fused_arithmetic(ng, dtype):
    rng = np.random.default_rng(4)
    ha = (rng.standard_normal(300) * 4).astype(dtype)
    hb = (rng.standard_normal(300) * 4).astype(dtype)
    a, b = ng.array(ha), ng.array(hb)
    fa, fb = ha.astype(np.float32), hb.astype(np.float32)
    c = ng.empty_like(a)
    c[:] = a * 2 + b
    _same_bits(c.get(), (fa * 2 + fb).astype(dtype))
    c[:] = (a - b) * (a + b) / 4
    _same_bits(c.get(), ((fa - fb) * (fa + fb) / 4).astype(dtype))
    c[:] = ng.maximum(a, b) - ng.absolute(b)
    _same_bits(c.get(), (np.maximum(fa, fb) - np.abs(fb)).astype(dtype))
    # a transcendental function: float32's result, rounded, within one fp8 step
    e = (ng.exp(a / 8)).get()
    assert e.dtype == dtype
    low, high = _neighbours(np.exp(fa / 8), dtype)
    got = e.astype(np.float32)
    assert np.all((got == low) | (got == high))
    # comparisons and where
    np.testing.assert_array_equal((a < b).get(), ha < hb)
    np.testing.assert_array_equal((a == ng.array(ha[::-1])).get(), ha == ha[::-1])
    _same_bits(ng.where(a > 0, a, b).get(), np.where(fa > 0, ha, hb))
    w = ng.where(a > 0, a, 0)
    assert w.dtype == dtype
    _same_bits(w.get(), np.where(fa > 0, fa, 0).astype(dtype))
    a += 1
    _same_bits(a.get(), (fa + 1).astype(dtype))


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_promotion_as_numpy(ng, dtype):
    h = np.ones(3, dtype)
    a = ng.array(h)
    assert (a + 1).dtype == dtype and (a * 2.5).dtype == dtype and (1.5 - a).dtype == dtype
    assert (a + 1j).dtype == np.complex64
    assert (a * dtype.type(2)).dtype == (h * dtype.type(2)).dtype == dtype  # ml_dtypes' scalars
    _same_bits(ng.full(2, dtype.type(1.5)).get(), np.full(2, dtype.type(1.5)))
    assert (a * np.float32(2)).dtype == (h * np.float32(2)).dtype == np.float32
    for other in (np.float16, BF16, np.int8, np.int32, np.float32, np.float64, E4M3, E5M2):
        o = np.ones(3, other)
        try:
            want = (h + o).dtype
        except TypeError:
            same_error(lambda: a + ng.array(o), lambda: h + o)
        else:
            assert (a + ng.array(o)).dtype == want
        for join in (lambda x, y: x.concatenate([y, x.ones(3, other)]),
                     lambda x, y: x.where(x.ones(3, bool), y, x.ones(3, other))):
            try:
                want = join(np, h).dtype
            except TypeError:
                same_error(lambda: join(ng, a), lambda: join(np, h))
            else:
                assert join(ng, a).dtype == want
    same_error(lambda: ng.result_type(E4M3, np.float16), lambda: np.result_type(E4M3, np.float16))
    same_error(lambda: ng.result_type(E4M3, E5M2), lambda: np.result_type(E4M3, E5M2))


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_reductions_accumulate_in_float32(ng, dtype):
    rng = np.random.default_rng(5)
    host = rng.integers(-6, 7, (8, 40)).astype(np.float32).astype(dtype)  # whole: exact sums
    exact = host.astype(np.float32)
    t = ng.array(host)
    for name in ("sum", "max", "min"):
        for axis in (None, 1):
            got = getattr(ng, name)(t, axis=axis)
            want = getattr(np, name)(exact, axis=axis).astype(dtype)
            assert got.dtype == getattr(np, name)(host, axis=axis).dtype == dtype
            _same_bits(np.asarray(got.get()), np.asarray(want))
    np.testing.assert_array_equal(ng.argmax(t, axis=1).get(), np.argmax(exact, axis=1))
    mean = ng.mean(t, axis=1).get()
    assert mean.dtype == np.mean(host, axis=1).dtype == dtype
    low, high = _neighbours(exact.mean(axis=1), dtype)
    assert np.all((mean.astype(np.float32) == low) | (mean.astype(np.float32) == high))
    assert ng.any(t).get() == np.any(host) and ng.all(t).get() == np.all(host)


# -- stochastic rounding ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_stochastic_rounding(factory_kind, dtype):
    f = get_factory(factory_kind, stochastic_round=True)
    info = ml_dtypes.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    x = np.array([0.3, -1.7, 100.0, 3e-3, tiny * 0.37, -tiny * 2.6, float(info.smallest_normal) * 0.77,
                  tiny * 0.01], np.float32)
    n = 20_000
    A = f.array(np.repeat(x[:, None], n, axis=1))
    H = f.empty(A.shape, dtype)
    assert H.rounding == ml_dtypes.finfo(dtype).nmant
    H[:] = A
    got = H.get().astype(np.float64)
    low, high = _neighbours(x, dtype)
    for row, v, lo, hi in zip(got, x, low, high):
        assert np.all((row == lo) | (row == hi)), (v, np.unique(row))
        # unbiased: the mean within 6 standard errors of the value
        assert abs(row.mean() - v) <= 6 * (hi - lo) * 0.5 / np.sqrt(n) + 1e-12, (v, row.mean())
    assert 0 < np.mean(got[0] == high[0]) < 1  # both neighbours drawn
    # a tensor of its own with fewer bits kept: still unbiased
    ng = get_factory(factory_kind)
    K = ng.empty((n,), dtype)
    K.rounding = 1
    K[:] = ng.full((n,), 0.3, np.float32)
    assert set(np.unique(K.get().astype(np.float32))) <= {0.25, 0.375}
    assert abs(K.get().astype(np.float64).mean() - 0.3) < 6 * 0.0625 / np.sqrt(n)
    with pytest.raises(ValueError, match="between 1 and"):
        K.rounding = ml_dtypes.finfo(dtype).nmant + 1


# -- indexing, views, interop ---------------------------------------------------------
@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_indexing(ng, dtype):
    host = (np.arange(24, dtype=np.float32) / 4).reshape(4, 6).astype(dtype)
    t = ng.array(host)
    _same_bits(t[1:3, ::2].get(), host[1:3, ::2])
    _same_bits(t[::-1, 2].get(), host[::-1, 2])
    _same_bits(t.T.get(), host.T)
    _same_bits(t[t > 3].get(), host[host.astype(np.float32) > 3])
    _same_bits(t[[0, 3]].get(), host[[0, 3]])
    host = host.copy()
    t[0] = 7
    host[0] = 7
    t[1:3, 1] = ng.array(np.array([-0.5, 1e9], np.float32))
    host[1:3, 1] = np.array([-0.5, 1e9], np.float32).astype(dtype)
    t[3, ::2] = np.float32(0.3)
    host[3, ::2] = np.float32(0.3)
    t[2, [0, 5]] = -1.25
    host[2, [0, 5]] = -1.25
    t[1, 3:] = host[3, :3]  # a host array of the dtype
    host[1, 3:] = host[3, :3]
    _same_bits(t.get(), host)


def test_user_kernels(gpu_ng):
    for dtype in FP8:
        host = np.array([1.5, -2, 0.25, 3, 40, -0.0], dtype)
        x = gpu_ng.array(host)
        twice = gpu_ng.ElementwiseKernel("T x", "T y", "y = x * 2 + 1", "fp8_twice_plus")
        _same_bits(twice(x).get(), (host.astype(np.float32) * 2 + 1).astype(dtype))
        reverse = gpu_ng.ElementwiseKernel("raw T x", "T y", "y = x[_ind.size() - i - 1]",
                                           "fp8_reverse")
        _same_bits(reverse(x, size=host.size).get(), host[::-1])


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_nextafter_spacing_every_pattern(ng, dtype):
    values = _values(dtype)
    a, b = np.repeat(values, 256), np.tile(values, 256)
    with np.errstate(all="ignore"):
        _same_bits(ng.nextafter(ng.array(a), ng.array(b)).get(), np.nextafter(a, b))
        want = np.spacing(values)
    got = ng.spacing(ng.array(values)).get()
    nan = np.isnan(want.astype(np.float32))  # inf - inf's NaN sign is the machine's
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


@pytest.mark.parametrize("dtype", FP8, ids=IDS)
def test_sort_unique_search(ng, dtype):
    host = np.array([3, 1, np.nan, -0.0, 0, -2, 448 if dtype == E4M3 else -np.inf, 1], dtype)
    t = ng.array(host)
    exact = host.astype(np.float32)
    got = ng.sort(t).get()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.astype(np.float32), np.sort(exact))
    np.testing.assert_array_equal(ng.argsort(t).get(), np.argsort(exact, kind="stable"))
    np.testing.assert_array_equal(ng.unique(t).get().astype(np.float32), np.unique(exact))
    ordered = ng.sort(t)[:6]
    np.testing.assert_array_equal(ng.searchsorted(ordered, ng.array(np.array([0.5, 3], dtype))).get(),
                                  np.searchsorted(np.sort(exact)[:6], [0.5, 3]))


def test_dlpack_and_cuda_array_interface(ng):
    host = _values(E4M3)
    t = ng.array(host)
    if isinstance(t, gpuarray.CPUTensor):
        back = ng.from_dlpack(t)
        assert back.dtype == E4M3 and back.get().tobytes() == host.tobytes()
    for dtype, code in ((E4M3, interop.kDLFloat8_e4m3fn), (E5M2, interop.kDLFloat8_e5m2)):
        dl = interop._dl_dtype_of(dtype)
        assert (dl.code, dl.bits, dl.lanes) == (code, 8, 1)
        assert interop._numpy_dtype_of(dl) == dtype
        with pytest.raises(TypeError, match="DLPack"):
            interop.cuda_array_interface(0, (1,), None, dtype)
