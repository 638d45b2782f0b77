"""The fast host path of ``out[:] = expr`` changes no result.

Binary nodes take shortcuts (equal shapes, a scalar beside a tensor, Python
numbers wrapped directly) and cached assignments replay recorded argument
buffers: each shortcut must give numpy's shape, dtype and values, and a
replay after the pointers, scalars and views changed must compute what a
fresh evaluation does.
"""
import numpy as np
import pytest

from conftest import assert_matches, dtype_id, random_array

#: left and right operands of a binary node: a host array's shape, or a scalar
OPERANDS = {
    "same shape": ((6, 5), (6, 5)),
    "row": ((6, 5), (5,)),
    "column": ((6, 1), (6, 5)),
    "0-d tensor": ((), (6, 5)),
    "int right": ((6, 5), 3),
    "int left": (7, (6, 5)),
    "float right": ((6, 5), 0.5),
    "bool left": (True, (6, 5)),
    "numpy scalar": ((6, 5), np.float32(1.5)),
    "two scalars": (2, 0.25),
}
DTYPES = [np.dtype(d) for d in (np.float32, np.float16, np.int16, np.uint8, np.bool_)]
SYMBOLS = {"+": lambda x, y: x + y, "*": lambda x, y: x * y, "<": lambda x, y: x < y,
           "|": lambda x, y: x | y}


def _operand(ng, spec, dtype, rng):
    """(gpuarray operand, numpy operand) for one entry of OPERANDS."""
    if not isinstance(spec, tuple):
        return spec, spec
    host = random_array(rng, spec, dtype, lo=1)
    return ng.array(host), host


@pytest.mark.parametrize("sym", list(SYMBOLS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kinds", list(OPERANDS))
def test_binary_nodes_match_numpy(ng, kinds, dtype, sym):
    rng = np.random.default_rng(7)
    (a, x), (b, y) = (_operand(ng, spec, dtype, rng) for spec in OPERANDS[kinds])
    op = SYMBOLS[sym]
    try:
        want = np.asarray(op(x, y))
    except TypeError as err:  # no loop for these dtypes (bool +, float |...)
        with pytest.raises(type(err)):
            got = op(a, b)
            got = got if hasattr(got, "shape") else ng.array(got)
        return
    got = op(a, b)
    if not hasattr(got, "shape"):  # two scalars: Python computed it
        got = ng.array(got)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert_matches(got, want)


def test_mismatched_shapes_still_raise_numpys_error(ng):
    a, b = ng.empty((6, 5)), ng.empty((4, 5))
    with pytest.raises(ValueError):
        a + b
    with pytest.raises(ValueError):
        np.empty((6, 5)) + np.empty((4, 5))


def test_replay_follows_pointers_scalars_and_views(ng):
    """One situation replayed with new data, tensors, scalars and views (the
    GPU factory replays its recorded arguments; the CPU one is the oracle)."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((9, 64)).astype(np.float32)
    out = ng.empty((8, 64), np.float32)
    for step, scalar in enumerate([2.5, -1.0, 0.125, 7.0]):
        data = big + step
        base = ng.array(data)
        A = base[step % 2:step % 2 + 8]          # a view whose offset moves
        B = ng.array(data[1:] * 0.5)
        out[:] = A * scalar + B - ng.mean(A, axis=1, keepdims=True)
        a, b = data[step % 2:step % 2 + 8], data[1:] * 0.5
        assert_matches(out, a * scalar + b - a.mean(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.float16], ids=dtype_id)
def test_replayed_integer_scalars_convert_each_time(ng, dtype):
    """Scalar holes are converted per call: values near the type's limits and
    of both signs reach the kernel intact after the first recording."""
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    values = [1, 3, -1] if info is None else [1, int(info.max) // 2, int(info.min) // 2 or 2]
    host = np.arange(16).astype(dtype)
    A, out = ng.array(host), ng.empty((16,), dtype)
    for v in values:
        out[:] = A + v
        assert_matches(out, host + np.asarray(v).astype(dtype) if info is None
                       else (host + dtype(v)).astype(dtype))
