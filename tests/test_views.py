"""Views (transpose, reshape, basic indexing), writes through views,
assignment into views, overlapping self-assignment, expressions on views."""

import numpy as np
import pytest

from conftest import BF16, assert_matches, dtype_id, random_array

# (base shape, view function) -- the function is applied to a numpy array and
# to a tensor alike; numpy returns a view in every case.
VIEWS = {
    "T": ((4, 6), lambda x: x.T),
    "T_3d": ((2, 3, 4), lambda x: x.T),
    "transpose_102": ((3, 4, 5), lambda x: x.transpose(1, 0, 2)),
    "transpose_tuple": ((3, 4, 5), lambda x: x.transpose((2, 0, 1))),
    "transpose_noargs": ((3, 4, 5), lambda x: x.transpose()),
    "transpose_4d": ((2, 3, 4, 5), lambda x: x.transpose(3, 1, 0, 2)),
    "reshape_tuple": ((2, 12), lambda x: x.reshape((4, -1))),
    "reshape_args": ((24,), lambda x: x.reshape(4, -1)),
    "reshape_3d": ((4, 6), lambda x: x.reshape(2, 3, 4)),
    "reshape_flat": ((3, 4, 2), lambda x: x.reshape(-1)),
    "reshape_of_slice": ((6, 8), lambda x: x[2:4].reshape(4, 4)),
    "slice_step": ((8, 6), lambda x: x[1:5, ::2]),
    "ellipsis_int": ((3, 4, 5), lambda x: x[..., 0]),
    "ellipsis_slice": ((3, 4, 5), lambda x: x[1:, ..., 1::2]),
    "newaxis": ((4, 6), lambda x: x[:, None]),
    "newaxis_both_ends": ((4, 6), lambda x: x[None, ..., None]),
    "neg_int": ((5, 4), lambda x: x[-1]),
    "int": ((5, 4), lambda x: x[2]),
    "int_3d": ((3, 4, 5), lambda x: x[1, :, 2]),
    # numpy returns a scalar for x[2, 3]; the tensor returns a 0-d view, which
    # numpy spells x[2, 3, ...] (see _np_fn)
    "int_int_0d": ((5, 4), lambda x: x[2, 3]),
    "reverse": ((6, 4), lambda x: x[::-1]),
    "reverse_inner": ((6, 4), lambda x: x[:, ::-1]),
    "neg_steps": ((7, 6), lambda x: x[::-2, 5:0:-2]),
    "slice_past_end": ((5,), lambda x: x[2:100]),
    "empty_slice": ((5, 4), lambda x: x[3:1]),
    "view_of_view": ((6, 8), lambda x: x[1:, ::2].T[::-1]),
    "4d_mixed": ((3, 4, 5, 6), lambda x: x[1, ..., ::-1][:, None, 2:]),
    "4d_transpose_step": ((2, 3, 4, 5), lambda x: x.transpose(3, 1, 0, 2)[::2, :, ::-1]),
}

DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.int64),
          np.dtype(np.uint8), np.dtype(np.bool_), np.dtype(np.float64)]


def _np_fn(name):
    if name == "int_int_0d":
        return lambda x: x[2, 3, ...]
    return VIEWS[name][1]


def _host(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return random_array(rng, shape, dtype, lo=-50, hi=50)


def _check_strides(t, ref):
    # strides along dims of length <= 1 are meaningless (numpy itself varies)
    got = tuple(t.strides)
    assert len(got) == ref.ndim
    if ref.size == 0:
        return
    for d in range(ref.ndim):
        if ref.shape[d] > 1:
            assert got[d] == ref.strides[d], (
                f"strides {got} != numpy {ref.strides} (axis {d})")


def _eq(got, ref):
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                  np.asarray(ref).astype(np.float64))


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_values_and_strides(ng, name):
    shape, fn = VIEWS[name]
    for dtype in (np.dtype(np.float32), np.dtype(np.int16)):
        host = _host(shape, dtype)
        t = ng.array(host)
        ref = _np_fn(name)(host)
        v = fn(t)
        assert v.shape == ref.shape
        assert v.dtype == ref.dtype
        assert v.ndim == ref.ndim and v.size == ref.size
        _check_strides(v, ref)
        got = v.get()
        assert got.shape == ref.shape
        _eq(got, ref)
        _eq(np.asarray(v), ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", list(VIEWS))
def test_write_through_view(ng, name, dtype):
    shape, fn = VIEWS[name]
    host = _host(shape, dtype, seed=1)
    t = ng.array(host)
    ref_base = host.copy()
    value = True if dtype == np.bool_ else 9
    v = fn(t)
    v[...] = value
    _np_fn(name)(ref_base)[...] = value
    _eq(t.get(), ref_base)
    # an expression reading and writing the same view (elementwise aliasing)
    v2 = fn(t)
    ref_v2 = _np_fn(name)(ref_base)
    if dtype == np.bool_:
        v2[...] = ~v2
        ref_v2[...] = ~ref_v2
    else:
        v2[...] = v2 * 2 + 1 - v2
        ref_v2[...] = ref_v2 * 2 + 1 - ref_v2
    _eq(t.get(), ref_base)


def test_view_of_expression_result_is_independent(ng):
    # reshape of a non-contiguous view: numpy copies, so must we
    host = _host((4, 6), np.float32)
    t = ng.array(host)
    r = t.T.reshape(-1)
    assert r.shape == (24,)
    _eq(r.get(), host.T.reshape(-1))
    r2 = t[:, ::2].reshape(2, 6)
    _eq(r2.get(), host[:, ::2].reshape(2, 6))
    # the base is unchanged
    _eq(t.get(), host)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32), BF16,
                                   np.dtype(np.float16)], ids=dtype_id)
def test_assign_into_views(ng, dtype):
    rng = np.random.default_rng(5)
    a = random_array(rng, (6, 8), dtype)
    b = random_array(rng, (8, 6), dtype)
    c_host = random_array(rng, (12, 8), dtype)
    A, B = ng.array(a), ng.array(b)

    cases = [
        ("strided", lambda x: x[::2], lambda X, Y: X),
        ("transposed", lambda x: x[:8, :6].T, lambda X, Y: X),
        ("negative", lambda x: x[::-2], lambda X, Y: X + 1),
        ("negative_inner", lambda x: x[1:7, ::-1], lambda X, Y: X * 2 - Y.T),
        ("rows", lambda x: x[1:3], lambda X, Y: X[1:3] + Y.T[:2]),
        ("column", lambda x: x[:6, 5], lambda X, Y: X[:, 0] * 3),
        ("ellipsis", lambda x: x[:6][..., 2:5], lambda X, Y: X[:, 1:4] - 1),
    ]
    for name, view, value in cases:
        C = ng.array(c_host)
        ref = c_host.copy()
        view(C)[...] = value(A, B)
        rv = view(ref)
        expected = value(a.astype(np.float64), b.astype(np.float64))
        rv[...] = expected.astype(dtype)
        _eq(C.get(), ref)
        # slice-assignment syntax (C[:] / C[1:3]) instead of [...]
        C2 = ng.array(c_host)
        ref2 = c_host.copy()
        tgt = view(C2)
        if tgt.ndim:
            tgt[:] = value(A, B)
        else:
            tgt[...] = value(A, B)
        view(ref2)[...] = expected.astype(dtype)
        _eq(C2.get(), ref2)
        # the untouched part of C is intact
        assert C.shape == c_host.shape, name


def test_assign_transposed_target(ng):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    A, B = ng.array(a), ng.array(b)
    C = ng.zeros((5, 4), dtype=np.float32)
    C.T[:] = A + B.T
    assert_matches(C.get(), (a + b.T).T.astype(np.float32), np.float32)
    D = ng.zeros((2, 3, 4), dtype=np.float32)
    d = np.zeros((2, 3, 4), np.float32)
    src = rng.standard_normal((4, 2, 3)).astype(np.float32)
    D.transpose(2, 0, 1)[:] = ng.array(src) * 2
    d.transpose(2, 0, 1)[:] = src * 2
    assert_matches(D.get(), d, np.float32)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.float16)],
                         ids=dtype_id)
def test_setitem_with_basic_index(ng, dtype):
    rng = np.random.default_rng(7)
    host = random_array(rng, (5, 6), dtype)
    t = ng.array(host)
    ref = host.copy()
    t[1, ::2] = 3
    ref[1, ::2] = 3
    t[-1] = t[0] + 1
    ref[-1] = ref[0] + 1
    t[2, 3] = 7
    ref[2, 3] = 7
    t[:, None, 4] = 5
    ref[:, None, 4] = 5
    t[1:3] = True
    ref[1:3] = True
    t[..., ::-3] = t[..., :2] * 2
    ref[..., ::-3] = ref[..., :2] * 2
    _eq(t.get(), ref)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint8),
                                   BF16], ids=dtype_id)
def test_assign_broadcast_and_cast(ng, dtype):
    rng = np.random.default_rng(8)
    C = ng.zeros((4, 5), dtype=dtype)
    ref = np.zeros((4, 5), dtype)
    row = (rng.integers(0, 40, size=5) / 4).astype(np.float64)
    col = rng.integers(0, 100, size=(4, 1)).astype(np.int16)
    # device copies with broadcasting and (unsafe) casting
    C[:] = ng.array(row)
    ref[:] = row
    _eq(C.get(), ref)
    C[:] = ng.array(col)
    ref[:] = col
    _eq(C.get(), ref)
    C[1:3] = ng.array(row[:, ] * 2)
    ref[1:3] = row * 2
    _eq(C.get(), ref)
    C[...] = 2.75
    ref[...] = 2.75
    _eq(C.get(), ref)
    # host copies
    h = (rng.integers(0, 400, size=(4, 5)) / 4)
    C[:] = h
    ref[:] = h
    _eq(C.get(), ref)
    C[1:3] = h[:2]
    ref[1:3] = h[:2]
    _eq(C.get(), ref)
    C[:] = h[0]  # host array broadcast over rows
    ref[:] = h[0]
    _eq(C.get(), ref)
    C[:, ::2] = h[:, :3].astype(np.float32)
    ref[:, ::2] = h[:, :3].astype(np.float32)
    _eq(C.get(), ref)


def test_assign_float_to_int_truncates_and_to_bool(ng):
    vals = np.array([[-2.75, -0.5, 0.0, 0.5, 3.9, 126.99]])
    for dt in (np.int8, np.int32, np.int64):
        C = ng.empty((1, 6), dtype=dt)
        C[:] = ng.array(vals)
        _eq(C.get(), vals.astype(dt))
    C = ng.empty((1, 6), dtype=np.bool_)
    C[:] = ng.array(vals)
    _eq(C.get(), vals.astype(np.bool_))
    C = ng.empty((1, 6), dtype=np.uint8)
    C[:] = ng.array(np.abs(vals))
    _eq(C.get(), np.abs(vals).astype(np.uint8))


# --------------------------------------------------------------------------
# overlapping self-assignment: numpy semantics (as if the value were copied)
# --------------------------------------------------------------------------

OVERLAPS = {
    "shift_right": ((10,), lambda A: (A[1:], A[:-1])),
    "shift_left": ((10,), lambda A: (A[:-1], A[1:])),
    "reverse": ((9,), lambda A: (A[:], A[::-1])),
    "reverse_2d": ((5, 6), lambda A: (A[:], A[::-1, ::-1])),
    "transpose_square": ((6, 6), lambda A: (A[:], A.T)),
    "shift_2d": ((6, 7), lambda A: (A[1:, 1:], A[:-1, :-1])),
    "shift_2d_back": ((6, 7), lambda A: (A[:-1, :-2], A[1:, 2:])),
    "shift_right_big": ((5000,), lambda A: (A[1:], A[:-1])),
    "shift_left_big": ((5000,), lambda A: (A[:-3], A[3:])),
    "reverse_big": ((4099,), lambda A: (A[:], A[::-1])),
    "strided_overlap": ((12,), lambda A: (A[::2], A[3:9])),
    "transpose_big": ((130, 130), lambda A: (A[:], A.T)),
}


@pytest.mark.parametrize("name", list(OVERLAPS))
def test_overlapping_self_copy(ng, name):
    shape, fn = OVERLAPS[name]
    host = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    A = ng.array(host)
    dst, src = fn(A)
    dst[...] = src
    ref = host.copy()
    rdst, rsrc = fn(ref)
    rdst[...] = rsrc.copy()  # the source is read as if copied first
    _eq(A.get(), ref)


@pytest.mark.parametrize("name", ["shift_right", "shift_left", "reverse", "transpose_square",
                                  "shift_2d", "shift_right_big", "reverse_big", "transpose_big"])
def test_overlapping_self_expression(ng, name):
    shape, fn = OVERLAPS[name]
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) % 97
    A = ng.array(host)
    dst, src = fn(A)
    dst[...] = src * 2 + dst
    ref = host.copy()
    rdst, rsrc = fn(ref)
    rdst[...] = rsrc * 2 + rdst
    _eq(A.get(), ref)


def test_overlap_via_tensor_with_broadcast(ng):
    host = np.arange(20, dtype=np.int32).reshape(4, 5)
    A = ng.array(host)
    A[1:] = A[0]  # row 0 broadcast into rows 1..3 of the same storage
    ref = host.copy()
    ref[1:] = ref[0]
    _eq(A.get(), ref)
    A = ng.array(host)
    A[:, 1:] = A[:, :1] + A[:, :-1]
    ref = host.copy()
    ref[:, 1:] = ref[:, :1] + ref[:, :-1]
    _eq(A.get(), ref)


# --------------------------------------------------------------------------
# expressions over view operands
# --------------------------------------------------------------------------

EXPR_CASES = {
    "transposed_plus": (((4, 6), (6, 4)), lambda x, y: x.T + y),
    "reversed_times": (((5, 6), (5, 6)), lambda x, y: x[::-1] * y[:, ::-1]),
    "steps": (((8, 9), (4, 3)), lambda x, y: x[::2, ::3] - y),
    "neg_steps": (((8, 9), (8, 9)), lambda x, y: x[::-2, ::-3] / (abs(y[1::2, ::3]) + 1)),
    "broadcast_view": (((4, 6), (6,)), lambda x, y: x[:, ::-1] * y[::-1]),
    "3d_transpose": (((3, 4, 5), (5, 3, 4)), lambda x, y: x.transpose(2, 0, 1) + y * 2),
    "3d_slices": (((6, 4, 5), (3, 4, 1)), lambda x, y: x[::2, :, ::-1] * y),
    "4d": (((2, 3, 4, 5), (5, 4, 3, 2)), lambda x, y: x.T - y[:, ::-1, :, ::-1]),
    "4d_newaxis": (((3, 5), (2, 3, 4, 5)), lambda x, y: x[None, :, None, :] + y[:, ::-1]),
    "int_index": (((4, 5, 6), (5, 6)), lambda x, y: x[-1] * y + x[0]),
    "reshaped": (((4, 6), (3, 8)), lambda x, y: x.reshape(3, 8) + y[:, ::-1]),
}


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16,
                                   np.dtype(np.int32), np.dtype(np.float64)], ids=dtype_id)
@pytest.mark.parametrize("name", list(EXPR_CASES))
def test_expressions_on_views(ng, name, dtype):
    (sa, sb), fn = EXPR_CASES[name]
    rng = np.random.default_rng(9)
    a = random_array(rng, sa, dtype)
    b = random_array(rng, sb, dtype)
    A, B = ng.array(a), ng.array(b)
    expr = fn(A, B)
    ref64 = fn(a.astype(np.float64), b.astype(np.float64))
    proxy = np.float16 if dtype == BF16 else dtype
    res_dtype = fn(a.astype(proxy), b.astype(proxy)).dtype
    if dtype == BF16 and res_dtype == np.float16:
        res_dtype = BF16
    assert expr.shape == ref64.shape
    assert expr.dtype == res_dtype
    out = ng.empty(expr.shape, dtype=expr.dtype)
    out[:] = expr
    assert_matches(out.get(), ref64.astype(res_dtype), res_dtype)
    # and into a view output (negative and strided)
    big = ng.zeros((2 * ref64.shape[0],) + ref64.shape[1:], dtype=expr.dtype)
    big[::-2] = fn(A, B)
    ref_big = np.zeros(big.shape, res_dtype)
    ref_big[::-2] = ref64.astype(res_dtype)
    assert_matches(big.get(), ref_big, res_dtype)
