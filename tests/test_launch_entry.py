"""The kernel launch entry hands the driver exactly what it was given.

``gpuarray.cuda.launch_entry`` calls ``cuLaunchKernel`` from C.  Bound to a
recording stand-in (a ctypes callback with the driver's signature), it is
checked without a GPU: grid, block, shared bytes, stream, the packed
buffer behind ``CU_LAUNCH_PARAM_BUFFER_POINTER`` and its size, and the
struct parameter copied to 64-byte aligned memory.  On the GPU, the
compiled entry and the ctypes fallback give the same results for fused,
GEMM and pooling kernels.
"""
import ctypes

import numpy as np
import pytest

from gpuarray.cuda import driver

try:
    from gpuarray.cuda import launch_entry
except ImportError:
    launch_entry = None

needs_entry = pytest.mark.skipif(launch_entry is None, reason="the launch entry is not built")

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))


@pytest.fixture
def recorder():
    """The entry bound to a stand-in recording each call; the real binding
    is made again by the next launch afterwards."""
    calls = []

    def record(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        call = {"function": function, "grid": (gx, gy, gz), "block": (bx, by, bz),
                "smem": smem, "stream": stream or 0}
        if extra:
            assert extra[0] == 1 and extra[2] == 2 and not extra[4]
            size = ctypes.c_size_t.from_address(extra[3]).value
            call["packed"] = ctypes.string_at(extra[1], size)
        if params:
            call["address"] = params[0]
            call["struct"] = ctypes.string_at(params[0], 512)
        calls.append(call)
        return 0

    stand_in = _LAUNCH(record)
    launch_entry.bind(ctypes.cast(stand_in, ctypes.c_void_p).value)
    yield calls
    driver._entries.clear()


@needs_entry
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_packed_launch_passes_everything_through(recorder, kind):
    data = kind(range(40))
    result = launch_entry.launch_packed(0x1234, (7, 2, 1), (128, 1, 1), data, 96, 0x5678)
    assert result == 0
    assert recorder == [{"function": 0x1234, "grid": (7, 2, 1), "block": (128, 1, 1),
                         "smem": 96, "stream": 0x5678, "packed": bytes(range(40))}]


@needs_entry
def test_struct_launch_copies_to_aligned_memory(recorder):
    data = bytes(k % 251 for k in range(512))
    launch_entry.launch_struct(0x10, (3, 1, 1), (384, 1, 1), data, 200 * 1024, 0)
    call, = recorder
    assert call["address"] % 64 == 0
    assert call["struct"] == data
    assert (call["grid"], call["block"], call["smem"], call["stream"]) == (
        (3, 1, 1), (384, 1, 1), 200 * 1024, 0)


@needs_entry
def test_the_entry_refuses_what_it_cannot_pass(recorder):
    with pytest.raises(TypeError, match="bytes or bytearray, not list"):
        launch_entry.launch_packed(1, (1, 1, 1), (1, 1, 1), [1, 2], 0, 0)
    with pytest.raises(ValueError, match="at most 4096 bytes"):
        launch_entry.launch_struct(1, (1, 1, 1), (1, 1, 1), bytes(4097), 0, 0)
    assert recorder == []


def test_the_entry_in_use(gpu_ng):
    ng = gpu_ng
    a = ng.array(np.arange(8, dtype=np.float32))
    c = ng.empty((8,), np.float32)
    c[:] = a + 1
    assert driver.entry_name() == ("ctypes" if launch_entry is None else "compiled")


def _run_kernels(ng, rng):
    """A fused assignment, a GEMM with its epilogue and a pooling pass; their values."""
    a = ng.array(rng.standard_normal((64, 48)).astype(np.float32))
    b = ng.array(rng.standard_normal((80, 48)).astype(np.float16))
    w = ng.array(rng.standard_normal((48, 80)).astype(np.float16))
    bias = ng.array(rng.standard_normal(80).astype(np.float16))
    fused = ng.empty((64, 48), np.float32)
    fused[:] = ng.maximum(a * 2 - ng.mean(a, axis=1, keepdims=True), 0)
    product = ng.empty((80, 80), np.float16)
    product[:] = ng.relu(ng.dot(b, w) + bias)
    layer = ng.pool_layer(np.float32, "max", 2, 8, H=6, W=6, R=2, S=2)
    images = ng.array(rng.standard_normal(layer.dimI).astype(np.float32))
    pooled = ng.empty(layer.dimO, np.float32)
    ng.fprop_pool(layer, images, pooled)
    return [fused.get(), product.get(), pooled.get()]


def test_compiled_and_ctypes_entries_agree(gpu_ng):
    ng = gpu_ng
    first = _run_kernels(ng, np.random.default_rng(0))
    driver._entries[:] = [(driver._ctypes_packed, driver._ctypes_struct)]
    try:
        assert driver.entry_name() == "ctypes"
        second = _run_kernels(ng, np.random.default_rng(0))
    finally:
        driver._entries.clear()
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
