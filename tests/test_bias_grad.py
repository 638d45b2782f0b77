"""``ng.update_bias``: the bias gradient, with the ReLU's gradient fused in.

numpy is the oracle on both factories: ``grad_b = alpha * E'.sum(all but the
last axis) + beta * grad_b`` with ``E' = E * (O > 0)`` written over E when O
is given.  On the GPU the tensors that suit kernels/bias_grad.cu take one
launch (block partial sums, which the last block of each channel slice
adds); the others the op-tree path.
The launch shapes and arguments are checked without a GPU through
test_dispatch's recording factory.
"""
import numpy as np
import pytest

from conftest import BF16, normal_array
from gpuarray.conv import bias
from test_dispatch import RecordingGPU

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
DTYPES = [F16, BF16, F32]
#: rtol of the sums against float64 sums of the same (rounded) values: fp32
#: sums of up to ~1e5 terms, then the store's rounding to grad_b's dtype
RTOL = {F16: 2e-3, BF16: 1.6e-2, F32: 2e-5}

#: (shape of E, slice of the channel axis of a wider tensor or None)
CASES = [
    ((2, 1, 5, 7, 64), None),      # conv errors, 8 vectors a row
    ((3, 1, 4, 4, 96), None),      # one slice of 12 vectors
    ((2, 1, 3, 5, 520), None),     # several slices, the last one partial
    ((37, 256), None),             # a dense layer's errors
    ((64,), None),                 # one row
    ((2, 1, 6, 6, 48), (16, 64)),  # a channel slice of a concatenation
    ((2, 1, 3, 3, 12), None),      # 12 channels: not whole 16-byte vectors of fp16
    ((16, 1, 28, 28, 64), None),   # many blocks: the last one adds 98 partial rows
    ((4096, 520), None),           # many blocks in each of several slices
]


def _oracle(e, o, gb, alpha, beta):
    masked = e if o is None else e * (o > 0).astype(e.dtype)
    total = masked.astype(np.float64).sum(axis=tuple(range(e.ndim - 1)))
    return masked, alpha * total + beta * gb.astype(np.float64)


def _tensors(ng, shape, channels, dtype, seed):
    """E and O (views of wider tensors when ``channels`` slices them) and
    their host values."""
    full = shape if channels is None else shape[:-1] + (channels[1] + 8,)
    e_host, o_host = normal_array(dtype, full, seed), normal_array(dtype, full, seed + 1)
    E, O = ng.array(e_host), ng.array(o_host)  # noqa: E741
    if channels is not None:
        lo, hi = channels
        E, O = E[..., lo:hi], O[..., lo:hi]  # noqa: E741
        e_host, o_host = e_host[..., lo:hi], o_host[..., lo:hi]
    return E, O, e_host, o_host


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("relu", [True, False], ids=["relu", "plain"])
@pytest.mark.parametrize("shape,channels", CASES, ids=lambda c: str(c).replace(" ", ""))
def test_matches_numpy(ng, shape, channels, relu, dtype):
    E, O, e, o = _tensors(ng, shape, channels, dtype, seed=len(shape) + shape[-1])  # noqa: E741
    gb = ng.zeros((shape[-1],), dtype)
    ng.update_bias(E, gb, O if relu else None)
    masked, want = _oracle(e, o if relu else None, np.zeros(shape[-1], dtype), 1.0, 0.0)
    np.testing.assert_array_equal(E.get(), masked)
    scale = np.abs(masked.astype(np.float64)).sum(axis=tuple(range(len(shape) - 1))) + 1
    err = np.abs(gb.get().astype(np.float64) - want) / scale
    assert err.max() <= RTOL[np.dtype(dtype)], err.max()


@pytest.mark.parametrize("grad_dtype", DTYPES, ids=str)
def test_alpha_beta_and_grad_dtype(ng, grad_dtype):
    E, O, e, o = _tensors(ng, (4, 1, 6, 6, 32), None, F16, seed=3)  # noqa: E741
    start = normal_array(grad_dtype, (32,), seed=5)
    gb = ng.array(start)
    ng.update_bias(E, gb, O, alpha=0.5, beta=-2.0)
    _, want = _oracle(e, o, start, 0.5, -2.0)
    np.testing.assert_allclose(gb.get().astype(np.float64), want, rtol=RTOL[np.dtype(grad_dtype)],
                               atol=RTOL[np.dtype(grad_dtype)] * 4)


def test_beta_zero_ignores_nan_in_grad_b(ng):
    E, O, e, o = _tensors(ng, (2, 1, 4, 4, 16), None, F32, seed=7)  # noqa: E741
    gb = ng.array(np.full(16, np.nan, np.float32))
    ng.update_bias(E, gb)
    np.testing.assert_allclose(gb.get(), _oracle(e, None, np.zeros(16), 1.0, 0.0)[1], rtol=1e-5)


def test_non_finite_errors_masked_as_the_product(ng):
    """E * (O > 0) keeps a NaN of E where O <= 0 (NaN * 0) on both paths alike."""
    e = np.ones((8, 16), np.float32)
    o = np.ones((8, 16), np.float32)
    e[3, 5], o[3, 5] = np.nan, -1.0
    e[4, 6], o[4, 6] = 7.0, -1.0
    E, O, gb = ng.array(e), ng.array(o), ng.zeros((16,), np.float32)  # noqa: E741
    ng.update_bias(E, gb, O)
    got = E.get()
    assert np.isnan(got[3, 5]) and got[4, 6] == 0 and np.isnan(gb.get()[5])
    assert gb.get()[6] == 7.0


def test_errors(ng):
    E = ng.zeros((4, 8), np.float32)
    with pytest.raises(ValueError, match=r"grad_b has shape \(7,\), but E's 8 channels"):
        ng.update_bias(E, ng.zeros((7,), np.float32))
    with pytest.raises(TypeError, match="E must be float16, bfloat16 or float32, not int32"):
        ng.update_bias(ng.zeros((4, 8), np.int32), ng.zeros((8,), np.float32))
    with pytest.raises(TypeError, match="grad_b must be float16, bfloat16 or float32, not float64"):
        ng.update_bias(E, ng.zeros((8,), np.float64))
    with pytest.raises(ValueError, match=r"O is float32 of shape \(4,9\), but E is float32 of shape \(4,8\)"):
        ng.update_bias(E, ng.zeros((8,), np.float32), ng.zeros((4, 9), np.float32))
    with pytest.raises(TypeError, match=r"O is float16 of shape \(4,8\), but E is float32"):
        ng.update_bias(E, ng.zeros((8,), np.float32), ng.zeros((4, 8), np.float16))
    with pytest.raises(TypeError, match="E must be a tensor, not ndarray"):
        ng.update_bias(np.zeros((4, 8), np.float32), ng.zeros((8,), np.float32))
    with pytest.raises(TypeError, match="alpha must be a real number"):
        ng.update_bias(E, ng.zeros((8,), np.float32), alpha="2")
    with pytest.raises(ValueError, match="at least one axis"):
        ng.update_bias(ng.zeros((), np.float32), ng.zeros((1,), np.float32))


def test_one_launch_and_no_growth(gpu_ng):
    ng = gpu_ng
    E, O, _, _ = _tensors(ng, (8, 1, 14, 14, 128), None, F16, seed=11)  # noqa: E741
    gb = ng.zeros((128,), F16)
    ng.update_bias(E, gb, O)
    ng.synchronize()
    before = ng.stats()
    for _ in range(3):
        ng.update_bias(E, gb, O)
    ng.synchronize()
    after = ng.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 3
    assert after["kernels_compiled"] == before["kernels_compiled"]
    assert after["device_allocations"] == before["device_allocations"]


@pytest.mark.parametrize("relu", [True, False], ids=["relu", "plain"])
def test_repeats_bitwise(gpu_ng, relu):
    """Calls after the first find their block counters zero again (else no
    block would finish the sums) and add in the same order, whichever block
    ends last: the same bits each time, alternating with another layer's
    shape that shares the semaphore blocks."""
    ng = gpu_ng
    E, O, e_host, o_host = _tensors(ng, (32, 1, 28, 28, 192), None, F16, seed=3)  # noqa: E741
    other, _, _, _ = _tensors(ng, (8, 1, 14, 14, 520), None, F16, seed=4)
    gb, other_gb = ng.zeros((192,), F32), ng.zeros((520,), F32)
    results = []
    for _ in range(4):
        ng.update_bias(E, gb, O if relu else None)
        ng.update_bias(other, other_gb)
        results.append(gb.get())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    masked, want = _oracle(e_host, o_host if relu else None, np.zeros(192, F32), 1.0, 0.0)
    np.testing.assert_allclose(results[0], want, rtol=RTOL[F32] * 10, atol=1e-3)


# -- launch shapes and arguments, without a GPU ------------------------------

class _Kernel:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def patched_launch(self, grid, block, template, holes, smem=0):
        return None  # as where the compiled launch entry is not built

    def launch(self, grid, block, data, smem):
        self.log.append((self.name, grid, block, bytes(data)))


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        assert stem == bias.STEM
        return _Kernel(name, self.log)


@pytest.fixture
def rec():
    gpu = RecordingGPU()
    gpu.conv_library = _Library(gpu.launches)
    return gpu


def test_launches_recorded(rec):
    E = rec.empty((64, 1, 56, 56, 96), F16)
    O = rec.empty(E.shape, F16)  # noqa: E741
    gb = rec.empty((96,), F32)
    rec.update_bias(E, gb, O, alpha=2.0)
    (name, grid, block, data), = rec.launches
    assert name == "ga_bias_grad_f16_relu"
    e, o, g, part, grad_b, counters, alpha, beta, M, ldE, ldO, ldG, K, cols, Kp, gb_type = \
        bias.ARGS.unpack(data)
    assert (e, o, g, grad_b, alpha, beta) == (E.ptr, O.ptr, E.ptr, gb.ptr, 2.0, 0.0)
    # the counters open a semaphore block; the partial rows follow them
    assert counters and part == counters + bias.COUNTER_BYTES
    assert (M, ldE, ldO, ldG, K, cols, Kp, gb_type) == (64 * 56 * 56, 96, 96, 96, 96, 12, 96, 0)
    assert grid == (2 * rec.sms, 1, 1) and block == (12 * (512 // 12), 1, 1)


def test_channel_slices_and_small_batches(rec):
    """A concatenation's channel slice keeps its row stride; few rows, few blocks;
    wide rows split into slices of at most 32 vectors."""
    wide = rec.empty((2, 1, 7, 7, 256), BF16)
    E = wide[..., 64:192]
    rec.update_bias(E, rec.empty((128,), BF16))
    (name, grid, block, data), = rec.launches
    assert name == "ga_bias_grad_bf16"
    M, ldE, _, _, K, cols, Kp, gb_type = bias.ARGS.unpack(data)[8:]
    assert (M, ldE, K, cols, Kp, gb_type) == (98, 256, 128, 16, 128, 2)
    assert grid == (1, 1, 1) and block == (512, 1, 1)
    rec.launches.clear()
    rec.update_bias(rec.empty((128, 4096), F16), rec.empty((4096,), F16))
    (_, grid, block, data), = rec.launches
    assert grid == (1, 16, 1) and block == (512, 1, 1)
    assert bias.ARGS.unpack(data)[13:] == (32, 4096, 1)


@pytest.mark.parametrize("case", ["channels", "row_stride", "transposed", "strided_grad",
                                  "slices"])
def test_other_tensors_take_the_op_trees(rec, case):
    E = {"channels": lambda: rec.empty((4, 1, 3, 3, 12), F16),
         "row_stride": lambda: rec.empty((4, 1, 3, 3, 36), F16)[..., :16],
         "transposed": lambda: rec.empty((64, 32), F16).T,
         "strided_grad": lambda: rec.empty((4, 1, 3, 3, 16), F16),
         # more slices of 32 vectors than a semaphore block has counters
         "slices": lambda: rec.empty((2, 4 * 32 * bias.MAX_SLICES + 4), F32)}[case]()
    gb = rec.empty((2 * E.shape[-1],), F16)[::2] if case == "strided_grad" else \
        rec.empty((E.shape[-1],), F16)
    rec.update_bias(E, gb)
    assert rec.launches and not any(str(launch[0]).startswith("ga_bias") for launch in rec.launches)
