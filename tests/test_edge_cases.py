"""Inputs at the edges of what the factories take, against numpy.

Big-endian host data on every upload path (the bytes are swapped, the
dtypes reported are native), sizes no allocator can take (numpy's
ValueError before anything is allocated) and sizes the memory cannot hold
(MemoryError naming the bytes), boolean axes, and ``CPU.from_dlpack``
(host producers shared without a copy, CUDA producers refused).
Reductions over no axes and the inner product of two vectors are in
test_reductions and test_gemm.
"""
import gc

import numpy as np
import pytest

import gpuarray
from gpuarray.cuda import interop
from conftest import NUMPY_DTYPES, dtype_id

#: dtypes whose byte order matters
MULTIBYTE = [d for d in NUMPY_DTYPES if d.itemsize > 1]


def _big_endian(x):
    return x.astype(x.dtype.newbyteorder(">"))


def _host(dtype, shape=(4, 6)):
    return (np.arange(np.prod(shape)).reshape(shape) % 100 + 1).astype(dtype)


# --------------------------------------------------------------------------
# byte order
# --------------------------------------------------------------------------

#: ways host data reaches a tensor: (name, function(ng, big-endian host) -> tensor)
UPLOADS = {
    "array": lambda ng, h: ng.array(h),
    "array_dtype": lambda ng, h: ng.array(h, dtype=h.dtype),
    "array_list": lambda ng, h: ng.array(list(h)),
    "setitem": lambda ng, h: _assigned(ng, h, ...),
    "setitem_slice": lambda ng, h: _assigned(ng, h, np.s_[1:, ::2]),
    "transposed": lambda ng, h: ng.array(h.T).T,
}


def _assigned(ng, host, key):
    t = ng.zeros(host.shape, host.dtype)
    t[key] = host[key]
    return t


@pytest.mark.parametrize("path", list(UPLOADS))
@pytest.mark.parametrize("dtype", MULTIBYTE, ids=dtype_id)
def test_big_endian_uploads(ng, dtype, path):
    host = _host(dtype)
    expected = UPLOADS[path](gpuarray.CPU(), host)  # from native data
    t = UPLOADS[path](ng, _big_endian(host))
    assert t.dtype == dtype and t.dtype.isnative and str(t.dtype) == dtype.name
    got = t.get()
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, expected.get())


def test_big_endian_dtypes_are_reported_native(ng):
    for make in (lambda: ng.empty(3, ">f4"), lambda: ng.zeros((2, 2), ">i8"),
                 lambda: ng.astype(ng.ones(3), ">i2"), lambda: ng.array(np.float32(2), ">f8")):
        assert make().dtype.isnative
    x = ng.array(np.arange(5, dtype=">f4"))
    y = ng.empty(5, np.float32)
    y[:] = x * np.array(2, ">f4")  # a 0-d big-endian array is a scalar operand
    np.testing.assert_array_equal(y.get(), np.arange(5) * 2)


# --------------------------------------------------------------------------
# sizes
# --------------------------------------------------------------------------

SIZES = [
    ((2**40, 2**40), np.float32),
    ((2**62, 8), np.float32),
    ((2**61,), np.float64),       # exactly 2**64 bytes
    ((0, 2**62, 100), np.uint8),  # numpy counts the other axes too
    ((2**64,), np.uint8),
    ((2**63, 0), np.uint8),
    ((-1,), np.float32),
    ((3, -2), np.int8),
]
CREATORS = {
    "empty": lambda f, shape, dtype: f.empty(shape, dtype),
    "zeros": lambda f, shape, dtype: f.zeros(shape, dtype),
    "full": lambda f, shape, dtype: f.full(shape, 1, dtype),
}


@pytest.mark.parametrize("creator", list(CREATORS))
@pytest.mark.parametrize("shape,dtype", SIZES, ids=[str(s) for s, _ in SIZES])
def test_impossible_sizes_raise_numpys_error(ng, shape, dtype, creator):
    with pytest.raises(Exception) as expected:
        CREATORS[creator](np, shape, dtype)
    before = ng.stats().get("device_allocations")
    with pytest.raises(expected.type) as got:
        CREATORS[creator](ng, shape, dtype)
    assert str(got.value).startswith(str(expected.value))
    assert ng.stats().get("device_allocations") == before


def test_too_big_names_the_size(ng):
    with pytest.raises(ValueError, match=f"{2**80 * 4} bytes"):
        ng.empty((2**40, 2**40), np.float32)


def test_out_of_memory_names_the_bytes(ng):
    nbytes = 2**50  # fits in 64 bits; no host or device holds a PiB
    with pytest.raises(MemoryError, match=str(nbytes)):
        ng.empty((nbytes // 4,), np.float32)
    np.testing.assert_array_equal(ng.ones(3).get(), np.ones(3, np.float32))  # still usable


# --------------------------------------------------------------------------
# axes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("axes", [(True, False), (np.True_, 0), (1.0, 0), ("1", 0)], ids=str)
def test_transpose_refuses_non_integer_axes(ng, axes):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError):
        x.transpose(*axes)
    with pytest.raises(TypeError):
        ng.array(x).transpose(*axes)


# --------------------------------------------------------------------------
# from_dlpack
# --------------------------------------------------------------------------

DLPACK_VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "reversed": lambda a: a[::-1, ::-2],
    "row": lambda a: a[2],
    "column": lambda a: a[:, 3],
    "0-d": lambda a: a[1, 1, ...],
    "empty": lambda a: a[:0],
}


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.bool_)],
                         ids=dtype_id)
@pytest.mark.parametrize("view", list(DLPACK_VIEWS))
def test_cpu_from_dlpack_shares_host_memory(view, dtype):
    ng = gpuarray.CPU()
    base = _host(dtype, (5, 6))
    source = DLPACK_VIEWS[view](base)
    t = ng.from_dlpack(source)
    assert (t.shape, t.dtype) == (source.shape, source.dtype)
    np.testing.assert_array_equal(t.get(), source)
    if source.size:
        t[...] = ng.logical_not(t) if dtype == np.bool_ else t * 2
        expected = ~_host(dtype, (5, 6)) if dtype == np.bool_ else _host(dtype, (5, 6)) * 2
        np.testing.assert_array_equal(source, DLPACK_VIEWS[view](expected))


def test_cpu_from_dlpack_keeps_the_producer_alive():
    ng = gpuarray.CPU()
    source = np.arange(1000, dtype=np.float64)
    t = ng.from_dlpack(source)[::100]
    del source
    gc.collect()
    np.testing.assert_array_equal((t + 1).get(), np.arange(0, 1000, 100) + 1)


def test_cpu_from_dlpack_read_only_memory():
    source = np.arange(4.0)
    source.flags.writeable = False
    t = gpuarray.CPU().from_dlpack(source)
    np.testing.assert_array_equal(t.get(), source)
    with pytest.raises(ValueError, match="read-only"):
        t[...] = 0


class _CudaProducer:
    """Says it holds CUDA memory; fails the test if asked for it."""

    def __dlpack_device__(self):
        return (interop.kDLCUDA, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("the producer's memory was taken")


def test_cpu_from_dlpack_refuses_device_memory():
    ng = gpuarray.CPU()
    with pytest.raises(ValueError, match="copy it to the host.*GPU"):
        ng.from_dlpack(_CudaProducer())
    # a bare capsule says where its memory is only once opened
    owner = np.zeros(4, np.float32)
    capsule = interop.to_dlpack(owner.ctypes.data, (4,), (4,), owner.dtype, interop.kDLCUDA, 0,
                                owner)
    with pytest.raises(ValueError, match="copy it to the host"):
        ng.from_dlpack(capsule)


def test_from_dlpack_on_both_factories(ng):
    """Each factory imports memory of its own kind and refuses the other's."""
    host = np.arange(6, dtype=np.float32)
    if isinstance(ng, gpuarray.CPU):
        np.testing.assert_array_equal(ng.from_dlpack(host).get(), host)
        refused = _CudaProducer()
    else:
        t = ng.array(host)
        np.testing.assert_array_equal(ng.from_dlpack(t).get(), host)
        refused = host
    with pytest.raises(ValueError):
        ng.from_dlpack(refused)
