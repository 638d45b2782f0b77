"""Elementwise ops: every op x every dtype against numpy, Python operators,
Python scalars (NEP 50), mixed dtypes, broadcasting, in-place operators,
exact integer math, ``out=``, astype, where/clip, NaN semantics and
stochastic rounding."""

import math
import operator
import zlib

import numpy as np
import pytest

from conftest import (ALL_DTYPES, BF16, NUMPY_DTYPES, assert_matches, dtype_id,
                      get_factory, is_float)

SHAPE = (5, 37)


def seed_of(*parts):
    """A stable per-case seed (str hashes are randomized per process)."""
    return zlib.crc32(repr(parts).encode())

# --------------------------------------------------------------------------
# input domains
# --------------------------------------------------------------------------


class Dom:
    """Input domain: floats uniform in [lo, hi) (or on a grid of ``step``),
    ints uniform in [ilo, ihi) (clamped to the dtype), bool random.
    ``nonzero``: values with magnitude in the range and a random sign
    (positive only for unsigned ints; bool all True)."""

    def __init__(self, lo, hi, ilo=-20, ihi=20, step=None, nonzero=False, special=False):
        self.lo, self.hi, self.ilo, self.ihi = lo, hi, ilo, ihi
        self.step, self.nonzero, self.special = step, nonzero, special

    def __call__(self, rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            if self.nonzero:
                return np.ones(shape, bool)
            return rng.random(shape) < 0.5
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo = max(self.ilo, int(info.min))
            hi = min(self.ihi, int(info.max) + 1)
            if self.nonzero:
                lo = max(lo, 1)
            v = rng.integers(lo, hi, size=shape).astype(dtype)
            if self.nonzero and dtype.kind == "i":
                sign = np.where(rng.random(shape) < 0.5, -1, 1).astype(dtype)
                v = v * sign
            return np.asarray(v, dtype=dtype)
        if self.step:
            k = rng.integers(int(round(self.lo / self.step)), int(round(self.hi / self.step)),
                             size=shape)
            v = k * self.step
        else:
            v = rng.uniform(self.lo, self.hi, size=shape)
        if self.nonzero:
            if self.step:
                v = np.where(v == 0, self.hi - self.step, v)
            v = v * np.where(rng.random(shape) < 0.5, -1, 1)
        if self.special:
            flat = v.reshape(-1)
            flat[::7] = np.nan
            flat[1::11] = np.inf
            flat[2::13] = -np.inf
        return np.asarray(v, dtype=np.float64).astype(dtype)


D_DEFAULT = Dom(-4, 4)
D_SMALLINT = Dom(-4, 4, -11, 12)  # products stay in int8
D_GRID = Dom(-4, 4, step=0.25)  # halves for rint, exact values for floor & co
D_TIES = Dom(-3, 3, -5, 5, step=0.5)  # many equal values
D_ZEROS = Dom(-2, 3, -2, 3, step=1.0)  # many zeros
D_POS = Dom(0.05, 9, 0, 100)
D_POS1 = Dom(0.05, 9, 1, 100)
D_LOG = Dom(0.05, 10, 1, 100)
D_EXP = Dom(-5, 5, -5, 6)
D_TRIG = Dom(-6, 6, -20, 20)
D_UNIT = Dom(-1, 1, -1, 2)
D_SPECIAL = Dom(-4, 4, special=True)
D_NZ = Dom(0.25, 4, 1, 20, nonzero=True)
D_DIVIDEND = Dom(-8, 8, -20, 20, step=0.25)
D_DIVISOR = Dom(0.5, 4.5, 1, 8, step=0.5, nonzero=True)

# --------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _sqrt_rule(*dts):
    """The dtype np.sqrt gives (float inputs keep theirs, ints -> float)."""
    return np.sqrt(np.zeros(1, dts[0])).dtype


def _same_dtype(*dts):
    return np.dtype(dts[0])


class Ref:
    """numpy oracle for one op.

    ``fn(*args)``: numpy function (a ufunc or float64 formula); ``rule``:
    dtype rule for ops numpy lacks (default: numpy's own result dtype).
    """

    def __init__(self, fn, rule=None, transcendental=False):
        self.fn, self.rule, self.transcendental = fn, rule, transcendental


UNARY = {
    "negative": (Ref(np.negative), D_DEFAULT),
    "absolute": (Ref(np.absolute), Dom(-4, 4, -100, 100)),
    "reciprocal": (Ref(np.reciprocal), D_NZ),
    "square": (Ref(np.square), D_SMALLINT),
    "sqrt": (Ref(np.sqrt, transcendental=True), D_POS),
    "rsqrt": (Ref(lambda x: 1.0 / np.sqrt(x), _sqrt_rule, True), D_POS1),
    "cbrt": (Ref(np.cbrt, transcendental=True), Dom(-9, 9, -100, 100)),
    "exp": (Ref(np.exp, transcendental=True), D_EXP),
    "exp2": (Ref(np.exp2, transcendental=True), D_EXP),
    "expm1": (Ref(np.expm1, transcendental=True), Dom(-3, 3, -5, 6)),
    "log": (Ref(np.log, transcendental=True), D_LOG),
    "log2": (Ref(np.log2, transcendental=True), D_LOG),
    "log10": (Ref(np.log10, transcendental=True), D_LOG),
    "log1p": (Ref(np.log1p, transcendental=True), Dom(-0.9, 5, 0, 100)),
    "sin": (Ref(np.sin, transcendental=True), D_TRIG),
    "cos": (Ref(np.cos, transcendental=True), D_TRIG),
    "tan": (Ref(np.tan, transcendental=True), Dom(-1.4, 1.4, -20, 20)),
    "arcsin": (Ref(np.arcsin, transcendental=True), D_UNIT),
    "arccos": (Ref(np.arccos, transcendental=True), D_UNIT),
    "arctan": (Ref(np.arctan, transcendental=True), Dom(-5, 5, -20, 20)),
    "sinh": (Ref(np.sinh, transcendental=True), Dom(-4, 4, -5, 6)),
    "cosh": (Ref(np.cosh, transcendental=True), Dom(-4, 4, -5, 6)),
    "tanh": (Ref(np.tanh, transcendental=True), Dom(-4, 4, -20, 20)),
    "arcsinh": (Ref(np.arcsinh, transcendental=True), Dom(-10, 10, -20, 20)),
    "arccosh": (Ref(np.arccosh, transcendental=True), Dom(1, 10, 1, 100)),
    "arctanh": (Ref(np.arctanh, transcendental=True), Dom(-0.99, 0.99, -1, 2)),
    "erf": (Ref(_erf, _sqrt_rule, True), Dom(-3, 3, -3, 4)),
    "erfc": (Ref(_erfc, _sqrt_rule, True), Dom(-3, 3, -3, 4)),
    "sign": (Ref(np.sign), D_ZEROS),
    "floor": (Ref(np.floor), D_GRID),
    "ceil": (Ref(np.ceil), D_GRID),
    "trunc": (Ref(np.trunc), D_GRID),
    "rint": (Ref(np.rint), D_GRID),
    "isnan": (Ref(np.isnan), D_SPECIAL),
    "isinf": (Ref(np.isinf), D_SPECIAL),
    "isfinite": (Ref(np.isfinite), D_SPECIAL),
    "logical_not": (Ref(np.logical_not), D_ZEROS),
    "invert": (Ref(np.invert), Dom(-4, 4, -100, 100)),
    "relu": (Ref(lambda x: np.maximum(x, np.zeros_like(x)), _same_dtype), D_GRID),
    "sigmoid": (Ref(lambda x: 1.0 / (1.0 + np.exp(-x)), _sqrt_rule, True), Dom(-8, 8, -20, 20)),
}

BINARY = {
    "add": (Ref(np.add), (D_DEFAULT, D_DEFAULT)),
    "subtract": (Ref(np.subtract), (D_DEFAULT, D_DEFAULT)),
    "multiply": (Ref(np.multiply), (D_SMALLINT, D_SMALLINT)),
    "divide": (Ref(np.divide), (D_DEFAULT, D_NZ)),
    "floor_divide": (Ref(np.floor_divide), (D_DIVIDEND, D_DIVISOR)),
    "mod": (Ref(np.mod), (D_DIVIDEND, D_DIVISOR)),
    "power": (Ref(np.power, transcendental=True), (Dom(0.5, 2, -4, 5), Dom(-2, 2, 0, 4))),
    "maximum": (Ref(np.maximum), (D_TIES, D_TIES)),
    "minimum": (Ref(np.minimum), (D_TIES, D_TIES)),
    "equal": (Ref(np.equal), (D_TIES, D_TIES)),
    "not_equal": (Ref(np.not_equal), (D_TIES, D_TIES)),
    "less": (Ref(np.less), (D_TIES, D_TIES)),
    "less_equal": (Ref(np.less_equal), (D_TIES, D_TIES)),
    "greater": (Ref(np.greater), (D_TIES, D_TIES)),
    "greater_equal": (Ref(np.greater_equal), (D_TIES, D_TIES)),
    "arctan2": (Ref(np.arctan2, transcendental=True), (Dom(-3, 3, -5, 6), Dom(-3, 3, -5, 6))),
    "copysign": (Ref(np.copysign), (Dom(-3, 3, -5, 6), D_ZEROS)),
    "hypot": (Ref(np.hypot, transcendental=True), (Dom(-3, 3), Dom(-3, 3))),
    "logical_and": (Ref(np.logical_and), (D_ZEROS, D_ZEROS)),
    "logical_or": (Ref(np.logical_or), (D_ZEROS, D_ZEROS)),
    "bitwise_and": (Ref(np.bitwise_and), (Dom(-4, 4, -100, 100), Dom(-4, 4, -100, 100))),
    "bitwise_or": (Ref(np.bitwise_or), (Dom(-4, 4, -100, 100), Dom(-4, 4, -100, 100))),
    "bitwise_xor": (Ref(np.bitwise_xor), (Dom(-4, 4, -100, 100), Dom(-4, 4, -100, 100))),
    "left_shift": (Ref(np.left_shift), (Dom(-4, 4, -8, 8), Dom(0, 3, 0, 4))),
    "right_shift": (Ref(np.right_shift), (Dom(-4, 4, -100, 100), Dom(0, 3, 0, 8))),
}


def _proxy(x):
    """numpy stand-in for dtype rules: bfloat16 behaves like float16."""
    if isinstance(x, np.ndarray) and x.dtype == BF16:
        return x.astype(np.float16)
    return x


def _exact(x):
    """Inputs for the integer/bool path (bfloat16 -> float32, exactly)."""
    if isinstance(x, np.ndarray) and x.dtype == BF16:
        return x.astype(np.float32)
    return x


def _f64(x):
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    return x


def oracle(ref, args):
    """(expected values, expected dtype), or None where numpy raises TypeError.

    Float results: the op on float64 inputs, rounded to the result dtype.
    Integer/bool results: numpy on the native dtypes (exact, wraps as C).
    """
    has_bf16 = any(isinstance(a, np.ndarray) and a.dtype == BF16 for a in args)
    with np.errstate(all="ignore"):
        if ref.rule is not None:
            dts = [(_proxy(a).dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype)
                   for a in args]
            dtype = np.dtype(ref.rule(*dts))
        else:
            try:
                dtype = np.asarray(ref.fn(*[_proxy(a) for a in args])).dtype
            except TypeError:
                return None
        if has_bf16 and dtype == np.float16:
            dtype = BF16
        if is_float(dtype):
            vals = np.asarray(ref.fn(*[_f64(a) for a in args]), dtype=np.float64).astype(dtype)
        else:
            vals = np.asarray(ref.fn(*[_exact(a) for a in args])).astype(dtype)
    return vals, dtype


def _check(ng, expr_builder, ref, host_args, tensor_args, transcendental=None):
    exp = oracle(ref, host_args)
    if exp is None:
        with pytest.raises(TypeError):
            expr_builder(*tensor_args)
        return
    vals, dtype = exp
    expr = expr_builder(*tensor_args)
    assert expr.dtype == dtype, f"result dtype {expr.dtype}, numpy gives {dtype}"
    assert tuple(expr.shape) == vals.shape
    out = ng.empty(vals.shape, dtype=expr.dtype)
    out[:] = expr
    tr = ref.transcendental if transcendental is None else transcendental
    assert_matches(out.get(), vals, dtype, scale=1.0, transcendental=tr)


# --------------------------------------------------------------------------
# every function x every dtype
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function(ng, name, dtype):
    ref, dom = UNARY[name]
    rng = np.random.default_rng(seed_of(name, str(dtype)))
    a = dom(rng, SHAPE, dtype)
    _check(ng, getattr(ng, name), ref, [a], [ng.array(a)])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_function(ng, name, dtype):
    ref, (da, db) = BINARY[name]
    rng = np.random.default_rng(seed_of(name, str(dtype)))
    a = da(rng, SHAPE, dtype)
    b = db(rng, SHAPE, dtype)
    _check(ng, getattr(ng, name), ref, [a, b], [ng.array(a), ng.array(b)])


# --------------------------------------------------------------------------
# Python operators
# --------------------------------------------------------------------------

BINARY_OPERATORS = {
    "+": (operator.add, "add"), "-": (operator.sub, "subtract"),
    "*": (operator.mul, "multiply"), "/": (operator.truediv, "divide"),
    "//": (operator.floordiv, "floor_divide"), "%": (operator.mod, "mod"),
    "**": (operator.pow, "power"), "==": (operator.eq, "equal"),
    "!=": (operator.ne, "not_equal"), "<": (operator.lt, "less"),
    "<=": (operator.le, "less_equal"), ">": (operator.gt, "greater"),
    ">=": (operator.ge, "greater_equal"), "&": (operator.and_, "bitwise_and"),
    "|": (operator.or_, "bitwise_or"), "^": (operator.xor, "bitwise_xor"),
    "<<": (operator.lshift, "left_shift"), ">>": (operator.rshift, "right_shift"),
}
UNARY_OPERATORS = {
    "neg": (operator.neg, "negative"), "abs": (abs, "absolute"), "invert": (operator.invert, "invert"),
    "pos": (operator.pos, None),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("sym", list(BINARY_OPERATORS))
def test_binary_operator(ng, sym, dtype):
    op, name = BINARY_OPERATORS[sym]
    ref, (da, db) = BINARY[name]
    ref = Ref(op, ref.rule, ref.transcendental)
    rng = np.random.default_rng(seed_of(sym, str(dtype)))
    a = da(rng, SHAPE, dtype)
    b = db(rng, SHAPE, dtype)
    _check(ng, op, ref, [a, b], [ng.array(a), ng.array(b)])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("sym", ["neg", "abs", "invert"])
def test_unary_operator(ng, sym, dtype):
    op, name = UNARY_OPERATORS[sym]
    ref, dom = UNARY[name]
    ref = Ref(op, ref.rule, ref.transcendental)
    rng = np.random.default_rng(seed_of(sym, str(dtype)))
    a = dom(rng, SHAPE, dtype)
    _check(ng, op, ref, [a], [ng.array(a)])


# --------------------------------------------------------------------------
# Python scalars on either side (NEP 50: Python scalars are weak)
# --------------------------------------------------------------------------

_X_NZ = Dom(0.5, 4.5, 1, 8, step=0.5, nonzero=True)  # divisors
_X_BASE = Dom(0.5, 2, 0, 4)                          # bases for x ** s
_X_EXP = Dom(-2, 2, 0, 4)                            # exponents for s ** x
_X_DEF = Dom(-4, 4, -10, 10, step=0.25)

SCALAR_FORMS = {
    "x+s": (lambda L, x, s: x + s, _X_DEF),
    "s+x": (lambda L, x, s: s + x, _X_DEF),
    "x-s": (lambda L, x, s: x - s, _X_DEF),
    "s-x": (lambda L, x, s: s - x, _X_DEF),
    "x*s": (lambda L, x, s: x * s, _X_DEF),
    "s*x": (lambda L, x, s: s * x, _X_DEF),
    "x/s": (lambda L, x, s: x / s, _X_DEF),
    "s/x": (lambda L, x, s: s / x, _X_NZ),
    "x//s": (lambda L, x, s: x // s, _X_DEF),
    "s//x": (lambda L, x, s: s // x, _X_NZ),
    "x%s": (lambda L, x, s: x % s, _X_DEF),
    "s%x": (lambda L, x, s: s % x, _X_NZ),
    "x**s": (lambda L, x, s: x ** s, _X_BASE),
    "s**x": (lambda L, x, s: s ** x, _X_EXP),
    "x<s": (lambda L, x, s: x < s, _X_DEF),
    "s<x": (lambda L, x, s: s < x, _X_DEF),
    "x==s": (lambda L, x, s: x == s, D_TIES),
    "maximum(x,s)": (lambda L, x, s: L.maximum(x, s), _X_DEF),
    "where(x>s,x,s)": (lambda L, x, s: L.where(x > s, x, s), _X_DEF),
}
SCALARS = [3, -1.5, True]
_BOOL_SCALAR_FORMS = ("x+s", "s*x", "s-x", "x//s", "x==s", "maximum(x,s)")
SCALAR_CASES = [(f, s) for f in SCALAR_FORMS for s in SCALARS
                if s is not True or f in _BOOL_SCALAR_FORMS]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("form,scalar", SCALAR_CASES,
                         ids=[f"{f}-{s!r}" for f, s in SCALAR_CASES])
def test_python_scalars(ng, form, dtype, scalar):
    fn, dom = SCALAR_FORMS[form]
    rng = np.random.default_rng(seed_of(form, str(dtype), str(scalar)))
    x = dom(rng, SHAPE, dtype)
    ref = Ref(lambda a: fn(np, a, scalar), transcendental=("**" in form))
    _check(ng, lambda t: fn(ng, t, scalar), ref, [x], [ng.array(x)])


# --------------------------------------------------------------------------
# mixed dtypes
# --------------------------------------------------------------------------

_MIX_SUBSET = [np.dtype(t) for t in (np.float16, np.float32, np.int8, np.uint8, np.int64,
                                     np.uint64, np.bool_)]
MIXED_CASES = ([("add", a, b) for a in NUMPY_DTYPES for b in NUMPY_DTYPES]
               + [(op, a, b) for op in ("multiply", "divide", "less", "maximum", "floor_divide")
                  for a in _MIX_SUBSET for b in _MIX_SUBSET])


@pytest.mark.parametrize("name,da,db", MIXED_CASES,
                         ids=[f"{o}-{dtype_id(a)}-{dtype_id(b)}" for o, a, b in MIXED_CASES])
def test_mixed_dtypes(ng, name, da, db):
    ref, (doma, domb) = BINARY[name]
    rng = np.random.default_rng(seed_of(name, str(da), str(db)))
    a = doma(rng, SHAPE, da)
    b = domb(rng, SHAPE, db)
    _check(ng, getattr(ng, name), ref, [a, b], [ng.array(a), ng.array(b)])


@pytest.mark.parametrize("name", list(BINARY))
def test_result_dtype_all_pairs(ng, name):
    """Result dtype (or TypeError) of every dtype pair equals numpy's; no
    evaluation, only the op-tree's dtype."""
    ref, _ = BINARY[name]
    tensors = {dt: ng.zeros((2,), dtype=dt) for dt in NUMPY_DTYPES}
    hosts = {dt: np.zeros((2,), dtype=dt) for dt in NUMPY_DTYPES}
    bad = []
    for da in NUMPY_DTYPES:
        for db in NUMPY_DTYPES:
            try:
                with np.errstate(all="ignore"):
                    want = ref.fn(hosts[da], hosts[db]).dtype
            except TypeError:
                want = TypeError
            try:
                got = getattr(ng, name)(tensors[da], tensors[db]).dtype
            except TypeError:
                got = TypeError
            if got != want:
                bad.append(f"{da}, {db}: got {got}, numpy {want}")
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
# broadcasting
# --------------------------------------------------------------------------

BROADCAST_SHAPES = [
    ((3, 1, 5), (4, 1)),
    ((2, 3, 4, 5), (5,)),
    ((1,), (3, 4)),
    ((2, 1, 4, 1), (3, 1, 5)),
    ((), (3, 4)),
    ((5, 1), (1, 6)),
    ((4, 1, 1, 3), (1, 2, 5, 1)),
    ((1, 1), (7,)),
]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.float16)],
                         ids=dtype_id)
@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES, ids=[f"{a}-{b}" for a, b in BROADCAST_SHAPES])
def test_broadcasting(ng, sa, sb, dtype):
    rng = np.random.default_rng(11)
    a = D_TIES(rng, sa, dtype)
    b = D_TIES(rng, sb, dtype)
    A, B = ng.array(a), ng.array(b)
    for fn in (lambda L, x, y: x + y, lambda L, x, y: y * x - x,
               lambda L, x, y: L.maximum(x, y), lambda L, x, y: x < y,
               lambda L, x, y: L.where(x > y, x, y * 2)):
        ref = Ref(lambda x, y: fn(np, x, y))
        _check(ng, lambda x, y: fn(ng, x, y), ref, [a, b], [A, B])


def test_broadcast_three_operands(ng):
    rng = np.random.default_rng(12)
    c = rng.random((1, 4)) < 0.5
    a = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal((2, 3, 4)).astype(np.float32)
    expr = ng.where(ng.array(c), ng.array(a), ng.array(b))
    assert expr.shape == (2, 3, 4)
    assert_matches(expr.get(), np.where(c, a, b), np.float32)
    expr = ng.clip(ng.array(b), ng.array(a), ng.array(a) + 1)
    assert_matches(expr.get(), np.clip(b, a, a + 1), np.float32)


# --------------------------------------------------------------------------
# in-place operators
# --------------------------------------------------------------------------

INPLACE = {
    "+=": (operator.iadd, "add"), "-=": (operator.isub, "subtract"),
    "*=": (operator.imul, "multiply"), "/=": (operator.itruediv, "divide"),
    "//=": (operator.ifloordiv, "floor_divide"), "%=": (operator.imod, "mod"),
    "**=": (operator.ipow, "power"), "&=": (operator.iand, "bitwise_and"),
    "|=": (operator.ior, "bitwise_or"), "^=": (operator.ixor, "bitwise_xor"),
    "<<=": (operator.ilshift, "left_shift"), ">>=": (operator.irshift, "right_shift"),
}


@pytest.mark.parametrize("rhs_kind", ["tensor", "scalar"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("sym", list(INPLACE))
def test_inplace_operator(ng, sym, dtype, rhs_kind):
    iop, name = INPLACE[sym]
    ref, (da, db) = BINARY[name]
    rng = np.random.default_rng(seed_of(sym, str(dtype), rhs_kind))
    a = da(rng, (4, 9), dtype)
    b = db(rng, (4, 9), dtype) if rhs_kind == "tensor" else 2
    # numpy's verdict (same_kind casting of the result into a's dtype)
    pa = _proxy(a).copy()
    pb = _proxy(b)
    try:
        with np.errstate(all="ignore"):
            iop(pa, pb)
        ok = True
    except TypeError:
        ok = False
    A = ng.array(a)
    rhs = ng.array(b) if rhs_kind == "tensor" else b
    view = A[1:, ::2]
    if not ok:
        with pytest.raises(TypeError):
            iop(A, rhs)
        return
    res = iop(A, rhs)
    assert res is A, "in-place operator must return the same tensor"
    assert A.dtype == dtype and A.shape == a.shape
    vals, rdt = oracle(Ref(ref.fn), [a, b])
    expected = vals.astype(np.float64).astype(dtype) if is_float(rdt) else vals.astype(dtype)
    # it ran at once: values are there, also through a view taken before
    assert_matches(A.get(), expected, dtype, scale=1.0, transcendental=ref.transcendental)
    assert_matches(view.get(), expected[1:, ::2], dtype, scale=1.0,
                   transcendental=ref.transcendental)


def test_inplace_on_view_and_broadcast(ng):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    A = ng.array(a)
    V = A[1:3, ::-2]
    V += ng.array(np.array([1, 2, 3], np.float32))
    a[1:3, ::-2] += np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(A.get(), a)
    A *= A[:, :1]  # aliasing, broadcast from a column of itself
    a *= a[:, :1].copy()
    np.testing.assert_array_equal(A.get(), a)
    A -= ng.sum(A, axis=1, keepdims=True)  # a reduction of itself
    a -= a.sum(axis=1, keepdims=True)
    assert_matches(A.get(), a, np.float32)


# --------------------------------------------------------------------------
# exact integer math
# --------------------------------------------------------------------------


def test_int64_beyond_2_53(ng):
    base = 2**60
    a = np.array([base + 1, base + 3, -base - 7, 2**62 + 12345, 2**53 + 1], dtype=np.int64)
    b = np.array([5, -(2**55) - 1, 3, -(2**61), 2**53 + 3], dtype=np.int64)
    A, B = ng.array(a), ng.array(b)
    cases = [
        (A + B, a + b), (A - B, a - b), (A + 1, a + 1), (1 + A, 1 + a), (A - 1, a - 1),
        (A * 1, a), (ng.array(a // 4) * 3, (a // 4) * 3), (A // 7, a // 7), (A % 1000, a % 1000),
        (A == A + 0, np.ones(5, bool)), (A + 1 > A, np.ones(5, bool)),
        (A // 2 * 2 + A % 2, a), (-A, -a), (abs(A), abs(a)),
        (ng.maximum(A, B), np.maximum(a, b)), (A ^ B, a ^ b), (A >> 3, a >> 3),
        (ng.where(A > B, A, B), np.where(a > b, a, b)),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.get(), want)
    u = np.array([2**63 + 1, 2**64 - 1, 2**53 + 1, 12345], dtype=np.uint64)
    U = ng.array(u)
    np.testing.assert_array_equal((U - 1).get(), u - np.uint64(1))
    np.testing.assert_array_equal((U // 3).get(), u // np.uint64(3))
    np.testing.assert_array_equal((U % 10).get(), u % np.uint64(10))
    np.testing.assert_array_equal((U >> 1).get(), u >> np.uint64(1))
    np.testing.assert_array_equal((U == U).get(), np.ones(4, bool))
    v = np.array([2**52 + 1, 2**40 + 3, 7, 2**61 + 1], dtype=np.uint64)
    V = ng.array(v)
    np.testing.assert_array_equal((V * 2).get(), v * np.uint64(2))
    np.testing.assert_array_equal((V + V).get(), v + v)
    # int64 sums / products in an assignment
    C = ng.empty(5, dtype=np.int64)
    C[:] = A * 1 + B - B
    np.testing.assert_array_equal(C.get(), a)


def test_integer_wraparound_like_numpy(ng):
    a = np.array([120, 127, -128, 100], dtype=np.int8)
    A = ng.array(a)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((A + 10).get(), a + 10)
        np.testing.assert_array_equal((A * 2).get(), a * 2)
    u = np.array([0, 1, 250], dtype=np.uint8)
    U = ng.array(u)
    np.testing.assert_array_equal((U - 5).get(), u - 5)
    np.testing.assert_array_equal((-U).get(), -u)


# --------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------


def test_out_argument(ng):
    rng = np.random.default_rng(13)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    C = ng.empty((4, 5), dtype=np.float32)
    ng.add(A, B, out=C)
    assert_matches(C.get(), a + b, np.float32)
    ng.sqrt(abs(A), out=C)
    assert_matches(C.get(), np.sqrt(abs(a)), np.float32, transcendental=True)
    ng.maximum(A, 0.5, out=C)
    assert_matches(C.get(), np.maximum(a, np.float32(0.5)), np.float32)
    ng.where(A > B, A, B, out=C)
    assert_matches(C.get(), np.where(a > b, a, b), np.float32)
    ng.clip(A, -0.5, 0.5, out=C)
    assert_matches(C.get(), np.clip(a, -0.5, 0.5), np.float32)
    ng.negative(A + B, out=C)
    assert_matches(C.get(), -(a + b), np.float32)
    ng.sigmoid(A, out=C)
    assert_matches(C.get(), 1 / (1 + np.exp(-a.astype(np.float64))), np.float32,
                   transcendental=True)
    ng.relu(A, out=C)
    assert_matches(C.get(), np.maximum(a, 0), np.float32)
    Ci = ng.empty((4, 5), dtype=np.int32)
    ng.astype(A * 10, np.int32, out=Ci)
    np.testing.assert_array_equal(Ci.get(), (a * 10).astype(np.int32))
    Cb = ng.empty((4, 5), dtype=np.bool_)
    ng.less(A, B, out=Cb)
    np.testing.assert_array_equal(Cb.get(), a < b)
    # a wider output dtype (numpy allows same-kind casts into out)
    C64 = ng.empty((4, 5), dtype=np.float64)
    ng.multiply(A, B, out=C64)
    assert_matches(C64.get(), (a * b).astype(np.float64), np.float64, rtol=1e-6)
    # out is a strided / reversed view
    big = ng.zeros((8, 5), dtype=np.float32)
    ng.multiply(A, 2, out=big[::-2])
    ref = np.zeros((8, 5), np.float32)
    ref[::-2] = a * 2
    assert_matches(big.get(), ref, np.float32)
    # out aliases an input (numpy buffers the overlap)
    A2 = ng.array(a)
    ng.add(A2, A2[::-1], out=A2)
    assert_matches(A2.get(), a + a[::-1], np.float32)
    # broadcast inputs into out
    ng.add(A[:1], B[:, :1], out=C)
    assert_matches(C.get(), a[:1] + b[:, :1], np.float32)


# --------------------------------------------------------------------------
# astype
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=dtype_id)
def test_astype(ng, src, dst):
    rng = np.random.default_rng(14)
    if src == np.bool_:
        host = rng.random(SHAPE) < 0.5
    elif is_float(src):
        host = (rng.integers(0, 400, size=SHAPE) / 4).astype(src)
    else:
        host = rng.integers(0, 100, size=SHAPE).astype(src)
    A = ng.array(host)
    e1 = A.astype(dst)
    e2 = ng.astype(A, dst)
    want = host.astype(dst)
    for e in (e1, e2):
        assert e.dtype == dst and e.shape == SHAPE
        assert_matches(e.get(), want, dst)
    out = ng.empty(SHAPE, dtype=dst)
    out[:] = A[::-1].astype(dst)
    assert_matches(out.get(), host[::-1].astype(dst), dst)


def test_astype_of_expression(ng):
    a = np.linspace(-3, 3, 25).astype(np.float32)
    A = ng.array(a)
    e = (A * 2.5).astype(np.int16)
    assert e.dtype == np.int16
    np.testing.assert_array_equal(e.get(), (a * np.float32(2.5)).astype(np.int16))
    e = (A > 0).astype(np.float16) + 1
    assert e.dtype == np.float16
    np.testing.assert_array_equal(e.get(), (a > 0).astype(np.float16) + 1)
    e = A.astype(np.float64) / 3
    assert e.dtype == np.float64
    assert_matches(e.get(), a.astype(np.float64) / 3, np.float64)


# --------------------------------------------------------------------------
# where / clip
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16,
                                   np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int64),
                                   np.dtype(np.float64)], ids=dtype_id)
def test_where_and_clip(ng, dtype):
    rng = np.random.default_rng(15)
    a = D_TIES(rng, SHAPE, dtype)
    b = D_TIES(rng, SHAPE, dtype)
    c = rng.random(SHAPE) < 0.3
    A, B, Cc = ng.array(a), ng.array(b), ng.array(c)
    cases = [
        (lambda L, x, y, m: L.where(m, x, y)),
        (lambda L, x, y, m: L.where(x > y, x, y)),
        (lambda L, x, y, m: L.where(m, x, 1)),
        (lambda L, x, y, m: L.where(x < 0, 0, y)),
        (lambda L, x, y, m: L.clip(x, 0, 2)),
        (lambda L, x, y, m: L.clip(x, y, 2)),
        (lambda L, x, y, m: L.clip(x, L.minimum(y, 0), L.maximum(y, 0))),
    ]
    for fn in cases:
        ref = Ref(lambda x, y, m: fn(np, x, y, m))
        _check(ng, lambda x, y, m: fn(ng, x, y, m), ref, [a, b, c], [A, B, Cc])


# --------------------------------------------------------------------------
# NaN semantics (numpy propagates NaN through maximum/minimum)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64),
                                   BF16], ids=dtype_id)
def test_nan_semantics(ng, dtype):
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0, np.inf, 0.0]).astype(dtype)
    b = np.array([1.0, np.nan, np.nan, 1.0, np.inf, np.inf, -0.0]).astype(dtype)
    A, B = ng.array(a), ng.array(b)
    fns = [
        lambda L, x, y: L.maximum(x, y), lambda L, x, y: L.minimum(x, y),
        lambda L, x, y: x + y, lambda L, x, y: x * 0, lambda L, x, y: x - y,
        lambda L, x, y: x < y, lambda L, x, y: x == y, lambda L, x, y: x != y,
        lambda L, x, y: x >= y, lambda L, x, y: L.clip(x, -1, 1),
        lambda L, x, y: L.sign(x), lambda L, x, y: L.isnan(x + y),
        lambda L, x, y: L.where(x == x, x, 5),
    ]
    for fn in fns:
        ref = Ref(lambda x, y: fn(np, x, y))
        _check(ng, lambda x, y: fn(ng, x, y), ref, [a, b], [A, B])


# --------------------------------------------------------------------------
# rounding of fp16 / bf16 stores
# --------------------------------------------------------------------------

ULP_AT_ONE = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
FRACTIONS = [0.1, 0.5, 0.77, 0.93]


def _sr_inputs(dtype):
    ulp = ULP_AT_ONE[dtype_id(dtype)]
    x = np.array([1.0 + f * ulp for f in FRACTIONS], dtype=np.float32)
    return ulp, x


def _check_stochastic(values, x, ulp):
    n = values.shape[1]
    for i in range(len(x)):
        v = values[i].astype(np.float64)
        lo, hi = 1.0, 1.0 + ulp
        assert set(np.unique(v)) <= {lo, hi}, np.unique(v)
        p = (float(x[i]) - lo) / ulp
        frac_hi = np.mean(v == hi)
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(frac_hi - p) < 6 * sigma + 1e-3, (i, frac_hi, p)
        assert abs(v.mean() - float(x[i])) < ulp * (6 * sigma + 1e-3)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=dtype_id)
def test_round_to_nearest_even_by_default(ng, dtype):
    rng = np.random.default_rng(16)
    x = (1 + rng.random(1000)).astype(np.float32)
    ulp = ULP_AT_ONE[dtype_id(dtype)]
    ties = (1 + (np.arange(16) + 0.5) * ulp).astype(np.float32)  # exact halfway
    x = np.concatenate([x, ties])
    A = ng.array(x)
    H = ng.empty(x.shape, dtype=dtype)
    H[:] = A
    assert H.get().tobytes() == x.astype(dtype).tobytes()
    H[:] = A * 1.0
    assert H.get().tobytes() == x.astype(dtype).tobytes()


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=dtype_id)
def test_stochastic_rounding_factory(factory_kind, dtype):
    f = get_factory(factory_kind, stochastic_round=True)
    ulp, x = _sr_inputs(dtype)
    n = 50_000
    A = f.array(np.repeat(x[:, None], n, axis=1))
    H = f.empty(A.shape, dtype=dtype)
    H[:] = A
    _check_stochastic(H.get(), x, ulp)
    # through arithmetic too (math in fp32, stochastic rounding on store)
    H[:] = A * 2.0 - A
    _check_stochastic(H.get(), x, ulp)
    # a second store draws fresh random bits
    H2 = f.empty(A.shape, dtype=dtype)
    H2[:] = A
    assert not np.array_equal(H.get().view(np.uint16), H2.get().view(np.uint16))


def test_stochastic_rounding_per_tensor(ng):
    ulp, x = _sr_inputs(np.float16)
    n = 50_000
    A = ng.array(np.repeat(x[:, None], n, axis=1))
    H = ng.empty(A.shape, dtype=np.float16)
    H.rounding = 10
    H[:] = A
    _check_stochastic(H.get(), x, ulp)
    # a tensor without the attribute still rounds to nearest
    N = ng.empty(A.shape, dtype=np.float16)
    N[:] = A
    np.testing.assert_array_equal(N.get(), np.asarray(A.get()).astype(np.float16))
