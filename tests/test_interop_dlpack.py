"""Tests of the zero-copy interop layer (DLPack and __cuda_array_interface__).

They run on the CPU: numpy speaks DLPack for host memory (kDLCPU), so numpy
arrays stand in for device tensors on both sides of the protocol.
"""
import ctypes
import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

from gpuarray.cuda import interop


BF16 = np.dtype(ml_dtypes.bfloat16)

_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))


class Producer:
    """Hands out one prepared capsule through the DLPack protocol."""

    def __init__(self, capsule, device=(interop.kDLCPU, 0)):
        self.capsule, self.device, self.calls = capsule, device, []

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        capsule, self.capsule = self.capsule, None  # the consumer's only ref
        return capsule

    def __dlpack_device__(self):
        return self.device


def export(arr, view=None, **kwargs):
    """Export ``view`` (default ``arr``) with ``arr`` as the owner."""
    view = arr if view is None else view
    return interop.to_dlpack(view.ctypes.data, view.shape, view.strides,
                             view.dtype, interop.kDLCPU, 0, arr, **kwargs)


def collect():
    gc.collect()


def live_exports():
    collect()
    return len(interop._exported)


# -- to_dlpack, consumed by numpy ---------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8",
                                   "uint16", "int64", "uint64", "bool"])
def test_numpy_imports_exported_memory(versioned, dtype):
    a = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
    got = np.from_dlpack(Producer(export(a, versioned=versioned)))
    assert got.dtype == a.dtype and got.shape == a.shape
    assert got.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(got, a)


@pytest.mark.parametrize("make_view", [
    lambda a: a.T, lambda a: a[::-1], lambda a: a[1:, ::-2], lambda a: a[:, 1],
    lambda a: a[::2, ::3].T,
], ids=["transposed", "reversed", "sliced-negative", "column", "strided-T"])
def test_numpy_imports_strided_views(make_view):
    a = np.arange(42, dtype=np.float32).reshape(6, 7)
    view = make_view(a)
    got = np.from_dlpack(Producer(export(a, view)))
    assert got.strides == view.strides
    assert got.ctypes.data == view.ctypes.data
    np.testing.assert_array_equal(got, view)


def test_writes_through_are_visible_both_ways():
    a = np.zeros((3, 4), dtype=np.int32)
    # numpy imports legacy (unversioned) capsules read-only.
    got = np.from_dlpack(Producer(export(a, a.T, versioned=True)))
    got[1, 2] = 7  # got is a.T
    assert a[2, 1] == 7
    a[0, 3] = -5
    assert got[3, 0] == -5
    ro = np.from_dlpack(Producer(export(a, versioned=True, readonly=True)))
    assert not ro.flags.writeable and ro.ctypes.data == a.ctypes.data


def test_owner_kept_alive_then_released():
    a = np.arange(10.0)
    ref = weakref.ref(a)
    got = np.from_dlpack(Producer(export(a)))
    del a
    collect()
    assert ref() is not None
    np.testing.assert_array_equal(got, np.arange(10.0))
    del got
    collect()
    assert ref() is None
    assert live_exports() == 0


def test_unconsumed_capsule_releases_owner():
    a = np.arange(10.0)
    ref = weakref.ref(a)
    capsule = export(a, versioned=True)
    del a
    collect()
    assert ref() is not None
    del capsule
    collect()
    assert ref() is None
    assert live_exports() == 0


@pytest.mark.parametrize("versioned", [False, True])
def test_rejected_capsule_keeps_consumer_error_and_is_freed(versioned):
    # numpy rejects CUDA memory after taking the capsule, with its exception
    # set; that exception must reach the user and nothing may leak.
    a = np.arange(4.0)
    ref = weakref.ref(a)
    capsule = interop.to_dlpack(a.ctypes.data, a.shape, None, a.dtype,
                                interop.kDLCUDA, 0, a, versioned=versioned)
    producer = Producer(capsule)
    del a, capsule
    with pytest.raises((RuntimeError, BufferError), match="[Dd]evice"):
        np.from_dlpack(producer)
    collect()
    assert ref() is None
    assert live_exports() == 0


def test_capsule_names():
    a = np.arange(3.0)
    assert _is_valid(export(a), b"dltensor")
    assert _is_valid(export(a, versioned=True), b"dltensor_versioned")


def test_none_strides_mean_c_contiguous():
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    capsule = interop.to_dlpack(a.ctypes.data, a.shape, None, a.dtype,
                                interop.kDLCPU, 0, a)
    got = np.from_dlpack(Producer(capsule))
    assert got.strides == (4, 1)
    np.testing.assert_array_equal(got, a)


def test_zero_d_and_empty_exports():
    s = np.array(3.5)
    np.testing.assert_array_equal(np.from_dlpack(Producer(export(s))), s)
    e = np.zeros((0, 3), np.float32)
    assert np.from_dlpack(Producer(export(e))).shape == (0, 3)


def test_stride_not_a_whole_element_raises():
    a = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="multiples of the item size 4"):
        interop.to_dlpack(a.ctypes.data, (2,), (6,), a.dtype, interop.kDLCPU, 0, a)
    with pytest.raises(ValueError, match="do not match shape"):
        interop.to_dlpack(a.ctypes.data, (2,), (4, 4), a.dtype, interop.kDLCPU, 0, a)
    assert live_exports() == 0


@pytest.mark.parametrize("dtype", [np.complex256, ">f4", "U3", [("a", "i4")]])
def test_unshareable_dtypes_raise_type_error(dtype):
    with pytest.raises(TypeError, match="cannot share dtype"):
        interop.to_dlpack(0, (1,), None, dtype, interop.kDLCPU, 0, None)


# -- from_dlpack ---------------------------------------------------------------

def test_from_dlpack_of_numpy_array():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    buf = interop.from_dlpack(a)
    assert buf.ptr == int(buf) == a.ctypes.data
    assert buf.shape == (4, 5) and buf.strides == (20, 4)
    assert buf.dtype == np.float32
    assert (buf.device_type, buf.device_id) == (interop.kDLCPU, 0)
    assert buf.readonly is False


def test_from_dlpack_of_numpy_views():
    a = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    for view in (a.transpose(2, 0, 1), a[::-1, 1:, ::2], a[..., 3]):
        buf = interop.from_dlpack(view)
        assert buf.ptr == view.ctypes.data
        assert buf.shape == view.shape and buf.strides == view.strides
        assert buf.dtype == np.int16


def test_from_dlpack_readonly_flag():
    a = np.arange(3.0)
    a.flags.writeable = False
    assert interop.from_dlpack(a).readonly is True


def test_from_dlpack_releases_producer_once_on_gc():
    a = np.arange(8.0)
    ref = weakref.ref(a)
    buf = interop.from_dlpack(a)
    del a
    collect()
    assert ref() is not None  # numpy's manager holds the array
    del buf
    collect()
    assert ref() is None


def test_release_is_idempotent():
    a = np.arange(8.0)
    ref = weakref.ref(a)
    buf = interop.from_dlpack(a)
    del a
    buf.release()
    buf.release()
    collect()
    assert ref() is None
    del buf
    collect()


@pytest.mark.parametrize("versioned", [False, True])
def test_round_trip_through_own_producer_runs_deleter_once(versioned):
    a = np.arange(6, dtype=np.uint32).reshape(2, 3)
    ref = weakref.ref(a)
    capsule = export(a, a.T, versioned=versioned)
    buf = interop.from_dlpack(capsule)
    assert _is_valid(capsule, b"used_dltensor_versioned" if versioned
                     else b"used_dltensor")
    assert (buf.ptr, buf.shape, buf.strides) == (a.ctypes.data, (3, 2), (4, 12))
    del a, capsule  # consumed: dropping the capsule must not free the tensor
    collect()
    assert ref() is not None and live_exports() == 1
    del buf
    collect()
    assert ref() is None and live_exports() == 0


_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


def _hand_made_capsule(keep, data, shape, dl_dtype=(2, 32, 1), deleter=None):
    """A legacy capsule with NULL strides, built by hand like a C producer."""
    managed = interop.DLManagedTensor()
    shape = (ctypes.c_int64 * len(shape))(*shape)
    t = managed.dl_tensor
    t.data, t.byte_offset = ctypes.addressof(data), 8  # skip 8 bytes
    t.device, t.ndim, t.shape = interop.DLDevice(interop.kDLCPU, 0), len(shape), shape
    t.dtype = interop.DLDataType(*dl_dtype)
    if deleter is not None:
        managed.deleter = deleter
    keep.extend([managed, shape, data])
    return _capsule_new(ctypes.addressof(managed), b"dltensor", None)


def test_counting_deleter_called_exactly_once():
    calls, keep = [], []
    deleter = interop.DLPackDeleter(calls.append)
    data = (ctypes.c_float * 8)(*range(8))
    capsule = _hand_made_capsule(keep, data, (2, 3), deleter=deleter)
    buf = interop.from_dlpack(capsule)
    assert buf.ptr == ctypes.addressof(data) + 8
    assert buf.shape == (2, 3) and buf.strides == (12, 4)  # from NULL strides
    del capsule
    collect()
    assert calls == []
    buf.release()
    del buf
    collect()
    assert calls == [ctypes.addressof(keep[0])]


@pytest.mark.parametrize("code, bits, lanes, message", [
    (5, 32, 1, "code=5, bits=32"), (2, 32, 4, "4 lanes"), (3, 64, 1, "code=3"),
    (2, 8, 1, "bits=8"), (0, 128, 1, "bits=128")])
def test_unsupported_dlpack_dtypes_raise_and_leave_capsule(code, bits, lanes, message):
    keep = []
    capsule = _hand_made_capsule(keep, (ctypes.c_char * 64)(), (4,), (code, bits, lanes))
    with pytest.raises(TypeError, match=message):
        interop.from_dlpack(capsule)
    assert _is_valid(capsule, b"dltensor")  # not consumed


def test_consumed_capsule_cannot_be_imported_twice():
    capsule = interop.to_dlpack(np.arange(2.0).ctypes.data, (2,), None,
                                np.float64, interop.kDLCPU, 0, None)
    buf = interop.from_dlpack(capsule)
    with pytest.raises(BufferError, match="already consumed"):
        interop.from_dlpack(capsule)
    del buf


def test_non_dlpack_object_raises_type_error():
    with pytest.raises(TypeError, match="does not support DLPack"):
        interop.from_dlpack([1, 2, 3])


def test_old_producer_without_max_version():
    a = np.arange(3.0)

    class Old:
        def __dlpack__(self, stream=None):
            return export(a)

        def __dlpack_device__(self):
            return (interop.kDLCPU, 0)

    assert interop.from_dlpack(Old()).ptr == a.ctypes.data


@pytest.mark.parametrize("device, stream, expected", [
    (interop.kDLCUDA, None, 1), (interop.kDLCUDA, 7, 7), (interop.kDLCPU, None, None)])
def test_producer_is_given_the_stream_for_cuda_only(device, stream, expected):
    producer = Producer(export(np.arange(3.0)), device=(device, 0))
    interop.from_dlpack(producer, stream=stream)
    assert producer.calls == [{"stream": expected, "max_version": (1, 0)}]


# -- bfloat16 ------------------------------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
def test_bfloat16_round_trip_through_own_from_dlpack(versioned):
    a = np.array([1.5, -2.0, 3.25, 0.0], dtype=BF16)
    buf = interop.from_dlpack(export(a, versioned=versioned))
    assert buf.dtype == BF16 and buf.strides == (2,)
    raw = np.ctypeslib.as_array((ctypes.c_uint16 * 4).from_address(buf.ptr))
    np.testing.assert_array_equal(raw, a.view(np.uint16))


def test_bfloat16_round_trip_through_numpy():
    a = np.array([1.5, -2.0, 3.25], dtype=BF16)
    try:
        got = np.from_dlpack(Producer(export(a, versioned=True)))
    except (BufferError, TypeError, RuntimeError) as exc:
        pytest.skip(f"numpy's DLPack does not support bfloat16: {exc}")
    np.testing.assert_array_equal(got.view(np.uint16), a.view(np.uint16))


# -- __cuda_array_interface__ -----------------------------------------------

def test_cuda_array_interface_contiguous():
    cai = interop.cuda_array_interface(0x7000, (2, 3), (12, 4), np.float32)
    assert cai == {"shape": (2, 3), "typestr": "<f4", "data": (0x7000, False),
                   "strides": None, "version": 3, "stream": None}


@pytest.mark.parametrize("shape, strides", [((2, 3), None), ((1, 3), (99, 2)),
                                            ((4, 1), (2, 7))])
def test_cuda_array_interface_c_contiguous_strides_are_none(shape, strides):
    cai = interop.cuda_array_interface(0x7000, shape, strides, np.float16)
    assert cai["strides"] is None and cai["typestr"] == "<f2"


def test_cuda_array_interface_strided_and_readonly():
    a = np.zeros((4, 6), np.int16)[::2, ::-3]
    cai = interop.cuda_array_interface(0x8000, a.shape, a.strides, a.dtype,
                                       readonly=True, stream=2)
    assert cai["strides"] == (24, -6) and cai["shape"] == (2, 2)
    assert cai["data"] == (0x8000, True) and cai["stream"] == 2
    assert cai["typestr"] == "<i2" and cai["version"] == 3


@pytest.mark.parametrize("dtype, typestr", [(np.bool_, "|b1"), (np.uint8, "|u1"),
                                            (np.int64, "<i8"), (np.float64, "<f8")])
def test_cuda_array_interface_typestrs(dtype, typestr):
    assert interop.cuda_array_interface(1, (1,), None, dtype)["typestr"] == typestr


def test_cuda_array_interface_zero_size_has_null_pointer():
    cai = interop.cuda_array_interface(0x9000, (0, 4), None, np.float32)
    assert cai["data"] == (0, False)


def test_cuda_array_interface_bfloat16_points_to_dlpack():
    with pytest.raises(TypeError, match="DLPack"):
        interop.cuda_array_interface(0x7000, (2,), None, BF16)


def test_cuda_array_interface_rejects_stream_zero():
    with pytest.raises(ValueError, match="stream 0"):
        interop.cuda_array_interface(0x7000, (2,), None, np.float32, stream=0)
