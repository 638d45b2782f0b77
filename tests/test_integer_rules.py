"""numpy 2's rules for Python integers (NEP 50) and integer powers, on both
factories, with numpy as the oracle.

One table: every dtype numpy knows x Python ints at and just past each
integer bound (and past int64, uint64 and float64) x assignment (``t[:] =
v``, ``ng.full``, ``t.fill``), the arithmetic and bitwise operators and the
six comparisons, in both operand orders.  numpy's exception (class, and
message where it is an OverflowError or ValueError) must be raised when the
expression is built; otherwise the values must match.  float16 results are
compared with numpy run in float32 and rounded, the factories' numeric model.
"""

import operator
import warnings

import numpy as np
import pytest

import gpuarray
from conftest import NUMPY_DTYPES, assert_matches, dtype_id
from gpuarray.core import dtypes
from gpuarray.fusion import launch

#: Python ints past every range gpuarray meets
WIDE = [-1, 2**63, 2**64, -2**63 - 1, 2**1024]

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
          "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_,
          "^": operator.xor, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
          "<=": operator.le, ">": operator.gt, ">=": operator.ge}
CASES = [(sym, False) for sym in BINARY] + [(sym, True) for sym in BINARY]


def case_id(sym, reflected):
    return ("v" + sym + "t") if reflected else ("t" + sym + "v")


def values_for(dtype):
    """Python ints at and just past ``dtype``'s bounds, and the wide ones."""
    if dtype.kind in "iu":
        low, high = dtypes.int_bounds(dtype)
        near = [low - 1, low, high, high + 1]
    else:
        near = [0, 1, 300, 70000]
    return list(dict.fromkeys(near + WIDE))


def host_data(dtype, exponent=False):
    """Small operand values; no negative integer exponents (see the tensor
    exponent test for those) and no zero divisors."""
    if dtype == np.bool_:
        return np.array([True, False, True])
    if dtype.kind == "u" or (exponent and dtype.kind == "i"):
        return np.array([1, 2, 5], dtype)
    return np.array([-3, 2, 5], dtype)


def numpy_outcome(func, dtype, data):
    """numpy's result or exception; the value computed as the factories do
    (float16 in float32, rounded when stored)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            func(data)
        except Exception as exc:  # the exception itself is the expectation
            return exc
        compute = dtypes.numpy_compute_dtype(dtype)
        result = np.asarray(func(data.astype(compute)))
        if dtype == np.float16 and result.dtype == compute:
            result = result.astype(dtype)
        return result


def check(build, expected, err_msg):
    """Compare a factory's outcome with numpy's: an exception must come from
    ``build`` itself (building the expression, or the assignment call)."""
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)) as info:
            build()
        if isinstance(expected, (OverflowError, ValueError)):
            assert str(info.value) == str(expected), err_msg
        return
    assert_matches(build(), expected, err_msg=err_msg)


@pytest.mark.parametrize("sym,reflected", CASES, ids=[case_id(*c) for c in CASES])
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_python_int_operand(ng, dtype, sym, reflected):
    op = BINARY[sym]
    data = host_data(dtype, exponent=reflected and sym == "**")
    t = ng.array(data)
    for v in values_for(dtype):
        func = (lambda x, v=v: op(v, x)) if reflected else (lambda x, v=v: op(x, v))
        expected = numpy_outcome(func, dtype, data)
        check(lambda: func(t), expected, f"{dtype} {case_id(sym, reflected)} v={v}")


def _setitem(target, v):
    target[:] = v
    return target


ASSIGNMENTS = {
    "setitem": (lambda ng, t, v: _setitem(t, v), lambda data, v: _setitem(data, v)),
    "fill": (lambda ng, t, v: t.fill(v), lambda data, v: data.fill(v) or data),
    "full": (lambda ng, t, v: ng.full(t.shape, v, t.dtype),
             lambda data, v: np.full(data.shape, v, data.dtype)),
}


@pytest.mark.parametrize("how", ASSIGNMENTS)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_python_int_assignment(ng, dtype, how):
    ours, theirs = ASSIGNMENTS[how]
    for v in values_for(dtype):
        data = host_data(dtype)
        expected = numpy_outcome(lambda d, v=v: theirs(d.copy(), v), dtype, data)
        t = ng.array(data)
        check(lambda: ours(ng, t, v), expected, f"{dtype} {how} v={v}")


CLIP_BOUNDS = [(0, 1000), (-1000, 50), (1000, 2000), (-2000, -1000), (0, 2**70),
               (-2**70, 2**64), (None, 1000), (300, None), (-5, 300), (2, 2**63)]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_clip_with_python_int_bounds(ng, dtype):
    """numpy drops a Python int bound every value passes; others convert."""
    data = host_data(dtype)
    t = ng.array(data)
    for lo, hi in CLIP_BOUNDS:
        expected = numpy_outcome(lambda d, lo=lo, hi=hi: np.clip(d, lo, hi), dtype, data)
        check(lambda: ng.clip(t, lo, hi), expected, f"{dtype} clip({lo}, {hi})")


def test_inplace_operator_checks_the_int(ng):
    t = ng.array(np.array([1, 2], np.int8))
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        t += 300
    t += 100
    assert_matches(t, np.array([101, 102], np.int8))


@pytest.mark.parametrize("exponent", [-1, -2, np.int64(-1), np.int8(-3), np.uint8(3), -1.0],
                         ids=repr)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=dtype_id)
def test_scalar_exponent(ng, dtype, exponent):
    """Integers to a negative integer scalar raise ValueError when built
    (unsigned ones OverflowError first for a negative Python int); float
    loops, uint64 with int64 (float64) and float exponents compute."""
    data = np.array([1, 2], dtype)
    expected = numpy_outcome(lambda d: d ** exponent, np.dtype(dtype), data)
    t = ng.array(data)
    check(lambda: t ** exponent, expected, f"{dtype} ** {exponent!r}")
    check(lambda: ng.power(t, exponent), expected, f"power({dtype}, {exponent!r})")


def test_negative_tensor_exponent(ng):
    """numpy raises for any negative element, known only from the data.  The
    CPU factory evaluates with numpy and raises when the expression is
    evaluated; a GPU kernel cannot raise, and gives the truncated value
    (1 for base 1, +-1 for base -1, else 0)."""
    base = ng.array(np.array([2, 1, -1, -1, 3], np.int32))
    exponent = ng.array(np.array([-1, -5, -3, -2, 2], np.int32))
    expr = base ** exponent
    if isinstance(ng, gpuarray.CPU):
        with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed."):
            expr.get()
    else:
        assert_matches(expr, np.array([0, 1, -1, 1, 9], np.int32))


@pytest.mark.parametrize("sym", ["<", "<=", ">", ">=", "==", "!="])
def test_out_of_range_comparisons_share_a_kernel(sym):
    """The value of a scalar never reaches the kernel's cache key: every
    comparison beyond the range is one of two structures, with the bound as
    an argument."""
    ng = gpuarray.CPU()
    t = ng.array(np.array([1, 2], np.int8))
    op = BINARY[sym]
    above = {op(t, v).sig for v in (128, 1000, 2**63, 2**70)}
    below = {op(t, v).sig for v in (-129, -1000, -2**63 - 1, -2**70)}
    assert len(above) == 1 and len(below) == 1


def test_strong_numpy_scalars_follow_promotion(ng):
    data = np.array([1, 2], np.int8)
    t = ng.array(data)
    assert_matches(t + np.int64(300), data + np.int64(300))
    assert_matches(t < np.int16(1000), data < np.int16(1000))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.full((2,), np.int64(300), np.uint8)  # numpy casts unsafely: 44
    assert_matches(ng.full((2,), np.int64(300), np.uint8), expected)


def test_uint64_values_above_int64_replay(ng):
    """A recorded program replays with any value: 5 and 2**63 + 1 travel in
    the same kernel argument type."""
    t = ng.empty((3,), np.uint64)
    for v in (5, 2**63 + 1, 2**64 - 1, 7):
        t[:] = v
        assert_matches(t, np.full((3,), v, np.uint64))
        assert_matches(t + v // 2, np.full((3,), v, np.uint64) + v // 2)


def test_scalar_argument_types_by_type_not_value():
    assert dtypes.scalar_c_type(5) == dtypes.scalar_c_type(2**63) == "long long"
    assert dtypes.scalar_c_type(np.uint64(5)) == "unsigned long long"
    assert dtypes.scalar_c_type(np.int8(5)) == "long long"
    assert dtypes.scalar_c_type(True) == "bool"
    assert dtypes.scalar_c_type(2.5) == "double"
    assert launch.scalar_arg(2**63, "long long") == -2**63
    assert launch.scalar_arg(2**64 - 1, "long long") == -1
    assert launch.scalar_arg(-5, "long long") == -5
    assert launch.scalar_arg(2**64 - 1, "unsigned long long") == 2**64 - 1
