"""column_stack, dstack, hsplit/vsplit/dsplit, fliplr, flipud, rot90
(gpuarray.core.stacking) and unravel_index, ravel_multi_index, indices, ix_,
tril/triu/diag_indices (gpuarray.core.index_tricks) against numpy.

Both factories, numpy as the oracle: values, shapes and dtypes; views
where numpy gives views; every rotation; C and F orders, every mode.
Errors are in test_bad_input.py.
"""
import numpy as np
import pytest

from conftest import to_host


def _same(got, expected):
    got = to_host(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def _all_same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        _same(g, e)


A = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
B = np.arange(6.0, dtype=np.float32)


def test_stacks_and_splits(ng):
    _same(ng.column_stack([B[:3], A[0, :, :2], ng.array(B[3:])]),
          np.column_stack([B[:3], A[0, :, :2], B[3:]]))
    _same(ng.dstack([B, B]), np.dstack([B, B]))
    _same(ng.dstack([A[0], ng.array(A[1])]), np.dstack([A[0], A[1]]))
    for name, args in (("hsplit", (A, 3)), ("hsplit", (B, [2, 4])), ("vsplit", (A, 2)),
                       ("dsplit", (A, [1, 3]))):
        _all_same(getattr(ng, name)(*args), getattr(np, name)(*args))


@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (2, 0), (-1, 0)], ids=str)
def test_flips_and_rotations(ng, axes):
    t = ng.array(A)
    _same(ng.fliplr(t), np.fliplr(A))
    _same(ng.flipud(t), np.flipud(A))
    for k in range(-2, 6):
        rotated = ng.rot90(t, k, axes)
        _same(rotated, np.rot90(A, k, axes))
        assert rotated.buffer is t.buffer  # a view, as numpy's


@pytest.mark.parametrize("order", ["C", "F"])
def test_flat_and_multi_indices(ng, order):
    flat = np.array([[5], [1], [0]])
    _all_same(ng.unravel_index(flat, (2, 3), order=order),
              np.unravel_index(flat, (2, 3), order=order))
    _all_same(ng.unravel_index(ng.array(np.array([7, 0, 23])), (2, 3, 4), order=order),
              np.unravel_index([7, 0, 23], (2, 3, 4), order=order))
    coords = ([1, 0, 1], [2, 1, 0])
    _same(ng.ravel_multi_index(coords, (2, 3), order=order),
          np.ravel_multi_index(coords, (2, 3), order=order))
    wild = ([3, -1, 0], [1, 7, -2])
    for mode in ("wrap", "clip", ("wrap", "clip")):
        _same(ng.ravel_multi_index(wild, (2, 3), mode=mode, order=order),
              np.ravel_multi_index(wild, (2, 3), mode=mode, order=order))


def test_grids_and_triangles(ng):
    _same(ng.indices((2, 3)), np.indices((2, 3)))
    _same(ng.indices((3, 2), dtype=np.int32), np.indices((3, 2), dtype=np.int32))
    _all_same(ng.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True))
    _all_same(ng.ix_([0, 1], [True, False, True]), np.ix_([0, 1], [True, False, True]))
    _all_same(ng.tril_indices(4, -1, 5), np.tril_indices(4, -1, 5))
    _all_same(ng.triu_indices(3), np.triu_indices(3))
    _all_same(ng.tril_indices_from(np.ones((3, 5)), 1), np.tril_indices_from(np.ones((3, 5)), 1))
    _all_same(ng.triu_indices_from(np.ones((3, 5)), 1), np.triu_indices_from(np.ones((3, 5)), 1))
    _all_same(ng.diag_indices(3, 3), np.diag_indices(3, 3))
    _all_same(ng.diag_indices_from(np.ones((4, 4))), np.diag_indices_from(np.ones((4, 4))))
    square = np.arange(16.0).reshape(4, 4)
    _same(ng.array(square)[ng.tril_indices(4)], square[np.tril_indices(4)])
