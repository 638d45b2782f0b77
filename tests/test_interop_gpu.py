"""Zero-copy sharing of device memory with PyTorch and CuPy (GPU only)."""
import numpy as np
import pytest

import gpuarray

torch = pytest.importorskip("torch", reason="PyTorch is not installed")


@pytest.fixture(scope="module")
def gpu():
    if not gpuarray.gpu_available():
        pytest.skip(f"no GPU: {gpuarray.gpu_unavailable_reason()}")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    return gpuarray.GPU(seed=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64])
def test_from_torch_shares_memory(gpu, dtype):
    t = (torch.arange(24, device="cuda") % 7).to(dtype).reshape(4, 6)
    T = gpu.from_dlpack(t)
    assert T.shape == (4, 6) and T.ptr == t.data_ptr()
    np.testing.assert_array_equal(T.get().astype(np.float64), t.double().cpu().numpy())
    T[:] = T * 2 + 1  # a write through gpuarray shows in torch
    gpu.synchronize()
    np.testing.assert_array_equal(t.double().cpu().numpy(), (T.get().astype(np.float64)))


def test_from_torch_strided_view(gpu):
    t = torch.arange(20.0, device="cuda").reshape(4, 5)
    T = gpu.from_dlpack(t.t())
    assert T.strides == (4, 20)
    np.testing.assert_array_equal(T.get(), t.t().cpu().numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, gpuarray.bfloat16, np.int32])
def test_to_torch_through_dlpack(gpu, dtype):
    T = gpu.array(np.arange(12).reshape(3, 4), dtype=dtype)
    t = torch.from_dlpack(T)
    assert t.data_ptr() == T.ptr and tuple(t.shape) == (3, 4)
    t.mul_(3)
    torch.cuda.synchronize()
    want = (np.arange(12).reshape(3, 4) * 3).astype(np.float64)
    np.testing.assert_array_equal(T.get().astype(np.float64), want)
    tt = torch.from_dlpack(T.T)
    assert tuple(tt.stride()) == (1, 4)


def test_cuda_array_interface_with_torch(gpu):
    T = gpu.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    cai = T.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"][0] == T.ptr and cai["shape"] == (2, 3)
    t = torch.as_tensor(T, device="cuda")
    assert t.data_ptr() == T.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), T.get())


def test_cupy_reads_without_copy(gpu):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    T = gpu.array(np.arange(8, dtype=np.float32))[::2]
    c = cupy.asarray(T)
    assert c.data.ptr == T.ptr
    np.testing.assert_array_equal(cupy.asnumpy(c), T.get())


def test_from_dlpack_rejects_host_memory(gpu):
    with pytest.raises(ValueError, match="CUDA"):
        gpu.from_dlpack(np.arange(3.0))
