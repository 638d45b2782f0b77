"""The array API standard's names on a factory (gpuarray.core.array_api):
dtypes and constants as attributes, the standard's names of numpy's
functions, the dtype functions, reshape/transpose, real/imag/conj,
``x.device``/``to_device``/``mT`` and ``__array_namespace_info__``.

Both factories, numpy (and its array API names) as the oracle.
"""
import numpy as np
import pytest

from conftest import to_host

X = np.linspace(0.1, 0.9, 12).reshape(3, 4)


@pytest.mark.parametrize("ours,numpys,args", [
    ("acos", "arccos", (X,)), ("acosh", "arccosh", (X + 1,)), ("asin", "arcsin", (X,)),
    ("asinh", "arcsinh", (X,)), ("atan", "arctan", (X,)), ("atan2", "arctan2", (X, X[::-1])),
    ("atanh", "arctanh", (X,)), ("pow", "power", (X, 2.5)),
    ("bitwise_invert", "invert", (np.arange(6, dtype=np.int16),)),
    ("bitwise_left_shift", "left_shift", (np.arange(6, dtype=np.int32), 2)),
    ("bitwise_right_shift", "right_shift", (np.arange(6, dtype=np.uint8) * 9, 1)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_the_standards_names_of_numpys_functions(ng, ours, numpys, args):
    got = getattr(ng, ours)(*(ng.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
    want = getattr(np, numpys)(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(to_host(got), want, rtol=1e-12)


def test_dtypes_and_constants_are_attributes(ng):
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64"):
        assert getattr(ng, name) == np.dtype(name)
    assert ng.bfloat16.name == "bfloat16"
    assert (ng.e, ng.pi, ng.newaxis) == (np.e, np.pi, None)
    assert np.isinf(ng.inf) and np.isnan(ng.nan)
    assert ng.__array_api_version__ == "2024.12"
    assert ng.ones(2).__array_namespace__() is ng


def test_dtype_functions(ng):
    assert ng.isdtype(ng.float32, "real floating") and ng.isdtype(ng.bfloat16, "real floating")
    assert ng.isdtype(ng.uint8, ("bool", "unsigned integer"))
    assert not ng.isdtype(ng.int8, "real floating") and not ng.isdtype(ng.float64, "complex floating")
    assert ng.isdtype(ng.complex64, "complex floating") and not ng.isdtype(ng.complex64, "real floating")
    assert ng.isdtype(ng.int64, ng.int64) and ng.isdtype(ng.bool, "bool")
    with pytest.raises(ValueError, match="unknown dtype kind"):
        ng.isdtype(ng.int8, "integer")
    with pytest.raises(TypeError):
        ng.isdtype("int8", "integral")
    assert ng.can_cast(ng.int8, ng.float32) and not ng.can_cast(ng.float64, ng.float32)
    assert ng.can_cast(ng.ones(2, np.int16), ng.int32)
    assert ng.result_type(ng.int8, ng.uint8) == np.int16
    assert ng.result_type(ng.ones(2, np.float32), 1.0) == np.float32
    assert ng.result_type(ng.int8, 1) == np.int8
    with pytest.raises(ValueError):
        ng.result_type()
    assert ng.finfo(ng.float32).eps == np.finfo(np.float32).eps
    assert ng.finfo(ng.ones(2, ng.bfloat16)).eps == 2.0 ** -7
    assert ng.iinfo(ng.int16).max == 32767


def test_reshape_transpose_concat_and_matrix_transpose(ng):
    host = np.arange(24.0).reshape(2, 3, 4)
    x = ng.asarray(host)
    np.testing.assert_array_equal(to_host(ng.reshape(x, (4, 6))), host.reshape(4, 6))
    np.testing.assert_array_equal(to_host(ng.reshape(x * 2, (-1,))), (host * 2).ravel())
    copied = ng.reshape(x, (6, 4), copy=True)
    copied[...] = 0
    assert to_host(x).sum() == host.sum()
    with pytest.raises(ValueError, match="without copying"):
        ng.reshape(x.T, (24,), copy=False)
    np.testing.assert_array_equal(to_host(ng.transpose(x)), host.T)
    np.testing.assert_array_equal(to_host(ng.transpose(x, (1, 0, 2))), host.transpose(1, 0, 2))
    np.testing.assert_array_equal(to_host(ng.matrix_transpose(x)), np.swapaxes(host, -1, -2))
    np.testing.assert_array_equal(to_host(x.mT), np.swapaxes(host, -1, -2))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        ng.matrix_transpose(ng.ones(3))
    np.testing.assert_array_equal(to_host(ng.concat([x, x], axis=1)), np.concatenate([host, host], 1))
    np.testing.assert_array_equal(to_host(ng.concat([x, x], axis=None)),
                                  np.concatenate([host, host], None))


def test_real_imag_conj_positive(ng):
    host = np.array([1.5, -2.0, 0.0], np.float32)
    x = ng.asarray(host)
    for name in ("real", "conj", "conjugate", "positive"):
        np.testing.assert_array_equal(to_host(ng.evaluate(getattr(ng, name)(x))), host)
    imag = ng.imag(x)
    assert imag.dtype == np.float32
    np.testing.assert_array_equal(to_host(imag), np.zeros(3, np.float32))
    with pytest.raises(TypeError):
        ng.positive(ng.ones(2, np.bool_))


def test_device_and_namespace_info(ng):
    x = ng.ones((2, 3))
    assert x.device == ng.array_api_device == (x * 2).device
    assert x.to_device(x.device) is x
    with pytest.raises(ValueError, match="cannot move"):
        x.to_device("somewhere")
    info = ng.__array_namespace_info__()
    assert info.default_device() == x.device and info.devices() == [x.device]
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes(kind="integral")) == {f"{s}int{n}" for s in ("", "u") for n in (8, 16, 32, 64)}
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}


def test_reduction_dtype_correction_and_clip_keywords(ng):
    host = np.array([200, 100, 7], np.uint8)
    x = ng.asarray(host)
    for dtype in (np.uint8, np.int64, np.float32):
        for name in ("sum", "prod"):
            got = ng.evaluate(getattr(ng, name)(x, dtype=dtype))
            want = getattr(np, name)(host, dtype=dtype)
            assert got.dtype == want.dtype and to_host(got) == want
    data = np.linspace(0, 1, 7)
    y = ng.asarray(data)
    for name in ("var", "std"):
        np.testing.assert_allclose(to_host(getattr(ng, name)(y, correction=1)),
                                   getattr(np, name)(data, correction=1), rtol=1e-12)
        with pytest.raises(ValueError, match="can't be provided simultaneously"):
            getattr(ng, name)(y, ddof=1, correction=1)
    np.testing.assert_array_equal(to_host(ng.clip(y, min=0.2, max=0.5)), np.clip(data, min=0.2, max=0.5))
    np.testing.assert_array_equal(to_host(ng.clip(y, max=0.5)), np.clip(data, max=0.5))
    np.testing.assert_array_equal(to_host(ng.clip(y, 0.2, None)), np.clip(data, 0.2, None))
    with pytest.raises(ValueError, match="is forbidden"):
        ng.clip(y, 0.1, None, max=0.5)


def test_device_and_copy_keywords(ng):
    device = ng.array_api_device
    for make in (lambda **kw: ng.zeros(2, **kw), lambda **kw: ng.ones((2,), **kw),
                 lambda **kw: ng.empty(2, **kw), lambda **kw: ng.full(2, 7, **kw),
                 lambda **kw: ng.arange(3, **kw), lambda **kw: ng.linspace(0, 1, 3, **kw),
                 lambda **kw: ng.eye(2, **kw), lambda **kw: ng.asarray([1, 2], **kw),
                 lambda **kw: ng.zeros_like(ng.ones(2), **kw)):
        assert make(device=device).device == device
        with pytest.raises(ValueError, match="makes arrays on"):
            make(device="elsewhere")
    t = ng.ones(3)
    assert ng.asarray(t, copy=False) is t and ng.asarray(t) is t
    copied = ng.asarray(t, copy=True)
    assert copied is not t and np.array_equal(copied.get(), t.get())
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        ng.asarray([1, 2], copy=False)
    assert ng.astype(t, np.float64, copy=False) is t and t.astype(np.float64, copy=False) is t
    assert ng.astype(t, np.float32, copy=False).dtype == np.float32
    assert ng.zeros(2, dtype=None).dtype == np.float64 and ng.ones(2, dtype=None).dtype == np.float64


def test_diff_prepend_append(ng):
    x = np.array([[1.0, 4, 9], [2, 3, 7]])
    t = ng.array(x)
    for kwargs in ({"prepend": 0}, {"append": [[5.0], [6.0]]}, {"axis": 0, "prepend": x[:1]},
                   {"n": 2, "prepend": -1, "append": 10}):
        got = ng.evaluate(ng.diff(t, **kwargs)).get()
        np.testing.assert_array_equal(got, np.diff(x, **kwargs))


def test_scalar_conversions_and_dlpack(ng):
    assert complex(ng.asarray(1.5)) == 1.5 + 0j
    assert complex(ng.asarray(2 - 1j)) == 2 - 1j
    t = ng.array(np.arange(4.0))
    assert t.__dlpack_device__()[0] in (1, 2)
    if t.__dlpack_device__()[0] == 1:  # host memory: numpy imports it without a copy
        assert np.array_equal(np.from_dlpack(t), np.arange(4.0))
    assert ng.result_type(ng.int8, True) == np.int8 and ng.result_type(ng.int8, 1.0) == np.float64


def test_finfo_limits_are_python_floats(ng):
    for dtype in (ng.float16, ng.float32, ng.float64, ng.bfloat16, ng.complex64):
        info = ng.finfo(dtype)
        assert all(isinstance(getattr(info, k), float) for k in ("eps", "max", "min", "smallest_normal"))
        assert isinstance(info.bits, int)
    assert ng.finfo(ng.complex64).dtype == np.float32 and ng.finfo(ng.complex128).bits == 64


def test_dlpack_copies_when_asked(ng):
    t = ng.array(np.arange(4.0))
    copied = ng.from_dlpack(t, copy=True)
    copied[0] = 9.0
    assert t.get()[0] == 0.0 and copied.get()[0] == 9.0
    assert ng.from_dlpack(t, device=ng.array_api_device).get()[1] == 1.0
    with pytest.raises(ValueError, match="makes arrays on"):
        ng.from_dlpack(t, device="elsewhere")
    capsule_copy = ng.from_dlpack(_Producer(t))  # __dlpack__(copy=True) exports a copy
    capsule_copy[1] = 7.0
    assert t.get()[1] == 1.0


class _Producer:
    """Hands out its tensor's DLPack capsule with copy=True."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        kwargs.pop("copy", None)
        return self.tensor.__dlpack__(copy=True, **kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()
