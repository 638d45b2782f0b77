"""matmul, tensordot, vecdot, inner, vdot, kron, cross and einsum
(gpuarray.core.products, .einsum, .contraction) against numpy.

Every case runs on both factories with numpy as the oracle: values, shape
and dtype.  Floats are compared with numpy's float64 result on the same
values; float16/bfloat16 GEMMs accumulate in fp32 and round once, so the
dtype's tolerance (conftest's ``assert_matches``) relative to the largest
result holds.  Integer and bool results are exact.  Bad input raises
numpy's exception class with numpy's message.  A seeded randomized
differential test draws einsum subscripts over one to three operands, with
repeated labels (diagonals), '...' and broadcast axes of length one.
"""
import string

import numpy as np
import pytest
from numpy.exceptions import AxisError

from conftest import BF16, assert_matches, is_float, random_array, same_error

DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64),
          np.dtype(np.int32)]


def _data(rng, shape, dtype):
    return random_array(rng, shape, dtype)


def _wide(x):
    """The values numpy computes the oracle on: float64 for floats."""
    return x.astype(np.float64) if is_float(x.dtype) else x


def _check(got, want, dtype):
    """``got`` has ``dtype`` and matches numpy's ``want`` (computed wide)."""
    want = np.asarray(want)
    assert_matches(got, want if is_float(dtype) else want.astype(dtype), dtype=dtype)


def _run(ng, name, shapes, dtype, *args, seed=0, **kwargs):
    """``ng.name`` and numpy's on random operands of ``shapes``; compared."""
    rng = np.random.default_rng(seed)
    hosts = [_data(rng, s, dtype) for s in shapes]
    got = getattr(ng, name)(*args, *[ng.array(h) for h in hosts], **kwargs)
    _check(got, getattr(np, name)(*args, *[_wide(h) for h in hosts], **kwargs), dtype)
    return got


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (6, 4, 2)),
                 ((6, 3, 4), (4,)), ((4,), (2, 4, 3)), ((2, 0, 4), (2, 4, 3)), ((3, 0), (0, 2)),
                 ((5, 3, 4), (4, 2)), ((1, 3, 4), (1, 4, 2))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(ng, dtype, shapes):
    _run(ng, "matmul", shapes, dtype)


def test_matmul_promotes_fuses_and_takes_out(ng):
    rng = np.random.default_rng(1)
    a, b = _data(rng, (3, 4), np.float16), _data(rng, (4, 5), np.float32)
    _check(ng.matmul(ng.array(a), ng.array(b)), a.astype(np.float64) @ b, np.float32)
    x, w, bias = (_data(rng, s, np.float32) for s in ((6, 4), (4, 3), (3,)))
    y = ng.empty((6, 3), np.float32)
    y[:] = ng.relu(ng.matmul(ng.array(x), ng.array(w)) + ng.array(bias))  # a GEMM epilogue
    _check(y, np.maximum(_wide(x) @ w + bias, 0), np.float32)
    out = ng.zeros((2, 3, 5), np.float64)
    p, q = _data(rng, (2, 3, 4), np.float64), _data(rng, (4, 5), np.int32)
    assert ng.matmul(ng.array(p), ng.array(q), out=out) is out
    _check(out, p @ q, np.float64)
    bools = rng.random((2, 3, 4)) < 0.3, rng.random((4, 2)) < 0.3
    _check(ng.matmul(*map(ng.array, bools)), np.matmul(*bools), np.bool_)
    _check(ng.matmul([[1, 2]], [[3], [4]]), np.matmul([[1, 2]], [[3], [4]]), np.int64)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes, axes", [
    (((2, 3, 4), (3, 4, 5)), 2), (((2, 3), (3, 4)), 1), (((2, 3), (4,)), 0),
    (((2, 3, 4), (4, 3, 2)), ([0, 1], [2, 1])), (((3, 4), (4, 3)), (1, 0)),
    (((2, 3, 4), (4, 2)), ([-1, 0], [0, 1]))], ids=str)
def test_tensordot(ng, dtype, shapes, axes):
    _run(ng, "tensordot", shapes, dtype, axes=axes)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes, axis", [
    (((2, 3), (2, 3)), -1), (((2, 3), (4, 1, 3)), -1), (((3,), (5, 3)), -1),
    (((3, 2), (3, 1)), 0), (((4, 3, 2), (4, 2)), 0), (((0, 3), (0, 3)), 0)], ids=str)
def test_vecdot(ng, dtype, shapes, axis):
    _run(ng, "vecdot", shapes, dtype, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (4, 3)), ((2, 3), (4, 1, 3)),
                                    ((2, 3, 4), (4,)), ((), (2, 3))], ids=str)
def test_inner(ng, dtype, shapes):
    _run(ng, "inner", shapes, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", [((6,), (6,)), ((2, 3), (3, 2)), ((), ())], ids=str)
def test_vdot(ng, dtype, shapes):
    _run(ng, "vdot", shapes, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3,)),
                                    ((), (2, 3)), ((0, 2), (3,))], ids=str)
def test_kron(ng, dtype, shapes):
    _run(ng, "kron", shapes, dtype)
    assert ng.kron(ng.array(np.ones(2, np.int8)), ng.array([True, False])).dtype == np.int8


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes, kwargs", [
    (((3,), (3,)), {}), (((4, 3), (3, 4)), dict(axisb=0)),
    (((4, 3), (4, 3)), dict(axisc=0)), (((2, 3, 5), (5, 3)), dict(axis=1)),
    (((4, 1, 3), (5, 3)), {})], ids=str)
def test_cross(ng, dtype, shapes, kwargs):
    _run(ng, "cross", shapes, dtype, **kwargs)


def test_cross_promotes(ng):
    a, b = np.array([1, -2, 3], np.int8), np.array([200, 1, 7], np.uint8)
    _check(ng.cross(ng.array(a), ng.array(b)), np.cross(a, b), np.int16)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk->ki", [(3, 4), (4, 5)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,bjk->bik", [(3, 4), (2, 4, 5)]),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]), ("ijk,jl->lik", [(2, 3, 4), (3, 5)]),
    ("i,i", [(5,), (5,)]), ("i,j", [(3,), (4,)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("iji->j", [(3, 2, 3)]), ("ij->", [(3, 4)]),
    ("ji", [(3, 4)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]), ("...i,...i->...", [(2, 3), (4, 1, 3)]),
    ("i...,j...->ij...", [(2, 3), (4, 3)]), ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,ca", [(2, 3), (3, 4), (4, 2)]), ("ij,ij->i", [(3, 4), (1, 4)]),
    ("ij,jk->ik", [(3, 4), (1, 5)]), (",i", [(), (3,)]),
    ("ijk,ikl,klm->jm", [(2, 3, 4), (2, 4, 5), (4, 5, 3)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("bij,bjk->ibk", [(2, 3, 4), (2, 4, 5)]), ("abk,kc->bca", [(2, 3, 4), (4, 5)]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("subscripts, shapes", EINSUM_CASES, ids=str)
def test_einsum(ng, dtype, subscripts, shapes):
    _run(ng, "einsum", shapes, dtype, subscripts)


def test_einsum_views_forms_and_dtypes(ng):
    x = ng.array(np.arange(9.0).reshape(3, 3))
    ng.einsum("ii->i", x)[...] = -1  # a view, as numpy's
    ng.einsum("ij->ji", x)[0, 2] = 7
    np.testing.assert_array_equal(x.get(), [[-1, 1, 2], [3, -1, 5], [7, 7, -1]])
    rng = np.random.default_rng(2)
    a, b = _data(rng, (2, 3), np.float32), _data(rng, (3, 4), np.float32)
    _check(ng.einsum(ng.array(a), [0, 1], ng.array(b), [1, Ellipsis], [Ellipsis, 0]),
           np.einsum(_wide(a), [0, 1], _wide(b), [1, Ellipsis], [Ellipsis, 0]), np.float32)
    _check(ng.einsum("ij,jk", a, b), np.einsum("ij,jk", _wide(a), b), np.float32)  # host data
    i8, i32 = _data(rng, (2, 3), np.int8), _data(rng, (3,), np.int32)
    _check(ng.einsum("ij,j->i", ng.array(i8), ng.array(i32)), np.einsum("ij,j->i", i8, i32), np.int32)
    bools = rng.random((3, 4)) < 0.4, rng.random((4, 2)) < 0.4
    _check(ng.einsum("ij,jk", *map(ng.array, bools)), np.einsum("ij,jk", *bools), np.bool_)
    out = ng.empty((2, 4), np.float64)
    assert ng.einsum("ij,jk", ng.array(_wide(a)), ng.array(_wide(b)), out=out) is out
    _check(out, _wide(a) @ b, np.float64)


def _random_einsum(rng):
    """Random subscripts and operand shapes over 1-3 operands: repeated labels,
    '...' (with broadcast axes of length one), implicit and explicit output."""
    sizes = {c: int(rng.integers(1, 4)) for c in "abcde"}
    broadcast = [int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    terms, shapes = [], []
    for _ in range(int(rng.integers(1, 4))):
        labels = list(rng.choice(list("abcde"), size=int(rng.integers(0, 4))))
        shape = [1 if rng.random() < 0.1 else sizes[c] for c in labels]
        shape = [shape[labels.index(c)] for c in labels]  # a repeated label: one length
        if rng.random() < 0.4:
            at, width = int(rng.integers(0, len(labels) + 1)), int(rng.integers(0, len(broadcast) + 1))
            dims = [1 if rng.random() < 0.2 else n for n in broadcast[len(broadcast) - width:]]
            labels[at:at] = ["..."]
            shape[at:at] = dims
        terms.append("".join(labels))
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if rng.random() < 0.6:
        present = sorted({c for t in terms for c in t if c in string.ascii_letters})
        out = list(rng.permutation(present)[:int(rng.integers(0, len(present) + 1))])
        if "..." in subscripts:
            out.insert(int(rng.integers(0, len(out) + 1)), "...")
        subscripts += "->" + "".join(out)
    return subscripts, shapes


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)],
                         ids=str)
def test_einsum_randomized(ng, dtype):
    rng = np.random.default_rng(15)
    for case in range(60):
        subscripts, shapes = _random_einsum(rng)
        hosts = [_data(rng, s, dtype) for s in shapes]
        want = np.einsum(subscripts, *[_wide(h) for h in hosts])
        got = ng.einsum(subscripts, *[ng.array(h) for h in hosts])
        assert_matches(got, want if is_float(dtype) else want.astype(dtype), dtype=dtype,
                       err_msg=f"case {case}: {subscripts} {shapes}")


def _errors(ng, np_name, cases):
    for args, kwargs in cases:
        same_error(lambda: getattr(ng, np_name)(*[ng.array(a) if isinstance(a, np.ndarray) else a
                                                  for a in args], **kwargs),
                   lambda: getattr(np, np_name)(*args, **kwargs))


def _ones(*shape):
    return np.ones(shape, np.float32)


def test_matmul_errors(ng):
    _errors(ng, "matmul", [
        ((_ones(), _ones(3)), {}), ((_ones(3), _ones()), {}), ((_ones(3), _ones(4)), {}),
        ((_ones(2, 3), _ones(4, 2)), {}), ((_ones(2, 3, 4), _ones(5, 4, 3)), {}),
        ((_ones(2, 3, 4), _ones(7, 5, 4, 3)), {}), ((_ones(2, 3, 4), _ones(3, 5, 3)), {}),
        ((_ones(2, 3, 4), _ones(5, 2)), {}), ((_ones(2, 3, 4), _ones(2, 5, 3)), {})])


def test_tensordot_errors(ng):
    _errors(ng, "tensordot", [
        ((_ones(2, 3), _ones(4, 2)), dict(axes=1)), ((_ones(2, 3), _ones(4, 2)), dict(axes=([0, 1], [0]))),
        ((_ones(2, 3), _ones(2, 3)), dict(axes=([0], [5]))), ((_ones(2, 3), _ones(2, 3)), dict(axes=3)),
        ((_ones(2, 3), _ones(2, 3)), dict(axes=([0, 0], [1, 1]))),
        ((_ones(2, 3), _ones(3, 2)), dict(axes=1.5)), ((_ones(2, 3), _ones(3, 2)), dict(axes=[[0]])),
        ((_ones(2, 2), _ones(2, 2)), dict(axes=([0, -2], [0, 1])))])


def test_vecdot_inner_vdot_errors(ng):
    _errors(ng, "vecdot", [
        ((_ones(), _ones(4)), {}), ((_ones(2, 3), _ones(4)), {}), ((_ones(2, 3), _ones(4, 3)), {}),
        ((_ones(2, 3), _ones(7, 4, 3)), {}), ((_ones(2, 3), _ones(2, 3)), dict(axis=2)),
        ((_ones(7, 4, 3), _ones(2, 3)), dict(axis=0)), ((_ones(3), _ones(3, 3)), dict(axis=1))])
    _errors(ng, "inner", [((_ones(2, 3), _ones(4)), {}), ((_ones(2, 4), _ones(4, 5, 3)), {})])
    _errors(ng, "vdot", [((_ones(2, 3), _ones(4)), {}), ((_ones(4), _ones(2, 3)), {})])


def test_cross_errors(ng):
    _errors(ng, "cross", [
        ((_ones(), _ones(3)), {}), ((_ones(2, 3), _ones(4, 3)), {}),
        ((_ones(3), _ones(3)), dict(axisa=1)), ((_ones(3), _ones(3)), dict(axisb=-2)),
        ((_ones(5, 3), _ones(5, 3)), dict(axisc=3))])
    # numpy deprecated 2-vectors in 2.0 and has since removed them; the message is its current one
    for a, b in ((2, 3), (3, 4), (2, 2)):
        with pytest.raises(ValueError, match=f"3-dimensional vectors, but they are {a} and {b} "):
            ng.cross(ng.ones(a), ng.ones(b))
    with pytest.raises(TypeError, match="boolean subtract"):
        ng.cross(ng.array(np.ones(3, bool)), ng.array(np.ones(3, bool)))
    with pytest.raises(AxisError):
        ng.vecdot(ng.ones(3), ng.ones(3), axis=1)


@pytest.mark.parametrize("subscripts, shapes", [
    ("i,i->i", [(3,), (2,)]), ("...i->i", [(2, 3)]), ("...i->", [(2, 3)]), ("ba,ab", [(2, 3), (3, 4)]),
    ("ii", [(2, 3)]), ("ii->i", [(2, 3)]), ("i->ii", [(3,)]), ("ij->k", [(3, 3)]), ("i,j", [(3,)]),
    ("ij", [(3,)]), ("i.j", [(3,)]), ("i..j", [(3,)]), ("i...->...j", [(3,)]), ("i->i->i", [(3,)]),
    ("1i", [(3,)]), ("", [(3,)]), ("i,i", [(3,)] * 3), ("i-i", [(3,)]), ("i>i", [(3,)]),
    ("...i,...i", [(2, 3), (3, 3)]), ("......", [(3,)]), ("i,ii", [(2,), (3, 3)]),
    ("ij,jk->ik", [(2, 3), (4, 5)]), ("i...,...->...", [(2, 3), (4,)]), ("ab...", [(2,)]),
    ("...a,...a->...a", [(2, 2), (3, 2)]), ("i->.", [(3,)]),
    ("iij->j", [(2, 3, 4)]), ("aB,Ba", [(2, 3), (3, 4)])], ids=str)
def test_einsum_errors(ng, subscripts, shapes):
    ops = [_ones(*s) for s in shapes]
    same_error(lambda: ng.einsum(subscripts, *map(ng.array, ops)),
               lambda: np.einsum(subscripts, *ops))


def test_einsum_interleaved_errors(ng):
    x = _ones(3)
    for args in [(x, [52]), (x, [-1]), (x, [0.5]), (x, 5), (x, [Ellipsis, 0, Ellipsis]), (x,),
                 (x, [0], x)]:
        same_error(lambda: ng.einsum(*[ng.array(a) if isinstance(a, np.ndarray) else a for a in args]),
                   lambda: np.einsum(*args))
    same_error(lambda: ng.einsum("i"), lambda: np.einsum("i"))
