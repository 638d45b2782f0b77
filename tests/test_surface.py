"""numpy's surface, first slice: creation, joining, printing, Python conversions.

Every case runs on both factories (the ``ng`` fixture) with numpy as the
oracle: same values, dtype and shape, and for bad input the same exception
class and message.
"""
import re

import numpy as np
import pytest

from conftest import BF16, NUMPY_DTYPES, assert_matches, dtype_id

ARANGE_CASES = [
    ((5,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((9, 2, -2), {}), ((0.5, 3.2, 0.7), {}),
    ((-1, 1, 0.25), {}), ((5,), {"dtype": np.float32}), ((1, 4), {"dtype": np.uint8}),
    ((0, 1, 0.1), {"dtype": np.float16}), ((3, 3), {}), ((5, 1), {}), ((np.int32(4),), {}),
    ((0, 2.5, 0.5), {"dtype": BF16}),
]

LINSPACE_CASES = [
    ((0, 1), {}), ((0, 1, 7), {}), ((-2, 3, 6), {"endpoint": False}), ((1, 0, 4), {}),
    ((0, 10, 5), {"dtype": np.int64}), ((0, 1, 5), {"dtype": np.float32}),
    ((0, 1, 1), {}), ((0, 1, 0), {}), ((0, 1, 5), {"dtype": BF16}),
]

EYE_CASES = [
    ((3,), {}), ((3, 4), {}), ((4, 3), {"k": 1}), ((4, 3), {"k": -2}), ((3,), {"k": 5}),
    ((3, 5), {"k": -7}), ((0,), {}), ((2,), {"dtype": np.int32}), ((3,), {"dtype": np.bool_}),
    ((3,), {"dtype": BF16}),
]

BAD_CREATION = [
    ("arange", (0, 5, 0), {}),
    ("arange", ("a",), {}),
    ("linspace", (0, 1, -1), {}),
    ("linspace", (0, 1, 2.5), {}),
    ("eye", (-1,), {}),
    ("eye", (2.5,), {}),
    ("eye", (2,), {"k": 1.5}),
    ("identity", (-2,), {}),
]


def _numpy_call(name, args, kwargs):
    return getattr(np, name)(*args, **kwargs)


@pytest.mark.parametrize("name, cases", [("arange", ARANGE_CASES), ("linspace", LINSPACE_CASES),
                                         ("eye", EYE_CASES)])
def test_creation_matches_numpy(ng, name, cases):
    for args, kwargs in cases:
        expected = _numpy_call(name, args, kwargs)
        assert_matches(getattr(ng, name)(*args, **kwargs), expected, scale=1,
                       err_msg=f"{name}{args} {kwargs}")


@pytest.mark.parametrize("dtype", [None, np.float32, np.int16], ids=dtype_id)
def test_identity(ng, dtype):
    assert_matches(ng.identity(4, dtype=dtype), np.identity(4, dtype=dtype))


def test_eye_of_a_large_square_is_one_copy_of_the_diagonal(ng):
    got = ng.eye(300, 200, k=-50, dtype=np.float32).get()
    np.testing.assert_array_equal(got, np.eye(300, 200, k=-50, dtype=np.float32))


@pytest.mark.parametrize("name, args, kwargs", BAD_CREATION,
                         ids=[f"{n}{a}{k}" for n, a, k in BAD_CREATION])
def test_bad_creation_raises_as_numpy(ng, name, args, kwargs):
    with pytest.raises(Exception) as want:
        _numpy_call(name, args, kwargs)
    with pytest.raises(want.type, match=None) as got:
        getattr(ng, name)(*args, **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES + [BF16], ids=dtype_id)
def test_full_like(ng, dtype):
    like = ng.zeros((2, 3), np.int8)
    assert_matches(ng.full_like(like, 1, dtype=dtype),
                   np.full_like(np.zeros((2, 3), np.int8), 1, dtype=dtype))
    host = np.ones((4,), dtype)
    assert_matches(ng.full_like(ng.array(host), 3), np.full_like(host, 3))


def test_full_like_truncates_as_numpy(ng):
    assert_matches(ng.full_like(ng.zeros(3, np.int32), 2.7), np.full_like(np.zeros(3, np.int32), 2.7))
    assert_matches(ng.full_like([[1.0, 2.0]], -1), np.full_like([[1.0, 2.0]], -1))


def test_asarray(ng):
    t = ng.array(np.arange(6, dtype=np.float32))
    assert ng.asarray(t) is t
    assert ng.asarray(t, dtype=np.float32) is t
    assert_matches(ng.asarray(t, dtype=np.float64), np.arange(6, dtype=np.float64))
    assert_matches(ng.asarray(t * 2), np.arange(6, dtype=np.float32) * 2)
    assert_matches(ng.asarray([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]]))
    assert_matches(ng.asarray(2.5, dtype=np.float16), np.asarray(2.5, dtype=np.float16))


# -- joining ------------------------------------------------------------------

def _host(rng, shape, dtype):
    return (rng.integers(-9, 9, size=shape)).astype(dtype) if np.dtype(dtype) != np.bool_ \
        else rng.random(shape) < 0.5


#: (function, [(shape, dtype) of each input], kwargs)
JOIN_CASES = [
    ("concatenate", [((2, 3), np.float32), ((4, 3), np.float32)], {}),
    ("concatenate", [((2, 3), np.int8), ((2, 1), np.float32), ((2, 0), np.int64)], {"axis": 1}),
    ("concatenate", [((2, 3, 4), np.int16), ((2, 3, 1), np.uint16)], {"axis": -1}),
    ("concatenate", [((2, 3), np.float32), ((5,), np.float64)], {"axis": None}),
    ("concatenate", [((3,), np.bool_), ((2,), np.bool_)], {}),
    ("concatenate", [((3,), np.int32), ((2,), np.uint8)], {"dtype": np.float16}),
    ("concatenate", [((2, 2), BF16), ((1, 2), BF16)], {}),
    ("stack", [((2, 3), np.float32), ((2, 3), np.float32)], {}),
    ("stack", [((2, 3), np.int32), ((2, 3), np.int64), ((2, 3), np.int8)], {"axis": 2}),
    ("stack", [((4,), np.float64)] * 3, {"axis": -1}),
    ("stack", [((), np.float32), ((), np.float32)], {}),
    ("hstack", [((2, 3), np.float32), ((2, 1), np.float32)], {}),
    ("hstack", [((3,), np.uint8), ((2,), np.int8), ((), np.int8)], {}),
    ("vstack", [((2, 3), np.float32), ((3,), np.float32), ((1, 3), np.float64)], {}),
    ("vstack", [((), np.int32), ((), np.int32)], {}),
]


@pytest.mark.parametrize("name, inputs, kwargs", JOIN_CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(JOIN_CASES)])
def test_join_matches_numpy(ng, name, inputs, kwargs):
    rng = np.random.default_rng(len(inputs))
    hosts = [_host(rng, shape, dtype) for shape, dtype in inputs]
    got = getattr(ng, name)([ng.array(h) for h in hosts], **kwargs)
    if BF16 in [np.dtype(d) for _, d in inputs]:  # numpy has no bfloat16 promotion of its own
        expected = getattr(np, name)([h.astype(np.float32) for h in hosts], **kwargs).astype(BF16)
    else:
        expected = getattr(np, name)(hosts, **kwargs)
    assert_matches(got, expected)


def test_join_takes_trees_views_and_host_data(ng):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ng.array(a)
    got = ng.concatenate([t * 2 + 1, t[:, ::-1], [[7, 7, 7, 7]]])
    assert_matches(got, np.concatenate([a * 2 + 1, a[:, ::-1], [[7, 7, 7, 7]]]))
    assert_matches(ng.stack([t[:, ::2], -t[:, 1::2]], axis=1),
                   np.stack([a[:, ::2], -a[:, 1::2]], axis=1))
    assert_matches(ng.vstack([ng.sum(t, axis=0), t]), np.vstack([a.sum(axis=0), a]))


BAD_JOINS = [
    ("concatenate", [], {}),
    ("concatenate", [(), ()], {}),
    ("concatenate", [(2, 2), (2, 3)], {}),
    ("concatenate", [(2, 2), (2,)], {}),
    ("concatenate", [(2, 2)], {"axis": 2}),
    ("concatenate", [(2, 2)], {"axis": -3}),
    ("concatenate", [(2,), (3,)], {"dtype": np.int64}),
    ("stack", [], {}),
    ("stack", [(2,), (3,)], {}),
    ("stack", [(2,)], {"axis": 2}),
    ("hstack", [], {}),
    ("hstack", [(2, 2), (3, 2)], {}),
    ("vstack", [], {}),
    ("vstack", [(2,), (3,)], {}),
]


@pytest.mark.parametrize("name, shapes, kwargs", BAD_JOINS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD_JOINS)])
def test_bad_join_raises_as_numpy(ng, name, shapes, kwargs):
    hosts = [np.ones(s) for s in shapes]
    with pytest.raises(Exception) as want:
        getattr(np, name)(hosts, **kwargs)
    with pytest.raises(want.type) as got:
        getattr(ng, name)([ng.array(h) for h in hosts], **kwargs)
    assert str(got.value) == str(want.value)


def test_join_runs_one_kernel_per_input(ng):
    a = ng.ones((64, 8), np.float32)
    ng.concatenate([a, a + 1, a * 2])  # compiled here, so the count below is of launches only
    before = ng.stats()["kernels_launched"]
    ng.stack([a, a + 1, a * 2], axis=1)
    assert ng.stats()["kernels_launched"] - before == 3


# -- printing and conversions -----------------------------------------------

PRINT_CASES = [
    (np.arange(6, dtype=np.float32).reshape(2, 3), "float32"),
    (np.arange(5), "int64"),
    (np.array([1.5, -np.inf, np.nan]), "float64"),
    (np.array([True, False]), "bool"),
    (np.float32(2.5), "0-d"),
    (np.zeros((0, 3), np.int8), "empty"),
    (np.arange(24, dtype=np.int16).reshape(2, 3, 4), "3-D"),
    (np.arange(2000, dtype=np.float32), "summarised"),
    (np.arange(4, dtype=np.float32).astype(BF16), "bfloat16"),
]


@pytest.mark.parametrize("host", [c[0] for c in PRINT_CASES], ids=[c[1] for c in PRINT_CASES])
def test_repr_and_str_show_values_as_numpy(ng, host):
    t = ng.array(host)
    name = type(t).__name__
    expected = np.array_repr(np.asarray(host))
    assert repr(t) == name + expected[5:].replace("\n      ", "\n" + " " * (len(name) + 1))
    assert str(t) == str(np.asarray(host))
    if t.ndim:
        assert str(t[..., ::-1]) == str(np.asarray(host)[..., ::-1])


def test_lazy_repr_shows_values_and_describe_shows_the_tree(ng):
    t = ng.ones(3, np.float32)
    y = t * 2 + 1
    before = ng.stats()["kernels_launched"]
    text = y.describe()
    assert text.startswith("add(multiply(") and "Tensor" in text
    assert ng.stats()["kernels_launched"] == before  # describing evaluates nothing
    name = type(t).__name__
    assert repr(y) == f"{name}([3., 3., 3.], dtype=float32, lazy=True)"
    assert str(y) == "[3. 3. 3.]"


@pytest.mark.parametrize("host", [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4),
                                  np.array([True, False]), np.int8(-3), np.zeros((2, 0))],
                         ids=["2-D", "1-D", "bool", "0-d", "empty"])
def test_tolist_iteration_and_len(ng, host):
    host = np.asarray(host)
    t = ng.array(host)
    assert t.tolist() == host.tolist()
    assert type(t.tolist()) is type(host.tolist())
    if host.ndim == 0:
        for call in (len, iter):
            with pytest.raises(TypeError) as want:
                call(host)
            with pytest.raises(TypeError, match=re.escape(str(want.value))):
                call(t)
        return
    assert len(t) == len(host)
    assert [row.tolist() for row in t] == [row.tolist() for row in host]


ITEM_CASES = [((), ()), ((1, 1), ()), ((2, 3), (4,)), ((2, 3), (-1,)), ((2, 3), (1, 2)),
              ((2, 3), ((0, 1),)), ((2, 3), (-2, -3))]
BAD_ITEMS = [((2, 3), ()), ((0,), ()), ((2, 3), (6,)), ((2, 3), (2, 0)), ((2, 3), (1,) * 3),
             ((2, 3), (1.5,))]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.uint8], ids=dtype_id)
def test_item_matches_numpy(ng, dtype):
    for shape, args in ITEM_CASES:
        host = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
        got = ng.array(host).item(*args)
        assert got == host.item(*args) and type(got) is type(host.item(*args)), (shape, args)
    for shape, args in BAD_ITEMS:
        host = np.zeros(shape, dtype)
        with pytest.raises(Exception) as want:
            host.item(*args)
        with pytest.raises(want.type) as got:
            ng.array(host).item(*args)
        assert str(got.value) == str(want.value), (shape, args)
