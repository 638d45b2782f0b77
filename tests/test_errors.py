"""Bad input raises numpy's exceptions (with numpy's wording where numpy has
one) when the expression is BUILT -- never at assignment, never a crash."""

import re

import numpy as np
import pytest
from numpy.exceptions import AxisError

import gpuarray
from conftest import get_factory, gpu_skip_reason, new_factory


def _t(ng, shape, dtype=np.float32):
    host = np.arange(int(np.prod(shape))).reshape(shape)
    return ng.array((host % 2).astype(dtype) if dtype == np.bool_ else host.astype(dtype))


# --------------------------------------------------------------------------
# broadcasting
# --------------------------------------------------------------------------

BAD_BROADCASTS = [((3, 4), (4, 3)), ((2, 3), (3, 2, 2)), ((5,), (4,)), ((2, 1, 3), (4, 2))]


@pytest.mark.parametrize("sa,sb", BAD_BROADCASTS, ids=[f"{a}-{b}" for a, b in BAD_BROADCASTS])
def test_shape_mismatch_raises_at_build(ng, sa, sb):
    A, B = _t(ng, sa), _t(ng, sb)
    builders = [
        lambda: A + B, lambda: A * B, lambda: B - A, lambda: A < B, lambda: A == B,
        lambda: ng.maximum(A, B), lambda: ng.arctan2(A, B), lambda: ng.where(A > 0, A, B),
        lambda: ng.where(B > 0, A, 1), lambda: ng.clip(A, B, 5), lambda: (A + 1) * (B + 1),
        lambda: A + ng.exp(B),
    ]
    for build in builders:
        with pytest.raises(ValueError, match="operands could not be broadcast together"):
            build()


def test_shape_mismatch_in_deep_tree(ng):
    A, B = _t(ng, (3, 4)), _t(ng, (4, 3))
    left = ng.exp(A * 2) + 1
    right = ng.sqrt(abs(B))
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        left - right


def test_reduction_then_bad_broadcast(ng):
    A = _t(ng, (3, 4))
    B = _t(ng, (2, 4))
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        A - ng.mean(B, axis=1)  # (3,4) - (2,1)


# --------------------------------------------------------------------------
# axes
# --------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "any",
              "all", "ptp"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_bad_axis(ng, name):
    A = _t(ng, (3, 4))
    fn = getattr(ng, name)
    with pytest.raises(AxisError, match=re.escape("axis 2 is out of bounds for array of dimension 2")):
        fn(A, axis=2)
    with pytest.raises(AxisError, match=re.escape("axis -3 is out of bounds for array of dimension 2")):
        fn(A, axis=-3)
    if name not in ("argmax", "argmin"):
        with pytest.raises(AxisError, match=re.escape("axis 5 is out of bounds for array of dimension 2")):
            fn(A, axis=(0, 5))
    # AxisError is numpy's: also a ValueError and an IndexError
    with pytest.raises(ValueError):
        fn(A, axis=7)
    with pytest.raises(IndexError):
        fn(A, axis=7)
    # a 1-D tensor / 0-d tensor
    with pytest.raises(AxisError, match=re.escape("axis 1 is out of bounds for array of dimension 1")):
        fn(_t(ng, (5,)), axis=1)


@pytest.mark.parametrize("name", [n for n in REDUCTIONS if n not in ("argmax", "argmin")])
def test_duplicate_axis(ng, name):
    A = _t(ng, (3, 4, 2))
    fn = getattr(ng, name)
    for axis in ((0, 0), (1, -2), (0, 2, -1)):
        with pytest.raises(ValueError, match=re.escape("duplicate value in 'axis'")):
            fn(A, axis=axis)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction_rejects_tuple_axis(ng, name):
    A = _t(ng, (3, 4))
    with pytest.raises((TypeError, ValueError)):
        getattr(ng, name)(A, axis=(0, 1))


def test_bad_axis_inside_expression(ng):
    A = _t(ng, (3, 4))
    with pytest.raises(AxisError):
        A - ng.mean(A, axis=2)
    with pytest.raises(AxisError):
        ng.reciprocal(ng.sqrt(ng.var(A, axis=-3) + 1e-5))


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

BAD_DTYPES = [np.complex256, object, "U3", "S2", "datetime64[s]"]


@pytest.mark.parametrize("dt", BAD_DTYPES, ids=[str(np.dtype(d)) for d in BAD_DTYPES])
def test_unsupported_dtype(ng, dt):
    host = np.zeros(3, dtype=dt)
    with pytest.raises(TypeError):
        ng.array(host)
    with pytest.raises(TypeError):
        ng.empty(3, dtype=dt)
    with pytest.raises(TypeError):
        ng.zeros((2, 2), dtype=dt)
    with pytest.raises(TypeError):
        ng.ones(4, dtype=dt)
    with pytest.raises(TypeError):
        ng.full(4, 0, dt)
    A = _t(ng, (3,))
    with pytest.raises(TypeError):
        A.astype(dt)
    with pytest.raises(TypeError):
        ng.astype(A, dt)
    with pytest.raises(TypeError):
        ng.array(np.zeros(3), dtype=dt)


def test_unsupported_python_values(ng):
    A = _t(ng, (3,))
    with pytest.raises(TypeError):
        A + None
    with pytest.raises(TypeError):
        A * "abc"
    with pytest.raises(TypeError):
        ng.array(["a", "b"])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=str)
def test_ops_numpy_rejects(ng, dtype):
    A = _t(ng, (4,), dtype)
    B = _t(ng, (4,), dtype)
    I = _t(ng, (4,), np.int32)
    for build in (lambda: A & B, lambda: A | I, lambda: A ^ B, lambda: ~A, lambda: A << 1,
                  lambda: A >> I, lambda: ng.bitwise_and(A, B), lambda: ng.invert(A),
                  lambda: ng.left_shift(I, A), lambda: ng.right_shift(A, 2)):
        with pytest.raises(TypeError):
            build()
    Bo = _t(ng, (4,), np.bool_)
    for build in (lambda: Bo - Bo, lambda: -Bo, lambda: ng.negative(Bo), lambda: ng.subtract(Bo, True),
                  lambda: ng.sign(Bo)):
        with pytest.raises(TypeError):
            build()


# --------------------------------------------------------------------------
# assignment
# --------------------------------------------------------------------------


def test_assign_incompatible_shape(ng):
    C = ng.empty((4, 3), dtype=np.float32)
    A = _t(ng, (3, 4))
    msg = re.escape("could not broadcast input array from shape (3,4) into shape (4,3)")
    with pytest.raises(ValueError, match=msg):
        C[:] = A + 1
    with pytest.raises(ValueError, match=msg):
        C[:] = A
    with pytest.raises(ValueError, match=msg):
        C[...] = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=re.escape(
            "could not broadcast input array from shape (3,4) into shape (2,3)")):
        C[1:3] = A * 2
    # an expression that would broadcast but is bigger than the target
    with pytest.raises(ValueError, match="could not broadcast"):
        C[:, :1] = _t(ng, (4, 3)) * 2
    with pytest.raises(ValueError):
        C[:] = ng.sum(A, axis=0)  # (1,4) into (4,3)
    # the target is untouched after a failed assignment
    C[:] = 1
    with pytest.raises(ValueError):
        C[:] = A - 1
    np.testing.assert_array_equal(C.get(), np.ones((4, 3), np.float32))


# --------------------------------------------------------------------------
# mixing factories
# --------------------------------------------------------------------------


def test_mixing_two_cpu_factories():
    f1 = new_factory("cpu", seed=1)
    f2 = new_factory("cpu", seed=2)
    A = f1.array(np.ones((2, 3), np.float32))
    B = f2.array(np.ones((2, 3), np.float32))
    for build in (lambda: A + B, lambda: f1.maximum(A, B), lambda: f1.add(A, B),
                  lambda: f2.add(A, B), lambda: f1.where(A > 0, A, B), lambda: f1.sum(B),
                  lambda: (A * 2) - (B * 2)):
        with pytest.raises(ValueError, match="(?i)different"):
            build()
    C = f1.empty((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="(?i)different"):
        C[:] = B
    with pytest.raises(ValueError, match="(?i)different"):
        C[:] = B + 1
    with pytest.raises(ValueError, match="(?i)different"):
        f1.add(A, A, out=f2.empty((2, 3), dtype=np.float32))


def test_mixing_cpu_and_gpu():
    reason = gpu_skip_reason()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")
    g = get_factory("gpu")
    c = get_factory("cpu")
    A = g.array(np.ones((2, 3), np.float32))
    B = c.array(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="(?i)different"):
        A + B
    with pytest.raises(ValueError, match="(?i)different"):
        B * A
    C = g.empty((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="(?i)different"):
        C[:] = B


# --------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------


def test_out_wrong_shape(ng):
    A, B = _t(ng, (3, 4)), _t(ng, (3, 4))
    for shape in ((4, 3), (3,), (3, 4, 1), (12,)):
        out = ng.empty(shape, dtype=np.float32)
        with pytest.raises(ValueError):
            ng.add(A, B, out=out)
        with pytest.raises(ValueError):
            ng.sqrt(A, out=out)
    with pytest.raises(ValueError):
        ng.sum(A, axis=1, out=ng.empty((3, 1), dtype=np.float32))  # keepdims=False gives (3,)
    with pytest.raises(ValueError):
        ng.sum(A, axis=1, out=ng.empty((1, 3), dtype=np.float32))  # numpy does not broadcast out
    with pytest.raises(ValueError):
        ng.sum(A, axis=1, keepdims=False, out=ng.empty((3, 1, 1), dtype=np.float32))
    with pytest.raises(ValueError):
        ng.max(A, axis=0, out=ng.empty((4, 1), dtype=np.float32))


# --------------------------------------------------------------------------
# views
# --------------------------------------------------------------------------


def test_reshape_incompatible(ng):
    A = _t(ng, (3, 4))
    with pytest.raises(ValueError, match=re.escape("cannot reshape array of size 12 into shape (5,)")):
        A.reshape((5,))
    with pytest.raises(ValueError, match=re.escape("cannot reshape array of size 12 into shape (5,)")):
        A.reshape(5)
    with pytest.raises(ValueError, match=re.escape("cannot reshape array of size 12 into shape (5,-1)")
                       + "|" + re.escape("cannot reshape array of size 12 into shape (5,newaxis)")):
        A.reshape(5, -1)
    with pytest.raises(ValueError, match="can only specify one unknown dimension"):
        A.reshape(-1, -1)
    with pytest.raises(ValueError):
        A.reshape(2, 2, 2)


def test_transpose_bad_axes(ng):
    A = _t(ng, (3, 4))
    with pytest.raises(ValueError, match="axes don't match array"):
        A.transpose(1, 0, 2)
    with pytest.raises(ValueError, match="axes don't match array"):
        A.transpose(0)
    with pytest.raises(ValueError, match="axes don't match array"):
        _t(ng, (2, 3, 4)).transpose((1, 0))
    with pytest.raises(ValueError):
        A.transpose(0, 0)
    with pytest.raises((ValueError, AxisError)):
        A.transpose(0, 2)


def test_index_out_of_range(ng):
    A = _t(ng, (5,))
    with pytest.raises(IndexError, match=re.escape("index 5 is out of bounds for axis 0 with size 5")):
        A[5]
    with pytest.raises(IndexError, match=re.escape("index -6 is out of bounds for axis 0 with size 5")):
        A[-6]
    B = _t(ng, (3, 4))
    with pytest.raises(IndexError, match=re.escape("index 4 is out of bounds for axis 1 with size 4")):
        B[1, 4]
    with pytest.raises(IndexError, match=re.escape("index 3 is out of bounds for axis 0 with size 3")):
        B[3]
    with pytest.raises(IndexError, match="too many indices"):
        A[1, 2]
    with pytest.raises(IndexError):
        B[0, 0, 0]
    with pytest.raises(IndexError):
        B[..., 1, ...]
    # setitem too
    with pytest.raises(IndexError, match=re.escape("index 5 is out of bounds for axis 0 with size 5")):
        A[5] = 1.0


def test_index_entries_of_no_index_type_rejected(ng):
    A = _t(ng, (5, 4))
    for idx in (1.5, "a", np.array([0.5, 1.0]), ([0, 2], [1.5, 1.0]),
                (ng.array(np.array([0, 1])), np.array([1.0, 0.0]))):
        with pytest.raises((IndexError, TypeError)):
            A[idx]
        with pytest.raises((IndexError, TypeError)):
            A[idx] = 1.0


def test_len_of_0d(ng):
    t = ng.array(np.float32(1.0))
    with pytest.raises(TypeError, match=re.escape("len() of unsized object")):
        len(t)
    with pytest.raises(TypeError, match=re.escape("len() of unsized object")):
        len(_t(ng, (3, 4))[1, 2])


def test_errors_at_build_not_assignment(ng):
    """The error comes from building the tree: no output is needed."""
    A, B = _t(ng, (3, 4)), _t(ng, (4, 3))
    with pytest.raises(ValueError):
        _ = ng.exp(A) + ng.log(B)
    with pytest.raises(AxisError):
        _ = ng.sum(A, axis=3)
    with pytest.raises(TypeError):
        _ = ng.bitwise_or(A, A)


def test_gpu_unavailable_reason_is_text():
    reason = gpuarray.gpu_unavailable_reason()
    if gpuarray.gpu_available():
        assert reason is None or isinstance(reason, str)
    else:
        assert isinstance(reason, str) and reason
