"""Small exact-fp32 products on kernels/gemm_small.cu (a group of lanes an output).

Without a GPU, the recording factory of test_gemm_plan shows the route: which
products take the small kernel, with how many lanes, over what grid and
with which strides.  On the GPU the values are checked against numpy in
float64 over layouts, batches, sums over batches, column-major C, every
epilogue term and output type, each call one kernel; a repeated call
replays its recorded plan.
"""
import numpy as np
import pytest

from conftest import get_factory, skip_if_no_gpu
from gpuarray.core import dtypes
from gpuarray.gemm import plan as gemm_plan
from test_gemm_plan import GemmRecordingGPU, tensor_maps  # noqa: F401 - a fixture

F32 = np.float32


def _launch(ng):
    name, grid, block, args, smem = ng.launches[-1]
    return name, grid, block, args


@pytest.mark.parametrize("m, n, k, lanes", [(1000, 100, 10, 1), (1000, 10, 100, 8),
                                            (100, 10, 1000, 32), (1, 1, 16, 1), (3, 5, 17, 8)])
def test_small_products_take_the_small_kernel(tensor_maps, m, n, k, lanes):  # noqa: F811
    ng = GemmRecordingGPU()
    ng.dot(ng.empty((m, k), F32), ng.empty((k, n), F32), ng.empty((m, n), F32))
    name, grid, block, args = _launch(ng)
    assert name == f"ga_gemm_small_l{lanes}_f32" and len(ng.launches) == 1
    assert block == (256, 1, 1) and grid == (-(-m * n * lanes // 256), 1, 1)
    assert (args["M"], args["N"], args["K"], args["splits"]) == (m, n, k, 1)


def test_layouts_travel_as_strides(tensor_maps):  # noqa: F811
    ng = GemmRecordingGPU()
    A, B = ng.empty((100, 1000), F32).T, ng.empty((10, 100), F32).T  # A "m", B "k"
    ng.dot(A, B, ng.empty((1000, 10), F32))
    args = _launch(ng)[3]
    assert (args["a_m"], args["a_k"], args["b_k"], args["b_n"]) == (1, 1000, 1, 100)


def test_larger_products_and_other_dtypes_take_the_tiles(tensor_maps):  # noqa: F811
    ng = GemmRecordingGPU()
    ng.dot(ng.empty((1000, 256), F32), ng.empty((256, 100), F32), ng.empty((1000, 100), F32))
    assert _launch(ng)[0].startswith("ga_gemm_ffma")
    ng.dot(ng.empty((1, 4096), F32), ng.empty((4096, 1), F32), ng.empty((1, 1), F32))
    assert not any(launch[0].startswith("ga_gemm_small") for launch in ng.launches[-2:])
    F16 = np.float16
    ng.dot(ng.empty((100, 16), F16), ng.empty((16, 100), F16), ng.empty((100, 100), F16))
    assert not _launch(ng)[0].startswith("ga_gemm_small")
    ng.dot(ng.empty((100, 16), F32), ng.empty((16, 100), F32), ng.empty((100, 100), F32),
           precision="tf32")
    assert not _launch(ng)[0].startswith("ga_gemm_small")


def test_the_thresholds():
    # MNIST's 1000x10x100, 1000x100x10 and 100x10x1000 products; not its 1000x100x256
    assert 10**6 <= gemm_plan.SMALL_PRODUCT_FMAS < 1000 * 100 * 256
    assert 1000 <= gemm_plan.SMALL_PRODUCT_TERMS < 4096


@pytest.fixture(scope="module")
def gpu():
    skip_if_no_gpu()
    return get_factory("gpu")


def _operand(gpu, rng, shape, transposed):
    """A device view of ``shape`` (transposed: stored the other way round), and its values."""
    stored = shape[:-2] + shape[-2:][::-1] if transposed else shape
    host = rng.standard_normal(stored).astype(F32)
    t = gpu.array(host)
    if transposed:
        t, host = t.transpose(*range(t.ndim - 2), t.ndim - 1, t.ndim - 2), host.swapaxes(-1, -2)
    return t, host.astype(np.float64)


def _close(got, want, k, rtol=1e-5):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.sqrt(k) * 4)


@pytest.mark.parametrize("m, n, k", [(1000, 100, 10), (1000, 10, 100), (100, 10, 1000),
                                     (1, 1, 1), (33, 17, 5), (7, 300, 40)])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_small_products_match_numpy(gpu, m, n, k, ta, tb):
    rng = np.random.default_rng(m * n + k)
    (A, a), (B, b) = _operand(gpu, rng, (m, k), ta), _operand(gpu, rng, (k, n), tb)
    bias = rng.standard_normal((n,)).astype(F32)
    c0 = rng.standard_normal((m, n)).astype(F32)
    C = gpu.array(c0)
    before = gpu.stats()["kernels_launched"]
    gpu.dot(A, B, C, alpha=0.5, beta=2.0, relu=True, bias=gpu.array(bias))
    assert gpu.stats()["kernels_launched"] - before == 1
    _close(C.get(), np.maximum(0.5 * (a @ b) + bias, 0) + 2.0 * c0, k)


def test_a_column_major_c_and_16_bit_outputs(gpu):
    rng = np.random.default_rng(3)
    (A, a), (B, b) = _operand(gpu, rng, (40, 12), False), _operand(gpu, rng, (12, 30), False)
    C = gpu.empty((30, 40), F32).T
    gpu.dot(A, B, C)
    _close(C.get(), a @ b, 12)
    for dtype in (np.float16, dtypes.bfloat16):
        C = gpu.empty((40, 30), dtype)
        gpu.dot(A, B, C)
        np.testing.assert_allclose(C.get().astype(np.float64), a @ b, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("accumulate", [False, True])
def test_small_batched_products_match_numpy(gpu, accumulate):
    rng = np.random.default_rng(7)
    (A, a), (B, b) = _operand(gpu, rng, (4, 30, 12), False), _operand(gpu, rng, (4, 12, 20), True)
    C = gpu.empty((30, 20) if accumulate else (4, 30, 20), F32)
    gpu.batched_dot(A, B, C)
    _close(C.get(), (a @ b).sum(0) if accumulate else a @ b, 48)


def test_a_shared_operand_and_the_statistics(gpu):
    rng = np.random.default_rng(9)
    (A, a), (B, b) = _operand(gpu, rng, (3, 50, 20), False), _operand(gpu, rng, (20, 8), False)
    C, stats = gpu.empty((3, 50, 8), F32), gpu.zeros((2,), F32)
    gpu.batched_dot(A, B, C, stats=stats)
    want = a @ b
    _close(C.get(), want, 20)
    np.testing.assert_allclose(stats.get(), [np.abs(want).max(), 0], rtol=1e-5)


def test_a_repeated_small_product_replays_its_plan(gpu):
    rng = np.random.default_rng(11)
    (A, _), (B, b) = _operand(gpu, rng, (64, 9), False), _operand(gpu, rng, (9, 33), False)
    C = gpu.empty((64, 33), F32)
    gpu.dot(A, B, C)
    plans = gpu.stats().get("gemm_plans", 0)
    A2, a2 = _operand(gpu, rng, (64, 9), False)
    gpu.dot(A2, B, C, alpha=3.0)
    assert gpu.stats().get("gemm_plans", 0) == plans
    _close(C.get(), 3.0 * (a2 @ b), 9)
