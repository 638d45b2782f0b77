"""numpy's small helpers porters reach for: inspection (gpuarray.core.inspection),
sequences and windows (gpuarray.core.sequences), apply_along_axis,
apply_over_axes, fromfunction, copyto (gpuarray.core.functional), rollaxis,
and deg2rad/rad2deg/degrees/radians/fabs/float_power (gpuarray.core.numpy_math).

Both factories, numpy as the oracle: values, shapes, dtypes and numpy's errors.
"""
import numpy as np
import pytest

from conftest import to_host

HOST = np.arange(24.0).reshape(2, 3, 4)


def _same(got, expected, rtol=0):
    got = to_host(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0)


def test_inspection(ng):
    x = ng.asarray(HOST)
    assert ng.ndim(x) == 3 and ng.ndim(x * 2) == 3 and ng.ndim([[1, 2]]) == 2
    assert ng.shape(x) == (2, 3, 4) and ng.shape(5) == ()
    assert ng.size(x) == 24 and ng.size(x, 1) == 3 and ng.size(x, -1) == 4
    assert ng.isscalar(3.0) and ng.isscalar(np.float32(1)) and not ng.isscalar(x)
    assert ng.isrealobj(x) and not ng.iscomplexobj(x) and ng.iscomplexobj(np.ones(2, complex))
    assert ng.shares_memory(x, x[1]) and ng.may_share_memory(x[:, 1], x[:, 1:])
    assert not ng.shares_memory(x[0], x[1]) and not ng.shares_memory(x, ng.asarray(HOST))
    assert ng.shares_memory(x[:, ::-1], x[:, 0])
    assert ng.broadcast_shapes((2, 1), (3,), 3) == np.broadcast_shapes((2, 1), (3,), 3)
    with pytest.raises(ValueError):
        ng.broadcast_shapes((2,), (3,))
    assert ng.promote_types("int8", "uint8") == np.int16
    assert ng.promote_types(ng.bfloat16, np.float32) == np.float32


@pytest.mark.parametrize("name,args", [
    ("logspace", (0, 3, 7)), ("logspace", (1, 2, 5, False, 2.0)), ("geomspace", (1, 1000, 4)),
    ("bartlett", (6,)), ("blackman", (5,)), ("hamming", (7,)), ("hanning", (1,)),
    ("kaiser", (8, 5.0)), ("tri", (3, 4, 1)), ("tri", (2,)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_sequences_and_windows(ng, name, args):
    _same(getattr(ng, name)(*args), getattr(np, name)(*args))


def test_vander_and_diagflat(ng):
    for x, kwargs in (([1, 2, 3], {}), (np.array([0.5, -2.0], np.float32), {"N": 4}),
                      (np.array([2, 3], np.uint8), {"increasing": True})):
        _same(ng.vander(x, **kwargs), np.vander(x, **kwargs))
        _same(ng.vander(ng.asarray(np.asarray(x)), **kwargs), np.vander(x, **kwargs))
    _same(ng.vander([], 0), np.vander([], 0))
    with pytest.raises(ValueError, match="one-dimensional"):
        ng.vander(np.ones((2, 2)))
    _same(ng.diagflat([[1, 2], [3, 4]]), np.diagflat([[1, 2], [3, 4]]))
    _same(ng.diagflat([1, 2], -1), np.diagflat([1, 2], -1))


def test_angles_fabs_float_power(ng):
    for dtype in (np.float16, np.float32, np.float64, np.int32):
        host = (np.arange(-3, 4) * 45).astype(dtype)
        x = ng.asarray(host)
        for name in ("deg2rad", "rad2deg", "degrees", "radians", "fabs"):
            want = getattr(np, name)(host)
            got = ng.evaluate(getattr(ng, name)(x))
            assert got.dtype == want.dtype, name
            np.testing.assert_allclose(to_host(got), want, rtol=2e-3 if dtype == np.float16 else 1e-12)
    base = np.array([1.5, 2.0, 4.0], np.float32)
    got = ng.evaluate(ng.float_power(ng.asarray(base), 2))
    _same(got, np.float_power(base, 2), rtol=1e-15)


def test_rollaxis(ng):
    x = ng.asarray(HOST)
    for axis, start in ((2, 0), (1, 3), (0, 2), (-1, 1), (1, 1), (2, -3)):
        _same(ng.rollaxis(x, axis, start), np.rollaxis(HOST, axis, start))
    with pytest.raises(np.exceptions.AxisError, match="'start' arg requires"):
        ng.rollaxis(x, 0, 5)
    with pytest.raises(np.exceptions.AxisError):
        ng.rollaxis(x, 3)


def test_apply_along_and_over_axes(ng):
    x = ng.asarray(HOST)
    got = ng.apply_along_axis(lambda v: ng.stack([ng.sum(v), ng.max(v)]), 1, x)
    _same(got, np.apply_along_axis(lambda v: np.stack([v.sum(), v.max()]), 1, HOST))
    got = ng.apply_along_axis(lambda v: ng.outer(v, v), 2, x)
    _same(got, np.apply_along_axis(lambda v: np.outer(v, v), 2, HOST))
    _same(ng.apply_along_axis(lambda v, k: v * k, 0, x, 3),
          np.apply_along_axis(lambda v, k: v * k, 0, HOST, 3))
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        ng.apply_along_axis(ng.sum, 0, ng.zeros((3, 0)))
    _same(ng.apply_over_axes(ng.sum, x, [0, 2]), np.apply_over_axes(np.sum, HOST, [0, 2]))
    _same(ng.apply_over_axes(ng.max, x, -1), np.apply_over_axes(np.max, HOST, -1))


def test_fromfunction_and_copyto(ng):
    _same(ng.evaluate(ng.fromfunction(lambda i, j: i * 10 + j, (2, 3))),
          np.fromfunction(lambda i, j: i * 10 + j, (2, 3)))
    _same(ng.evaluate(ng.fromfunction(lambda i: i % 2, (5,), dtype=int)),
          np.fromfunction(lambda i: i % 2, (5,), dtype=int))
    dst, want = ng.zeros(4, np.float64), np.zeros(4)
    mask = np.array([True, False, True, False])
    ng.copyto(dst, [1.0, 2.0, 3.0, 4.0], where=ng.asarray(mask))
    np.copyto(want, [1.0, 2.0, 3.0, 4.0], where=mask)
    _same(dst, want)
    ng.copyto(dst, 7)
    _same(dst, np.full(4, 7.0))
    ints = ng.zeros(3, np.int32)
    with pytest.raises(TypeError, match="same_kind"):
        ng.copyto(ints, 1.5)
    with pytest.raises(TypeError, match="same_kind"):
        ng.copyto(ints, ng.ones(3, np.float32))
    ng.copyto(ints, ng.ones(3, np.float32), casting="unsafe")
    _same(ints, np.ones(3, np.int32))
    with pytest.raises(TypeError, match="argument 1"):
        ng.copyto([0, 0], 1)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_gcd_and_lcm(ng, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), 200).astype(dtype)
    b = rng.integers(max(info.min, -1000), min(info.max, 1000), 200).astype(dtype)
    a[:4], b[:4] = [0, info.min, 0, 12], [0, 0, 5, 18]
    for name in ("gcd", "lcm"):
        want = getattr(np, name)(a, b)
        _same(ng.evaluate(getattr(ng, name)(ng.asarray(a), ng.asarray(b))), want)
        _same(ng.evaluate(getattr(ng, name)(ng.asarray(a), 6)), getattr(np, name)(a, 6))
    with pytest.raises(TypeError):
        ng.gcd(ng.ones(2, np.float32), 2)
