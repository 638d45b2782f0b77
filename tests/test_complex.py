"""complex64 and complex128, with numpy as the oracle, on both factories.

Arithmetic and promotion (Python complex scalars weakly typed, as NEP 50),
every elementwise function with a complex loop, comparisons in numpy's
order, reductions, ``real``/``imag`` views that writes go through,
casts, fused kernels and replayed complex constants, DLPack, and the
errors numpy gives where complex numbers have no meaning.
"""
import warnings

import numpy as np
import pytest

from gpuarray.core import ops
from gpuarray.userkernels import params

from conftest import get_factory

COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
IDS = ["c64", "c128"]


def _tolerance(dtype):
    """(rtol, atol) for complex results: transcendental functions of
    complex64 go through several float32 operations."""
    return (2e-5, 2e-6) if np.dtype(dtype) == np.complex64 else (1e-12, 1e-14)


def _data(dtype, shape=(7, 33), seed=0, away_from_axes=True):
    """Random complex values in the square |re|, |im| < 2, kept off the axes
    (where the inverse functions have their branch cuts)."""
    rng = np.random.default_rng(seed)
    parts = rng.uniform(-2, 2, (2,) + shape)
    if away_from_axes:
        parts = np.where(np.abs(parts) < 0.1, parts + np.sign(parts + 1e-9) * 0.1, parts)
    return (parts[0] + 1j * parts[1]).astype(dtype)


def _check(got, want, dtype):
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    rtol, atol = _tolerance(dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _complex_unary():
    return [name for name in ops.ELEMENTWISE if ops.OPS[name].arity == 1
            and _has_complex_loop(name)]


def _has_complex_loop(name):
    try:
        ops.resolve(name, (np.dtype(np.complex64),))
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_round_trip_and_creation(ng, dtype):
    host = _data(dtype)
    t = ng.array(host)
    assert t.dtype == dtype and np.array_equal(t.get(), host)
    assert np.array_equal(ng.zeros((3,), dtype).get(), np.zeros(3, dtype))
    full = ng.full((2, 3), 1.5 - 2j, dtype)
    assert np.array_equal(full.get(), np.full((2, 3), 1.5 - 2j, dtype))
    assert ng.full((2,), 1j).dtype == np.complex128  # inferred from the value, as numpy
    assert "j" in repr(t)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "power"])
def test_binary_arithmetic(ng, dtype, op):
    a, b = _data(dtype, seed=1), _data(dtype, seed=2)
    b[0, :4] = [0, 1j, -2, 3 + 0j]  # zero and axis divisors, integer exponents
    with np.errstate(all="ignore"):
        want = getattr(np, op)(a, b)
    got = ng.evaluate(getattr(ng, op)(ng.array(a), ng.array(b)))
    if op == "power":  # exp(b log a) for the general exponent
        want, got = want[:, 4:], got.get()[:, 4:]
    _check(got, want, dtype)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
@pytest.mark.parametrize("name", _complex_unary())
def test_unary_functions(ng, dtype, name):
    host = _data(dtype)
    with np.errstate(all="ignore"):
        want = ops.OPS[name].numpy(host)
    got = ng.evaluate(ng.elementwise(name, ng.array(host)))
    _check(got, np.asarray(want), dtype)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_integer_powers_and_special_values(ng, dtype):
    z = np.array([1 + 1j, -2 + 0.5j, 0, 0, 3j, np.inf + 0j, np.nan + 1j], dtype)
    e = np.array([3, -2, 2, -1, 0, 1, 2], dtype)
    with np.errstate(all="ignore"):
        want = np.power(z[:5], e[:5])
        got = ng.evaluate(ng.power(ng.array(z), ng.array(e))).get()
    np.testing.assert_allclose(got[:5], want, rtol=_tolerance(dtype)[0])
    assert np.isnan(got[3].real) and np.isnan(got[3].imag)  # 0 ** -1, as numpy
    special = np.array([0, -0.0 + 0j, np.inf, -np.inf, np.nan, 1e30 + 1e30j, -4, 1e-30j], dtype)
    with np.errstate(all="ignore"):
        for name in ("sqrt", "absolute", "exp", "isnan", "isinf", "isfinite", "sign"):
            want = getattr(np, name)(special)
            got = ng.evaluate(getattr(ng, name)(ng.array(special))).get()
            np.testing.assert_allclose(got, want, rtol=_tolerance(dtype)[0], err_msg=name)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_exp_and_expm1_special_values_follow_c99(gpu_ng, dtype):
    """The array API's (C99's) special values; numpy's expm1 gives NaN + NaN j
    for the non-finite ones, and so does the CPU factory, which runs numpy."""
    ng = gpu_ng
    inf, nan = np.inf, np.nan
    z = np.array([complex(-inf, inf), complex(inf, inf), complex(1, inf), complex(inf, 0),
                  complex(nan, 0), complex(-inf, nan), complex(2, 0)], dtype)
    want_exp = [0j, complex(inf, nan), complex(nan, nan), complex(inf, 0), complex(nan, 0), 0j,
                np.exp(2.0) + 0j]
    got = ng.evaluate(ng.exp(ng.array(z))).get()
    np.testing.assert_allclose(got, np.array(want_exp, dtype), rtol=1e-6)
    got = ng.evaluate(ng.expm1(ng.array(z))).get()
    want_expm1 = np.array(want_exp, np.complex128) - 1
    want_expm1[3:5] = [complex(inf, 0), complex(nan, 0)]
    want_expm1[6] = np.expm1(2.0)
    np.testing.assert_allclose(got, want_expm1.astype(dtype), rtol=1e-6)


#: every pair of these is a real and an imaginary part of C99 Annex G's tables
SPECIAL_PARTS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e30, -1e30, np.inf, -np.inf, np.nan]
#: the functions Annex G (and the array API) gives special values, numpy's
#: expm1 aside (see above)
ANNEX_G = ["arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh",
           "cos", "sin", "tan", "cosh", "sinh", "tanh", "exp"]


def _special_grid(dtype):
    parts = np.array(SPECIAL_PARTS)
    z = np.empty((parts.size, parts.size), dtype)
    z.real, z.imag = parts[:, None], parts[None, :]
    return z.ravel()


def _differs(got, want, dtype):
    """Where got is not numpy's want: each part NaN where numpy's is NaN (the
    NaN's sign aside), else the same number, signs of zeros and infinities
    included."""
    rtol = _tolerance(dtype)[0]
    bad = np.zeros(got.shape, bool)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= rtol * np.abs(w)
        exact = (g == w) & (np.signbit(g) == np.signbit(w))
        bad |= ~np.where(np.isnan(w), np.isnan(g), np.where(np.isinf(w) | (w == 0), exact, close))
    return bad


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
@pytest.mark.parametrize("name", ANNEX_G)
def test_special_values_follow_c99_annex_g(gpu_ng, dtype, name):
    """C99 Annex G's special values (the array API's special cases), whole
    tables with their symmetries, as numpy gives them, which also picks the
    signs Annex G leaves open; 1e30 parts try the finite formulas where cosh
    or a square overflows."""
    z = _special_grid(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(z)
    got = gpu_ng.evaluate(gpu_ng.elementwise(name, gpu_ng.array(z))).get()
    bad = _differs(got, want, dtype)
    assert not bad.any(), "\n".join(f"{name}({z[k]!r}) = {got[k]!r}, numpy: {want[k]!r}"
                                    for k in np.flatnonzero(bad))


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_weak_python_scalars_and_promotion(ng, dtype):
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    x = np.linspace(-1, 1, 12).astype(real)
    t = ng.array(x)
    for value in (2j, 1.5 - 0.5j, 3):
        _check(ng.evaluate(t * value + 1j), x * value + 1j, dtype)
    h = np.linspace(0, 1, 5).astype(np.float16)  # NEP 50: complex64, not complex128
    assert ng.evaluate(ng.array(h) * 1j).dtype == (np.float16(1) * np.ones(1, np.float16) * 1j).dtype
    z = _data(dtype, (12,))
    assert ng.evaluate(ng.array(z) + ng.array(x.astype(np.float64))).dtype == (z + x.astype(np.float64)).dtype
    assert ng.evaluate(ng.array(np.arange(3, dtype=np.int8)) * 1j).dtype == np.complex128


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_comparisons_follow_numpys_order(ng, dtype):
    a = np.array([1 + 2j, 1 + 3j, 2 - 5j, np.nan + 0j, 1j, 4 + 4j], dtype)
    b = np.array([1 + 3j, 1 + 3j, 1 + 9j, 0j, np.nan * 1j, 4 + 4j], dtype)
    ta, tb = ng.array(a), ng.array(b)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        with np.errstate(invalid="ignore"):
            want = getattr(np, name)(a, b)
        assert np.array_equal(ng.evaluate(getattr(ng, name)(ta, tb)).get(), want), name
    for name in ("maximum", "minimum"):
        got = ng.evaluate(getattr(ng, name)(ta, tb)).get()
        np.testing.assert_array_equal(got, getattr(np, name)(a, b), err_msg=name)
    np.testing.assert_array_equal(ng.evaluate(ng.where(ta, 1, 0)).get(), np.where(a, 1, 0))
    np.testing.assert_array_equal(ng.evaluate(ng.logical_not(ta)).get(), np.logical_not(a))


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(ng, dtype, axis):
    host = _data(dtype, (40, 300), away_from_axes=False)
    t = ng.array(host)
    for name in ("sum", "mean", "prod", "var", "std"):
        want = getattr(np, name)(host[:, :6] if name == "prod" else host, axis=axis)
        got = getattr(ng, name)(t[:, :6] if name == "prod" else t, axis=axis)
        rtol = 1e-4 if dtype == np.complex64 else 1e-11
        np.testing.assert_allclose(ng.evaluate(got).get() if hasattr(got, "get") else got,
                                   want, rtol=rtol, err_msg=name)
    for name in ("max", "min", "argmax", "argmin", "any", "all"):
        want = getattr(np, name)(host, axis=axis)
        got = ng.evaluate(getattr(ng, name)(t, axis=axis)).get()
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_long_sums_split_across_blocks(ng, dtype):
    host = _data(dtype, (3, 1 << 17), away_from_axes=False)
    for axis in (None, 1):
        got = ng.evaluate(ng.sum(ng.array(host), axis=axis)).get()
        want = host.astype(np.complex128).sum(axis=axis)
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.complex64 else 1e-11)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_nan_reductions(ng, dtype):
    host = _data(dtype, (4, 9))
    host[1, 2] = np.nan
    host[3, 0] = complex(1, np.nan)
    t = ng.array(host)
    for name in ("nansum", "nanmean", "nanprod"):
        got = ng.evaluate(getattr(ng, name)(t, axis=1)).get()
        np.testing.assert_allclose(got, getattr(np, name)(host, axis=1), rtol=1e-4, err_msg=name)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_real_and_imag_are_views(ng, dtype):
    host = _data(dtype, (5, 6))
    t = ng.array(host)
    assert np.array_equal(t.real.get(), host.real) and np.array_equal(t.imag.get(), host.imag)
    assert t.real.dtype == host.real.dtype
    t.imag[1:3] = 7  # writes go through, as numpy's views
    host.imag[1:3] = 7
    t.real = -1.5
    host.real = -1.5
    assert np.array_equal(t.get(), host)
    assert np.array_equal(ng.real(t[:, ::2]).get(), host[:, ::2].real)
    expr = t * 2j
    assert np.array_equal(ng.evaluate(ng.imag(expr)).get(), (host * 2j).imag)
    assert np.array_equal(ng.evaluate(expr.real).get(), (host * 2j).real)
    _check(ng.evaluate(t.conj()), np.conj(host), dtype)
    _check(ng.evaluate(ng.conjugate(t) * t), np.conjugate(host) * host, dtype)
    np.testing.assert_allclose(ng.evaluate(ng.angle(t, deg=True)).get(), np.angle(host, deg=True),
                               rtol=1e-5)
    assert np.array_equal(ng.evaluate(ng.isreal(t)).get(), np.isreal(host))
    assert np.array_equal(ng.evaluate(ng.iscomplex(t)).get(), np.iscomplex(host))
    assert ng.iscomplexobj(t) and not ng.isrealobj(t) and not ng.iscomplexobj(t.real)


def test_real_dtypes_have_real_and_imag_parts(ng):
    x = np.arange(4, dtype=np.float32)
    t = ng.array(x)
    assert t.real is t
    assert np.array_equal(t.imag.get(), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="imaginary part"):
        t.imag = 1
    assert np.array_equal(ng.evaluate(ng.angle(t - 2)).get(), np.angle(x - 2))
    assert ng.isdtype(ng.complex64, "complex floating") and ng.isdtype(ng.complex128, "numeric")
    assert ng.__array_namespace_info__().default_dtypes()["complex floating"] == np.complex128


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_casts(ng, dtype):
    host = _data(dtype, (10,))
    t = ng.array(host)
    for target in (np.float32, np.float16, np.int32, np.bool_):
        with pytest.warns(np.exceptions.ComplexWarning):
            got = ng.evaluate(t.astype(target)).get()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = host.astype(target)
        if target == np.bool_:
            want = host != 0  # numpy's astype(bool) of complex: nonzero
        np.testing.assert_array_equal(got, want)
    other = np.complex128 if dtype == np.complex64 else np.complex64
    _check(ng.evaluate(t.astype(other)), host.astype(other), other)
    x = np.linspace(-3, 3, 10).astype(np.float16)
    _check(ng.evaluate(ng.array(x).astype(dtype)), x.astype(dtype), dtype)
    target = ng.empty((10,), dtype)
    target[...] = ng.array(x)  # real into complex: imaginary part 0
    assert np.array_equal(target.get(), x.astype(dtype))


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_numpy_functions_on_complex(ng, dtype):
    host = _data(dtype, (5, 8), away_from_axes=False)
    host[0, :3] = [np.nan + 1j, complex(2, np.inf), complex(-np.inf, np.nan)]
    t = ng.array(host)
    np.testing.assert_array_equal(ng.evaluate(ng.around(t, 1)).get(), np.around(host, 1))
    np.testing.assert_array_equal(ng.evaluate(ng.nan_to_num(t)).get(), np.nan_to_num(host))
    finite = host[1:]
    for name in ("cumsum", "cumprod"):
        got = getattr(ng, name)(ng.array(finite[:, :5]), axis=1)
        _check(got, getattr(np, name)(finite[:, :5], axis=1), dtype)
    other = finite + (1e-7 if dtype == np.complex64 else 1e-15)
    assert np.array_equal(ng.evaluate(ng.isclose(ng.array(finite), ng.array(other))).get(),
                          np.isclose(finite, other))
    assert ng.allclose(ng.array(finite), ng.array(other))
    _check(ng.evaluate(abs(t[1:]) + 0j), np.abs(finite) + 0j, dtype)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_products_conjugate_where_numpy_does(ng, dtype):
    a, b = _data(dtype, (3, 4), seed=5), _data(dtype, (4, 5), seed=6)
    ta, tb = ng.array(a), ng.array(b)
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    cases = [(ng.matmul(ta, tb), a @ b), (ng.vdot(ta, ta), np.vdot(a, a)),
             (ng.vecdot(ta, ta), np.vecdot(a, a)), (ng.einsum("ij,jk->ik", ta, tb), a @ b),
             (ng.inner(ta, ta), np.inner(a, a)), (ng.outer(ta, tb), np.outer(a, b)),
             (ng.trace(ta), np.trace(a))]
    for got, want in cases:
        got = ng.evaluate(got) if not hasattr(got, "buffer") else got
        np.testing.assert_allclose(got.get(), want, rtol=rtol)
    np.testing.assert_allclose(ng.evaluate(ta @ tb).get(), a @ b, rtol=rtol)


def test_complex_into_real_is_refused_or_warned(ng):
    t = ng.zeros((3,), np.float32)
    with pytest.raises(TypeError):
        t[...] = 1j
    with pytest.warns(np.exceptions.ComplexWarning):
        t[...] = np.complex64(2 + 3j)
    assert np.array_equal(t.get(), np.full(3, 2, np.float32))


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_errors_where_complex_has_no_meaning(ng, dtype):
    z = ng.array(_data(dtype, (4,)))
    for build in (lambda: ng.floor(z), lambda: z % z, lambda: z // 2, lambda: ng.relu(z),
                  lambda: ng.arctan2(z, z), lambda: ng.signbit(z), lambda: ng.isposinf(z),
                  lambda: ng.erf(z), lambda: z & z):
        with pytest.raises(TypeError):
            build()


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_sort_is_refused_on_the_gpu(dtype):
    ng = get_factory("gpu")
    with pytest.raises(TypeError, match="cannot sort"):
        ng.sort(ng.array(_data(dtype, (8,))))


def test_complex_expression_is_one_kernel_and_replays(gpu_ng):
    ng = gpu_ng
    a, b = _data(np.complex64, (64, 48), seed=3), _data(np.complex64, (64, 48), seed=4)
    ta, tb = ng.array(a), ng.array(b)
    out = ng.empty((64, 48), np.complex64)
    before = ng.stats()
    out[:] = ng.exp(ta * 1j) / tb + ng.conj(ta) * ng.absolute(tb) - 2.5
    after = ng.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    _check(out, np.exp(a * 1j) / b + np.conj(a) * np.abs(b) - 2.5, np.complex64)
    # new complex constants replay the recorded kernel with new holes
    for s, c in ((2 - 3j, 0.5), (-1j, 4 + 4j), (3.0, 7)):
        out[:] = ng.exp(ta * s) / tb + ng.conj(ta) * ng.absolute(tb) - c
        _check(out, np.exp(a * s) / b + np.conj(a) * np.abs(b) - c, np.complex64)
    assert ng.stats()["kernels_compiled"] == after["kernels_compiled"]


def test_dlpack_with_torch(gpu_ng):
    torch = pytest.importorskip("torch")
    host = _data(np.complex64, (6, 5))
    t = gpu_ng.array(host)
    shared = torch.from_dlpack(t)
    assert shared.dtype == torch.complex64
    assert np.array_equal(shared.cpu().numpy(), host)
    back = gpu_ng.from_dlpack(torch.ones(3, dtype=torch.complex128, device="cuda") * 1j)
    assert back.dtype == np.complex128 and np.array_equal(back.get(), np.full(3, 1j))


def test_user_kernels_refuse_complex_parameters():
    with pytest.raises(TypeError, match="complex parameters"):
        params.parse("complex64 x", "in_params")
    declared = params.parse("T x, float32 s", "in_params")
    with pytest.raises(TypeError, match="complex parameters"):
        params.bind(declared, (np.dtype(np.complex64), float))
