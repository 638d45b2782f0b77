"""numpy's shape functions (gpuarray.core.shaping and gpuarray.core.arrangement)
against numpy on both factories.

Every case is applied to a numpy array and to a tensor of the same values:
same values, shape and dtype; where numpy returns a view the tensor result
shares the input's memory with numpy's strides; bad input raises numpy's
exception class with numpy's message.  A seeded randomized differential test
draws shapes, strided input views and arguments.
"""
import numpy as np
import pytest
from numpy.exceptions import AxisError

from conftest import BF16, assert_matches, dtype_id, random_array

DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int8),
          np.dtype(np.uint16), np.dtype(np.int64), np.dtype(np.bool_)]

# (name, input shape, args, kwargs): numpy returns views of the input
VIEW_CASES = [
    ("squeeze", (1, 3, 1, 4), (), {}),
    ("squeeze", (1, 3, 1, 4), (), {"axis": (0, -2)}),
    ("squeeze", (), (), {"axis": 0}),
    ("expand_dims", (3, 4), (1,), {}),
    ("expand_dims", (3, 4), ((0, -1, 2),), {}),
    ("broadcast_to", (3, 1), ((2, 3, 5),), {}),
    ("broadcast_to", (), (4,), {}),
    ("moveaxis", (2, 3, 4), (0, -1), {}),
    ("moveaxis", (2, 3, 4, 5), ([0, 1], [-1, 0]), {}),
    ("swapaxes", (2, 3, 4), (0, -1), {}),
    ("permute_dims", (2, 3, 4), ((1, 2, 0),), {}),
    ("permute_dims", (2, 3, 4), (), {}),
    ("diagonal", (4, 5), (), {}),
    ("diagonal", (4, 5), (2,), {}),
    ("diagonal", (3, 4, 5), (-1, 2, 0), {}),
    ("diagonal", (4, 5), (9,), {}),
    ("diag", (4, 5), (-1,), {}),
    ("atleast_1d", (), (), {}),
    ("atleast_2d", (5,), (), {}),
    ("atleast_3d", (5,), (), {}),
    ("atleast_3d", (4, 5), (), {}),
    ("atleast_3d", (2, 4, 5), (), {}),
    ("ravel", (3, 4), (), {}),
    ("ravel", (3, 4), ("K",), {}),
    ("split", (6, 4), (3,), {}),
    ("split", (6, 4), ([1, 3],), {"axis": -1}),
    ("array_split", (7, 4), (3,), {}),
    ("array_split", (7, 4), ([5, 2, -1, 9],), {}),
    ("unstack", (3, 4), (), {"axis": 1}),
]

# (name, input shape, args, kwargs): numpy returns new arrays
COPY_CASES = [
    ("roll", (3, 4), (2,), {}),
    ("roll", (3, 4), (-5,), {"axis": 1}),
    ("roll", (2, 3, 4), ((1, -1, 2), (0, 2, 0)), {}),
    ("roll", (0, 3), (1,), {"axis": 0}),
    ("tile", (2, 3), (2,), {}),
    ("tile", (2, 3), ((3, 1, 2),), {}),
    ("tile", (3,), ((2, 0),), {}),
    ("tile", (), ((),), {}),
    ("repeat", (2, 3), (2,), {}),
    ("repeat", (2, 3), ([1, 0, 3],), {"axis": 1}),
    ("repeat", (4, 2), ([2, 2, 0, 1],), {"axis": 0}),
    ("repeat", (), (3,), {"axis": 0}),
    ("diag", (4,), (), {}),
    ("diag", (4,), (2,), {}),
    ("diag", (3,), (-1,), {}),
    ("tril", (4, 5), (), {}),
    ("tril", (2, 4, 5), (-2,), {}),
    ("tril", (4,), (1,), {}),
    ("triu", (4, 5), (), {}),
    ("triu", (2, 4, 5), (2,), {}),
    ("triu", (5, 3), (100,), {}),
    ("tril", (5, 3), (-100,), {}),
    ("ravel", (3, 4), ("F",), {}),
]

TRACE_CASES = [((4, 5), (), {}), ((4, 5), (1,), {}), ((3, 4, 5), (-1, 2, 1), {}),
               ((4, 5), (7,), {}), ((4, 5), (), {"dtype": np.int8})]

# (name, input shapes, args, kwargs): numpy's exception and message, exactly
BAD_CALLS = [
    ("squeeze", [(2, 3)], (), {"axis": 0}),
    ("squeeze", [(1, 3)], (), {"axis": 2}),
    ("squeeze", [(1, 3)], (), {"axis": (0, 0)}),
    ("expand_dims", [(2, 3)], (4,), {}),
    ("expand_dims", [(2, 3)], ((0, 0),), {}),
    ("broadcast_to", [(2, 3)], ((4,),), {}),
    ("broadcast_to", [(2, 3)], ((3, 3),), {}),
    ("broadcast_to", [(2, 3)], ((-1, 3),), {}),
    ("broadcast_arrays", [(2, 3), (4,)], (), {}),
    ("moveaxis", [(2, 3)], (3, 0), {}),
    ("moveaxis", [(2, 3)], (0, -3), {}),
    ("moveaxis", [(2, 3)], ((0, 0), (1, 0)), {}),
    ("moveaxis", [(2, 3)], ((0, 1), (1,)), {}),
    ("swapaxes", [(2, 3)], (3, 0), {}),
    ("swapaxes", [(2, 3)], (0, -3), {}),
    ("permute_dims", [(2, 3)], ((0,),), {}),
    ("permute_dims", [(2, 3)], ((0, 0),), {}),
    ("roll", [(2, 3)], (1, 2), {}),
    ("roll", [(2, 3)], ((1, 2), (0, 1, 1)), {}),
    ("roll", [(2, 3)], ([[1]], 0), {}),
    ("tile", [(2,)], (-1,), {}),
    ("tile", [(2,)], ((2, -1),), {}),
    ("tile", [(2,)], ((1.5,),), {}),
    ("repeat", [(2, 3)], (-1,), {}),
    ("repeat", [(2, 3)], ([1, -1],), {"axis": 0}),
    ("repeat", [(2, 3)], ([1, 2],), {"axis": 1}),
    ("repeat", [(2, 3)], ([1, 2],), {}),
    ("repeat", [(2, 3)], ([[1]],), {}),
    ("repeat", [(2, 3)], (np.ones((1, 1), int),), {}),
    ("repeat", [(2, 3)], (2,), {"axis": 2}),
    ("repeat", [()], (2,), {"axis": 1}),
    ("diag", [(2, 2, 2)], (), {}),
    ("diag", [()], (), {}),
    ("diagonal", [(3,)], (), {}),
    ("diagonal", [(2, 3)], (0, 1, -1), {}),
    ("diagonal", [(2, 3)], (0, 3, 0), {}),
    ("diagonal", [(2, 3)], (0, 0, -3), {}),
    ("trace", [(3,)], (), {}),
    ("tril", [()], (), {}),
    ("triu", [()], (), {}),
    ("meshgrid", [(2,), (3,)], (), {"indexing": "x"}),
    ("ravel", [(2, 3)], ("X",), {}),
    ("split", [(2, 3)], (4,), {}),
    ("split", [(2, 3)], (2,), {"axis": 1}),
    ("split", [(2, 3)], (0,), {}),
    ("array_split", [(2, 3)], (0,), {}),
    ("array_split", [(2, 3)], (-1,), {}),
    ("unstack", [()], (), {}),
    ("unstack", [(2, 3)], (), {"axis": 2}),
]


def _host(shape, dtype, seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype, lo=-50, hi=50)


def _results(value):
    """A function's result as a list of arrays (tuples and lists flattened)."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _check_view(got, want, base):
    """``got`` is a view of ``base``'s memory with numpy's values and strides."""
    assert got.buffer is base.buffer, "expected a view of the input"
    assert_matches(got, want)
    for d, s, ref in zip(got.shape, got.strides, want.strides):
        assert d <= 1 or s == ref, (got.strides, want.strides)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name, shape, args, kwargs", VIEW_CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in VIEW_CASES])
def test_views_match_numpy(ng, dtype, name, shape, args, kwargs):
    x = _host(shape, dtype)
    X = ng.array(x)
    got = _results(getattr(ng, name)(X, *args, **kwargs))
    want = _results(getattr(np, name)(x, *args, **kwargs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _check_view(g, w, X)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name, shape, args, kwargs", COPY_CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in COPY_CASES])
def test_copies_match_numpy(ng, dtype, name, shape, args, kwargs):
    x = _host(shape, dtype)
    got = getattr(ng, name)(ng.array(x), *args, **kwargs)
    assert_matches(got, getattr(np, name)(x, *args, **kwargs))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.bool_], ids=dtype_id)
@pytest.mark.parametrize("shape, args, kwargs", TRACE_CASES, ids=[str(c) for c in TRACE_CASES])
def test_trace_matches_numpy(ng, dtype, shape, args, kwargs):
    x = _host(shape, dtype)
    assert_matches(ng.trace(ng.array(x), *args, **kwargs), np.trace(x, *args, **kwargs))
    out = ng.empty(np.trace(x, *args, **kwargs).shape, np.float64)
    assert ng.trace(ng.array(x), *args, **kwargs, out=out) is out
    # a float32 sum written to float64: its rounding order is the kernel's, not numpy's
    rtol = 1e-6 if np.dtype(dtype) == np.float32 else None
    assert_matches(out, np.trace(x, *args, **kwargs).astype(np.float64), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, BF16], ids=dtype_id)
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("copy", [True, False])
def test_meshgrid(ng, dtype, indexing, sparse, copy):
    xs = [_host(n, dtype, seed=n) for n in (2, 3, 4)]
    for count in (1, 2, 3):
        got = ng.meshgrid(*[ng.array(x) for x in xs[:count]], copy=copy, sparse=sparse,
                          indexing=indexing)
        want = np.meshgrid(*xs[:count], copy=copy, sparse=sparse, indexing=indexing)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w)
    assert ng.meshgrid() == ()


@pytest.mark.parametrize("name, shapes, args, kwargs", BAD_CALLS,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in BAD_CALLS])
def test_bad_input_raises_as_numpy(ng, name, shapes, args, kwargs):
    hosts = [np.zeros(s, np.float32) for s in shapes]
    with pytest.raises(Exception) as want:
        getattr(np, name)(*hosts, *args, **kwargs)
    with pytest.raises(want.type) as got:
        getattr(ng, name)(*[ng.array(h) for h in hosts], *args, **kwargs)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


def test_split_axis_out_of_range_is_an_axis_error(ng):
    # numpy raises a bare IndexError ("tuple index out of range"); AxisError is one
    with pytest.raises(IndexError):
        np.split(np.zeros((2, 3)), 2, axis=5)
    with pytest.raises(AxisError, match="axis 5 is out of bounds for array of dimension 2"):
        ng.split(ng.zeros((2, 3)), 2, axis=5)


def test_views_write_through(ng):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    X = ng.array(x)
    ng.diagonal(X, 1, 1, 2)[...] = -1
    x[:, [0, 1, 2], [1, 2, 3]] = -1
    ng.split(X, 2, axis=2)[1][...] = 7
    x[:, :, 2:] = 7
    ng.moveaxis(X, 0, -1)[0, 0] = 5
    x[:, 0, 0] = 5
    ng.squeeze(ng.expand_dims(X, 0))[1, 2] = 9
    x[1, 2] = 9
    assert_matches(X, x)


def test_trees_are_evaluated_or_fused(ng):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    X = ng.array(x)
    assert_matches(ng.squeeze(ng.expand_dims(X * 2, 0)), x * 2)
    assert_matches(ng.roll(X + 1, 1, axis=1), np.roll(x + 1, 1, axis=1))
    assert_matches(ng.diag(ng.arange(3) * 2, 1), np.diag(np.arange(3) * 2, 1))
    assert_matches(ng.trace(X - 1), np.trace(x - 1))
    before = ng.stats()["kernels_launched"]
    ng.evaluate(ng.triu(ng.tril(X * 2, 2) + 1, -1))  # one fused kernel
    assert ng.stats()["kernels_launched"] - before <= 1
    assert_matches(ng.triu(ng.tril(X * 2, 2) + 1, -1), np.triu(np.tril(x * 2, 2) + 1, -1))


def test_kernel_counts(ng):
    X = ng.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    cases = [(lambda: ng.tile(X, (2, 1, 3)), 1), (lambda: ng.repeat(X, 3, axis=1), 1),
             (lambda: ng.repeat(X, [1, 1, 2], axis=1), 2), (lambda: ng.roll(X, (1, 1), (0, 2)), 4),
             (lambda: ng.unstack(ng.broadcast_to(ng.swapaxes(X, 0, 1), (5, 3, 2, 4))), 0),
             (lambda: ng.array_split(ng.diagonal(ng.atleast_3d(X)), 2), 0)]
    for run, kernels in cases:
        before = ng.stats()["kernels_launched"]
        run()
        assert ng.stats()["kernels_launched"] - before <= kernels


def test_host_data_and_results(ng):
    assert_matches(ng.tile([1, 2], 2), np.tile([1, 2], 2))
    assert_matches(ng.repeat(3, 4), np.repeat(3, 4))
    assert_matches(ng.atleast_2d(5), np.atleast_2d(5))
    assert ng.atleast_1d() == ()
    one, two = ng.atleast_1d(ng.zeros(()), ng.zeros((2, 3)))
    assert one.shape == (1,) and two.shape == (2, 3)
    X = ng.zeros((2, 3))
    assert ng.broadcast_arrays(X)[0] is X
    assert isinstance(ng.split(X, 3, axis=1), list)
    assert len(ng.split(X, np.array(3), axis=1)) == 3  # a 0-d count is a count, as numpy's
    assert ng.tile(X, np.array(2)).shape == (2, 6)
    assert ng.permute_dims(X, (1, 0)).shape == (3, 2)
    assert_matches(ng.repeat(ng.arange(3), ng.array([1, 0, 2])), np.repeat(np.arange(3), [1, 0, 2]))


def test_other_factory_is_refused(ng):
    import gpuarray
    other = gpuarray.CPU()
    with pytest.raises(ValueError, match="different factories"):
        ng.squeeze(other.zeros((1, 2)) + 1)


# -- randomized differential test ----------------------------------------------------

def _random_args(rng, name, shape):
    """Valid random arguments of ``name`` for an input of ``shape`` (None: not applicable)."""
    ndim = len(shape)
    axis = int(rng.integers(-ndim, ndim)) if ndim else 0
    pick = (lambda n: tuple(int(a) for a in rng.choice(ndim, n, replace=False))) if ndim else None
    if name == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        return ((), {"axis": tuple(ones[:int(rng.integers(0, len(ones) + 1))])})
    if name == "expand_dims":
        return ((tuple(range(int(rng.integers(1, 3)))) if rng.random() < 0.5 else -1,), {})
    if name == "broadcast_to":
        return ((tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 2))))
                 + tuple(int(rng.integers(0, 3)) if d == 1 else d for d in shape),), {})
    if name == "moveaxis" and ndim:
        n = int(rng.integers(0, ndim + 1))
        return ((pick(n), pick(n)), {})
    if name == "swapaxes" and ndim:
        return ((axis, int(rng.integers(-ndim, ndim))), {})
    if name == "permute_dims":
        return ((tuple(int(a) for a in rng.permutation(ndim)),), {})
    if name == "roll":
        if rng.random() < 0.3 or not ndim:
            return ((int(rng.integers(-7, 8)),), {})
        n = int(rng.integers(1, ndim + 1))
        return ((tuple(int(s) for s in rng.integers(-7, 8, n)), pick(n)), {})
    if name == "tile":
        return ((tuple(int(r) for r in rng.integers(0, 3, int(rng.integers(0, 4)))),), {})
    if name == "repeat":
        if ndim and rng.random() < 0.5:
            return ((rng.integers(0, 3, shape[axis]).tolist(),), {"axis": axis})
        return ((int(rng.integers(0, 3)),), {"axis": None if rng.random() < 0.5 else axis})
    if name in ("diagonal", "trace") and ndim >= 2:
        a1, a2 = pick(2)
        return ((int(rng.integers(-4, 5)), a1, a2), {})
    if name == "diag" and ndim in (1, 2):
        return ((int(rng.integers(-3, 4)),), {})
    if name in ("tril", "triu") and ndim:
        return ((int(rng.integers(-4, 5)),), {})
    if name == "ravel":
        return ((str(rng.choice(list("CFAK"))),), {})
    if name == "array_split" and ndim:
        if rng.random() < 0.5:
            return ((int(rng.integers(1, 5)),), {"axis": axis})
        return ((sorted(rng.integers(-2, 6, int(rng.integers(0, 3))).tolist()),), {"axis": axis})
    if name == "unstack" and ndim:
        return ((), {"axis": axis})
    if name.startswith("atleast"):
        return ((), {})
    return None


RANDOM_NAMES = ["squeeze", "expand_dims", "broadcast_to", "moveaxis", "swapaxes", "permute_dims",
                "roll", "tile", "repeat", "diagonal", "trace", "diag", "tril", "triu", "ravel",
                "array_split", "unstack", "atleast_1d", "atleast_2d", "atleast_3d"]


def _random_view(rng, x, X):
    """The same random strided view (steps, reversals, a transpose) of ``x`` and ``X``."""
    key = tuple(slice(None, None, int(rng.choice([1, 1, 2, -1]))) for _ in range(x.ndim))
    order = tuple(int(a) for a in rng.permutation(x.ndim))
    return x[key].transpose(order), X[key].transpose(order)


def test_random_differential(ng):
    rng = np.random.default_rng(2024)
    dtypes = [np.float32, np.int16, np.bool_, np.float64]
    checked = 0
    for _ in range(300):
        shape = tuple(int(d) for d in rng.choice([0, 1, 1, 2, 3, 4], int(rng.integers(0, 5))))
        name = str(rng.choice(RANDOM_NAMES))
        x = _host(shape, dtypes[int(rng.integers(len(dtypes)))], seed=int(rng.integers(1 << 30)))
        x, X = _random_view(rng, x, ng.array(x))
        call = _random_args(rng, name, x.shape)
        if call is None:
            continue
        args, kwargs = call
        want = _results(getattr(np, name)(x, *args, **kwargs))
        got = _results(getattr(ng, name)(X, *args, **kwargs))
        assert len(got) == len(want), (name, x.shape, args, kwargs)
        for g, w in zip(got, want):
            assert_matches(g, w, err_msg=f"{name}{x.shape} {args} {kwargs}")
        checked += 1
    assert checked > 200
