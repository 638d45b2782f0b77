"""Core array-model behaviour the bad-input tables found wrong, checked whole.

Each test walks a table -- dtype pairs for ``same_kind`` casting, operand
shapes for ``@``, assigned values for ``t[0] = value``, index keys, Python
conversions -- on both factories (the ``ng`` fixture) and compares every
entry with numpy 2: the same value, or the same exception class (and
message, where numpy's wording is ours).  Rows of ``tests/test_bad_input.py``
cover one case each; these cover the cases around them.
"""

import math
import operator
import warnings

import numpy as np
import pytest

from conftest import ALL_DTYPES, BF16, FLOAT_DTYPES, NUMPY_DTYPES, assert_matches, dtype_id, to_host
from gpuarray.core import dtypes


def outcome(call):
    """``(result, None)`` or ``(None, exception)`` of ``call()``, warnings silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return call(), None
        except Exception as err:  # noqa: BLE001 - the outcome under test
            return None, err


def check_like_numpy(ours, theirs, message=True):
    """``ours()`` must raise what ``theirs()`` raises (a builtin class), or return its value."""
    expected, error = outcome(theirs)
    if error is None:
        got = ours()
        if isinstance(expected, np.ndarray):
            assert_matches(to_host(got), expected, scale=1)
        else:
            assert got == expected and type(got) is type(expected)
        return
    cls = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    with pytest.raises(cls) as info:
        ours()
    if message:
        assert str(info.value) == str(error)


# --------------------------------------------------------------------------
# same_kind casting (out=)
# --------------------------------------------------------------------------

def _numpy_stand_in(dtype):
    """bfloat16 casts as the float kind of its size, float16 (ml_dtypes registers
    its casts to float16 as unsafe; numpy casts any float to any float)."""
    return np.dtype(np.float16) if dtype == BF16 else dtype


@pytest.mark.parametrize("src", ALL_DTYPES, ids=dtype_id)
def test_can_cast_same_kind_table(src):
    """dtypes.can_cast_same_kind agrees with np.can_cast(..., 'same_kind') on every pair."""
    for dst in ALL_DTYPES:
        expected = np.can_cast(_numpy_stand_in(src), _numpy_stand_in(dst), "same_kind")
        assert dtypes.can_cast_same_kind(src, dst) == expected, (src, dst)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=dtype_id)
def test_out_refuses_what_same_kind_refuses(ng, src):
    """``out=`` of every dtype: numpy's TypeError exactly where same_kind refuses."""
    x = ng.zeros(3, src)
    for dst in ALL_DTYPES:
        if not dtypes.can_cast_same_kind(src, dst):
            with pytest.raises(TypeError, match="same_kind"):
                ng.astype(x, src, out=ng.empty(3, dst))


@pytest.mark.parametrize("src,dst", [(np.uint8, np.int16), (np.bool_, np.uint8),
                                     (np.int8, np.float16), (np.float64, BF16)],
                         ids=lambda d: dtype_id(d))
def test_out_same_kind_values(ng, src, dst):
    """Casts same_kind allows store numpy's values."""
    host = np.array([0, 1, 3, 7], src)
    out = ng.empty(4, dst)
    ng.astype(ng.array(host), src, out=out)
    assert_matches(out, host.astype(dst), scale=1)


# --------------------------------------------------------------------------
# the @ operator
# --------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)),
    ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)), ((1, 3, 4), (1, 4, 5)), ((0, 3, 4), (4, 2)),
    # numpy's ValueErrors: misaligned, 0-d, batches that do not broadcast
    ((3, 4), (3, 4)), ((2, 3, 4), (2, 3, 5)), ((), (4, 5)), ((3, 4), ()), ((2, 3, 4), (3, 4, 5)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}@{s[1]}".replace(" ", ""))
def test_matmul(ng, shapes):
    """``a @ b`` as np.matmul: values and shape, or numpy's ValueError."""
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-3, 4, s).astype(np.float32) for s in shapes)
    check_like_numpy(lambda: ng.evaluate(ng.array(a) @ ng.array(b)), lambda: a @ b, message=False)


def test_matmul_of_expressions_and_dtypes(ng):
    """Expressions multiply as their values; ``@`` is ``ng.matmul``: every
    dtype, mixed dtypes promoted and any batch shape, as numpy's."""
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4) / 8
    x = ng.array(a)
    assert_matches(ng.evaluate((x + 1) @ x[0].T), (a + 1) @ a[0].T)
    assert_matches(ng.evaluate(x[0] @ (x[1].T * 2)), a[0] @ (a[1].T * 2))
    ints = a.astype(np.int32)
    assert_matches(ng.evaluate(ng.array(ints) @ ng.array(ints[0].T)), ints @ ints[0].T)
    singles = a.astype(np.float32).transpose(0, 2, 1)
    assert_matches(ng.evaluate(x @ ng.array(singles)), a @ singles)
    assert_matches(ng.evaluate(x.reshape(1, 2, 3, 4) @ x[0].T), a.reshape(1, 2, 3, 4) @ a[0].T)


# --------------------------------------------------------------------------
# operators: divmod, unary +, comparisons with None
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint8)],
                         ids=dtype_id)
def test_divmod(ng, dtype):
    """divmod with a tensor, a Python scalar on either side: numpy's pair."""
    a = np.array([7, 8, 9, 1], dtype)
    b = np.array([2, 3, 4, 5], dtype)
    x, y = ng.array(a), ng.array(b)
    for ours, theirs in ((divmod(x, y), divmod(a, b)), (divmod(x, 3), divmod(a, 3)),
                         (divmod(20, y), divmod(20, b)), (divmod(x, 2.5), divmod(a, 2.5))):
        for got, expected in zip(ours, theirs):
            assert_matches(ng.evaluate(got), expected, scale=1)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_unary_plus(ng, dtype):
    """+t is t, except for bool, where numpy has no 'positive' loop (TypeError)."""
    x = ng.zeros((2, 3), dtype)
    if dtype == np.bool_:
        check_like_numpy(lambda: +x, lambda: +np.zeros(3, bool))
    else:
        assert +x is x


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_compare_with_none(ng, dtype):
    """t == None is all False and t != None all True, elementwise, as numpy's."""
    for shape in ((2, 3), (), (0, 4)):
        # NaN is the float value that no comparison may turn true
        x = ng.full(shape, np.nan if dtypes.is_float(dtype) else 1, dtype)
        for got, fill in ((x == None, False), (None == x, False),  # noqa: E711
                          (x != None, True), (None != x, True)):  # noqa: E711
            assert_matches(ng.evaluate(got), np.full(shape, fill))


# --------------------------------------------------------------------------
# conversions to Python scalars
# --------------------------------------------------------------------------

CONVERSIONS = {"float": float, "int": int, "index": operator.index, "bool": bool}


@pytest.mark.parametrize("convert", list(CONVERSIONS))
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)],
                         ids=dtype_id)
def test_python_scalar_conversions(ng, convert, dtype):
    """float/int/index/bool of 0-d, size-1 and longer tensors: numpy's value or error."""
    func = CONVERSIONS[convert]
    for shape in ((), (1,), (1, 1), (2,), (0,)):
        host = np.ones(shape, dtype)
        x = ng.array(host)
        check_like_numpy(lambda: func(x), lambda: func(host))


# --------------------------------------------------------------------------
# assignment of scalars numpy converts (or refuses)
# --------------------------------------------------------------------------

ASSIGNED = [float("nan"), float("inf"), -float("inf"), None, "abc", "2", "-1.5", b"3", "",
            2.7, -1.5, 1e20, 3, True, np.float64(np.nan), np.float32(np.inf), np.float32(-2.5)]


def _numpy_skips(dtype, value):
    """numpy casts a numpy float scalar into an unsigned dtype unsafely (garbage
    with a warning); gpuarray refuses non-finite ones and wraps the rest."""
    return isinstance(value, np.floating) and dtype.kind == "u"


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_assigned_scalars(ng, dtype):
    """``t[0] = value`` and ``t.fill(value)``: numpy's stored value or exception."""
    for value in ASSIGNED:
        if _numpy_skips(dtype, value):
            continue

        def ours(fill=False):
            x = ng.zeros(3, dtype)
            x.fill(value) if fill else x.__setitem__(0, value)
            return x

        def theirs(fill=False):
            x = np.zeros(3, dtype)
            x.fill(value) if fill else x.__setitem__(0, value)
            return x

        check_like_numpy(ours, theirs, message=False)
        check_like_numpy(lambda: ours(True), lambda: theirs(True), message=False)


def test_assigned_scalars_bfloat16(ng):
    """bfloat16 takes None and strings as the other float dtypes do (ml_dtypes refuses them)."""
    x = ng.zeros(4, BF16)
    x[0], x[1], x[2] = None, "1.5", b"-2"
    assert_matches(x, np.array([np.nan, 1.5, -2, 0], BF16))
    with pytest.raises(ValueError, match="could not convert string to float"):
        x[3] = "abc"


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_full_converts_as_assignment(ng, dtype):
    """ng.full with None, NaN or a string: numpy's array or numpy's exception class
    (NaN into an integer dtype: numpy's unsafe cast, and its warning)."""
    for value in (None, float("nan"), "7", "x"):
        check_like_numpy(lambda: ng.full(2, value, dtype), lambda: np.full(2, value, dtype),
                         message=False)


# --------------------------------------------------------------------------
# index keys
# --------------------------------------------------------------------------

BAD_KEYS = [1.0, "1", np.float64(0), object(), (0, 1.5), (Ellipsis, "a"), (None, 0.0),
            np.array(1.0), (0, np.array([0.5, 1.5]))]


def test_bad_index_keys(ng):
    """Keys of no index type: numpy's IndexError, in numpy's words."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ng.array(host)
    for key in BAD_KEYS:
        check_like_numpy(lambda: x[key], lambda: host[key])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_float_tensor_keys(ng, dtype):
    """A float tensor (0-d or not) as a key: numpy's IndexError; an int 0-d one indexes."""
    x = ng.array(np.arange(5, dtype=np.float32))
    for key in (ng.zeros((), dtype), ng.zeros(2, dtype)):
        with pytest.raises(IndexError, match=r"arrays used as indices must be of integer \(or "
                                             r"boolean\) type"):
            x[key]
    assert float(x[ng.array(np.int64(3))]) == 3.0


# --------------------------------------------------------------------------
# CPU special functions of 0-d tensors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_erf_of_0d(ng, dtype):
    """ng.erf / ng.erfc of a 0-d tensor evaluate to 0-d results of its dtype."""
    x = ng.array(np.array(0.5, dtype))
    for func, ref in ((ng.erf, math.erf), (ng.erfc, math.erfc)):
        got = ng.evaluate(func(x))
        assert got.shape == () and got.dtype == dtype
        assert_matches(got, np.array(ref(0.5)).astype(dtype), transcendental=True)


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal", "add", "maximum"])
@pytest.mark.parametrize("pair", [(3, 2), (2, 2), (2**40, 1), (True, 2), (1.5, 2)])
def test_functions_of_two_python_scalars_follow_numpy(ng, name, pair):
    """Two Python scalars are default-typed arrays to numpy (its comparisons would
    otherwise pick an object loop for two ints)."""
    got = ng.evaluate(getattr(ng, name)(*pair))
    want = np.asarray(getattr(np, name)(*pair))
    assert got.dtype == want.dtype
    assert got.get() == want
