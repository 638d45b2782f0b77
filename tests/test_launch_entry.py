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
import struct

import numpy as np
import pytest

from gpuarray.cuda import driver
from conftest import gpu_skip_reason
from test_dispatch import RecordingGPU, _Kernel

try:
    from gpuarray.cuda import launch_entry
except ImportError:
    launch_entry = None

needs_entry = pytest.mark.skipif(launch_entry is None, reason="the launch entry is not built")

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))


@pytest.fixture
def recorder():
    """The entry bound to a stand-in recording each call; the driver's
    functions bound again afterwards."""
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
    if gpu_skip_reason() is None:
        # at once, not at the next lookup: a cached fused kernel's replay
        # calls the entry directly, and the stand-in is freed after this test
        driver._entry()


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


@needs_entry
def test_patched_launch_fills_every_hole_kind(recorder):
    template = bytes(range(72))
    holes = [(0, 0, "add", 16), (8, 0, "add", -8), (16, 1, "double", 0), (24, 2, "int", 0),
             (32, 3, "int", 0), (40, 4, "bool", 0), (48, 5, "real", 0), (56, 5, "imag", 0)]
    launch = launch_entry.PatchedLaunch(0x99, (4, 1, 1), (256, 1, 1), template, holes, 64)
    values = [1 << 40, 3, -5, 2**64 - 1, np.float32(0.0), 1.5 - 2j]
    assert launch.launch(values, 0x77) == 0
    want = struct.pack("<QQdqQQdd", (1 << 40) + 16, (1 << 40) - 8, 3.0, -5, 2**64 - 1, 0, 1.5, -2.0)
    assert recorder == [{"function": 0x99, "grid": (4, 1, 1), "block": (256, 1, 1), "smem": 64,
                         "stream": 0x77, "packed": want + template[64:]}]
    assert launch.launch([1 << 41, True, np.int8(-3), 7, "x", 2.0], 0) == 0  # the template is untouched
    assert recorder[1]["packed"][:16] == struct.pack("<QQ", (1 << 41) + 16, (1 << 41) - 8)
    assert recorder[1]["packed"][16:48] == struct.pack("<dqQQ", 1.0, -3, 7, 1)


@needs_entry
def test_patched_launch_of_a_large_template(recorder):
    """Arguments beyond the stack buffer (4 KB) are patched in allocated memory."""
    template = bytes(k % 256 for k in range(6000))
    launch = launch_entry.PatchedLaunch(1, (1, 1, 1), (1, 1, 1), template, [(5984, 0, "add", 1)])
    launch.launch([41], 0)
    assert recorder[0]["packed"] == template[:5984] + struct.pack("<Q", 42) + template[5992:]


@needs_entry
def test_patched_launch_refuses_what_it_cannot_fill(recorder):
    with pytest.raises(ValueError, match="hole at byte 8 lies outside the 12-byte arguments"):
        launch_entry.PatchedLaunch(1, (1, 1, 1), (1, 1, 1), bytes(12), [(8, 0, "add", 0)])
    with pytest.raises(ValueError, match="unknown hole kind 'float'"):
        launch_entry.PatchedLaunch(1, (1, 1, 1), (1, 1, 1), bytes(8), [(0, 0, "float", 0)])
    launch = launch_entry.PatchedLaunch(1, (1, 1, 1), (1, 1, 1), bytes(16), [(8, 2, "int", 0)])
    with pytest.raises(IndexError, match="holes up to slot 2 got 2 values"):
        launch.launch([1, 2], 0)
    with pytest.raises(TypeError):
        launch.launch([1, 2, None], 0)
    assert recorder == []


if launch_entry is not None:
    class _LoggedLaunch(launch_entry.PatchedLaunch):
        """The compiled entry's launch, its argument format logged first."""

        def launch(self, values, stream_handle):
            self.formats.append(self.arg_format)
            return super().launch(values, stream_handle)


class _EntryKernel(_Kernel):
    """A recording kernel whose replays go through the compiled entry; the
    launch order's argument formats go to ``formats``."""

    def __init__(self, arg_format, log, formats):
        super().__init__(type("Source", (), {"arg_format": arg_format}), log)
        self.formats = formats

    def patched_launch(self, grid, block, template, holes, smem=0):
        launch = _LoggedLaunch(0x1000, grid, block, template, holes, smem)
        launch.formats, launch.arg_format = self.formats, self.arg_format
        return launch

    def check_launch(self, result):
        raise AssertionError(f"the stand-in driver returned {result}")


class _EntryGPU(RecordingGPU):
    def __init__(self):
        super().__init__()
        self.formats = []

    def _kernel(self, program, layout):
        kernel = super()._kernel(program, layout)
        return _EntryKernel(kernel.arg_format, self.launches, self.formats)


def _assignments(ng, rng):
    """Assignments whose replays fill every kind of hole: views sharing a
    buffer, int, float, bool and complex scalars, a split reduction's
    temporaries."""
    a = ng.empty((96, 40), np.float32)
    b = ng.empty((96, 40), np.float32)
    z = ng.empty((16,), np.complex128)
    long_rows = ng.empty((2, 1 << 20), np.float32)
    out, zout = ng.empty((96, 40), np.float32), ng.empty((16,), np.complex128)
    k = int(rng.integers(1, 9))
    yield out, a * k + b[::-1] / 3.5
    yield out[1:], ng.where(a[1:] > b[:-1], a[:-1], -2.0)
    yield ng.empty((96, 1), np.float32), ng.sum(a * (k > 4) - b, axis=1, keepdims=True)
    yield zout, z * complex(k, -1) + 1j
    yield out[:, :20], a[:, 20:] ** 2 + (b[:, :20] != 0)
    yield ng.empty((2,), np.float32), ng.sum(long_rows * k, axis=1)


@needs_entry
def test_dispatch_through_the_entry_packs_what_python_packs(recorder):
    """Replays patched by the compiled entry hand the driver the bytes the
    Python patching gives, over changing pointers and scalars."""
    python_ng, entry_ng = RecordingGPU(), _EntryGPU()
    for seed in range(3):
        for ng in (python_ng, entry_ng):
            for out, tree in _assignments(ng, np.random.default_rng(seed)):
                out[...] = tree
    assert any(recipe.temp_bytes for recipe in entry_ng._dispatcher.recipes.values())
    assert entry_ng.launches == [] and len(recorder) == len(python_ng.launches) >= 18
    for (grid, block, args), call, arg_format in zip(python_ng.launches, recorder,
                                                     entry_ng.formats):
        assert (grid, block) == (call["grid"], call["block"])
        assert struct.unpack(arg_format, call["packed"]) == args


def test_the_entry_in_use(gpu_ng):
    ng = gpu_ng
    a = ng.array(np.arange(8, dtype=np.float32))
    c = ng.empty((8,), np.float32)
    c[:] = a + 1
    assert driver.entry_name() == ("ctypes" if launch_entry is None else "compiled")


def _run_kernels(ng, rng):
    """A fused assignment, a GEMM with its epilogue, a skinny GEMM (K split over
    a cluster) and a pooling pass; their values."""
    a = ng.array(rng.standard_normal((64, 48)).astype(np.float32))
    b = ng.array(rng.standard_normal((80, 48)).astype(np.float16))
    w = ng.array(rng.standard_normal((48, 80)).astype(np.float16))
    bias = ng.array(rng.standard_normal(80).astype(np.float16))
    fused = ng.empty((64, 48), np.float32)
    fused[:] = ng.maximum(a * 2 - ng.mean(a, axis=1, keepdims=True), 0)
    product = ng.empty((80, 80), np.float16)
    product[:] = ng.relu(ng.dot(b, w) + bias)
    weights = ng.array(rng.standard_normal((2048, 4096)).astype(np.float16))
    x = ng.array(rng.standard_normal((4096, 32)).astype(np.float16))
    skinny = ng.empty((2048, 32), np.float16)
    ng.dot(weights, x, skinny)
    assert ng.last_gemm.cluster > 1
    layer = ng.pool_layer(np.float32, "max", 2, 8, H=6, W=6, R=2, S=2)
    images = ng.array(rng.standard_normal(layer.dimI).astype(np.float32))
    pooled = ng.empty(layer.dimO, np.float32)
    ng.fprop_pool(layer, images, pooled)
    return [fused.get(), product.get(), skinny.get(), pooled.get()]


def test_compiled_and_ctypes_entries_agree(gpu_ng):
    ng = gpu_ng
    first = _run_kernels(ng, np.random.default_rng(0))
    driver._entries[:] = [driver.CTYPES_ENTRY]  # launches and small downloads
    ng._dispatcher.recipes.clear()  # recorded replays keep the entry they were made with
    try:
        assert driver.entry_name() == "ctypes"
        second = _run_kernels(ng, np.random.default_rng(0))
    finally:
        driver._entries.clear()
        ng._dispatcher.recipes.clear()
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)


def _read_config(config):
    """(grid, block, smem, stream, [(attribute id, (x, y, z))]) of a CUlaunchConfig."""
    cfg = ctypes.cast(config, ctypes.POINTER(driver._LaunchConfig)).contents
    attributes = [(cfg.attrs[k].id, tuple(cfg.attrs[k].value[:3])) for k in range(cfg.count)]
    return tuple(cfg.grid), tuple(cfg.block), cfg.smem, cfg.stream or 0, attributes


def test_cluster_launch_through_ctypes(monkeypatch):
    """ClusterKernel without the compiled entry: cuLaunchKernelEx with one
    CLUSTER_DIMENSION attribute (id 4, (size, 1, 1)) and the struct as
    kernelParams in 64-byte aligned memory; bad sizes and grids raise before
    the driver is called."""
    calls = []

    class _Cuda:
        @staticmethod
        def cuLaunchKernelEx(config, function, params, extra):
            first = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]
            calls.append((_read_config(ctypes.addressof(config._obj)), function, first % 64,
                          ctypes.string_at(first, 512), extra))
            return 0

    monkeypatch.setattr(driver, "libcuda", lambda: _Cuda())
    monkeypatch.setattr(driver, "_entries", [driver.CTYPES_ENTRY])
    kernel = type("K", (), {"name": "k", "address": 1234, "max_cluster": 8})()
    clustered = driver.ClusterKernel(kernel, 4)
    data = bytes(k % 251 for k in range(512))
    clustered.launch((8, 1, 1), (384, 1, 1), data, 1000)
    assert calls == [(((8, 1, 1), (384, 1, 1), 1000, 0, [(4, (4, 1, 1))]), 1234, 0, data, None)]
    with pytest.raises(ValueError, match="6 blocks is not a whole number of clusters of 4"):
        clustered.launch((6, 1, 1), (384, 1, 1), data, 1000)
    for size in (0, 9):
        with pytest.raises(ValueError, match="k has 1 to 8 blocks, not .* portable limit"):
            driver.ClusterKernel(kernel, size)
    # 16 once the kernel allows non-portable sizes, not 17
    kernel.max_cluster = 16
    assert driver.ClusterKernel(kernel, 16).size == 16
    with pytest.raises(ValueError, match="k has 1 to 16 blocks, not 17"):
        driver.ClusterKernel(kernel, 17)
    assert len(calls) == 1
    # a dependent launch adds PROGRAMMATIC_STREAM_SERIALIZATION (id 6, value 1);
    # plain blocks (a cluster of 1) carry no cluster attribute
    driver.ClusterKernel(kernel, 2, dependent=True).launch((8, 1, 1), (384, 1, 1), data, 1000)
    driver.ClusterKernel(kernel, 1, dependent=True).launch((7, 1, 1), (384, 1, 1), data, 1000)
    assert [call[0][4] for call in calls[1:]] == [[(4, (2, 1, 1)), (6, (1, 0, 0))], [(6, (1, 0, 0))]]


_LAUNCH_EX = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))


@needs_entry
def test_compiled_cluster_launch_hands_the_driver_the_same(recorder):
    """launch_struct_cluster lays out CUlaunchConfig as ctypes' mirror of
    cuda.h does: grid, block, shared bytes, stream, the cluster attribute."""
    calls = []

    def record(config, function, params, extra):
        calls.append((_read_config(config), function, params[0] % 64,
                      ctypes.string_at(params[0], 512), bool(extra)))
        return 0

    stand_in = _LAUNCH_EX(record)
    launch_entry.bind_ex(ctypes.cast(stand_in, ctypes.c_void_p).value)
    data = bytes(k % 249 for k in range(512))
    assert launch_entry.launch_struct_cluster(0x40, (12, 1, 1), (256, 1, 1), data, 208144,
                                              0x77, 3) == 0
    assert calls == [(((12, 1, 1), (256, 1, 1), 208144, 0x77, [(4, (3, 1, 1))]), 0x40, 0, data,
                      False)]
    assert launch_entry.launch_struct_cluster(0x40, (12, 1, 1), (256, 1, 1), data, 0, 0, 3, True) == 0
    assert launch_entry.launch_struct_cluster(0x40, (5, 1, 1), (256, 1, 1), data, 0, 0, 1, True) == 0
    assert [call[0][4] for call in calls[1:]] == [[(4, (3, 1, 1)), (6, (1, 0, 0))], [(6, (1, 0, 0))]]
    with pytest.raises(ValueError, match="at most 4096 bytes"):
        launch_entry.launch_struct_cluster(0x40, (3, 1, 1), (1, 1, 1), bytes(5000), 0, 0, 3)
