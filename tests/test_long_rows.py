"""Reductions over few, very long rows (split across many blocks on the GPU)."""
import numpy as np
import pytest

from conftest import assert_matches

LONG = 1 << 19  # long enough to be split (gpuarray.fusion.split.MIN_LENGTH is 2**18)


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0, 3, shape).astype(dtype)
    return (rng.standard_normal(shape) + 0.5).astype(dtype)


@pytest.mark.parametrize("name", ["sum", "max", "min", "any", "all", "mean", "argmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_whole_array_reduction(ng, name, dtype):
    x = _data((LONG,), dtype, 1)
    got = getattr(ng, name)(ng.array(x), keepdims=True).get()
    with np.errstate(over="ignore"):  # a float16 sum of 2**19 values overflows, as ours
        want = getattr(np, name)(x.astype(np.float64) if name == "mean" else x, keepdims=True)
    if name == "argmax":
        want = np.argmax(x).reshape(1)
    dt = np.mean(np.ones(1, dtype)).dtype if name == "mean" else want.dtype
    assert_matches(got, want.astype(dt), dt, scale=np.abs(x.astype(np.float64)).sum() / x.size * 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_few_long_rows_var_and_centering(ng, dtype):
    x = _data((3, LONG), dtype, 2)
    A = ng.array(x)
    x64 = x.astype(np.float64)
    assert_matches(ng.var(A, axis=1, keepdims=True).get(),
                   x64.var(axis=1, keepdims=True).astype(dtype), dtype)
    centred = ng.empty(x.shape, dtype)
    centred[:] = A - ng.mean(A, axis=1, keepdims=True)
    assert_matches(centred.get(), (x64 - x64.mean(axis=1, keepdims=True)).astype(dtype), dtype,
                   scale=4)


def test_long_reduction_of_a_strided_view(ng):
    x = _data((2 * LONG + 3,), np.float32, 3)
    A = ng.array(x)[3::2][::-1]
    want = x[3::2][::-1].astype(np.float64).sum(keepdims=True)
    assert_matches(ng.sum(A, keepdims=True).get(), want.astype(np.float32), np.float32, scale=LONG)


def test_long_reduction_is_one_kernel_and_reused(gpu_ng):
    """The partials' kernel's last block to finish combines them (test_last_block.py)."""
    ng = gpu_ng
    A = ng.array(_data((LONG,), np.float32, 4))
    out = ng.empty((1,))
    out[:] = ng.sum(A, keepdims=True)
    before = ng.stats()
    out[:] = ng.sum(A * 2, keepdims=True)
    ng.synchronize()
    after = ng.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    before = ng.stats()
    out[:] = ng.sum(A * 3, keepdims=True)
    assert ng.stats()["kernels_compiled"] == before["kernels_compiled"]


@pytest.mark.parametrize("shape, axis", [((1 << 16, 64), 0), ((512, 256), 0), ((64, 64, 40), (0, 1)),
                                         ((33, 1000), 0)])
@pytest.mark.parametrize("name", ["sum", "max", "argmax", "var"])
def test_reductions_along_strided_axes(ng, shape, axis, name):
    if name == "argmax" and isinstance(axis, tuple):
        pytest.skip("argmax takes one axis")
    x = _data(shape, np.float32, 5)
    got = getattr(ng, name)(ng.array(x), axis=axis, keepdims=True).get()
    x64 = x.astype(np.float64)
    want = (np.argmax(x, axis=axis, keepdims=True) if name == "argmax"
            else getattr(np, name)(x64, axis=axis, keepdims=True))
    dt = np.int64 if name == "argmax" else np.float32
    assert_matches(got, want.astype(dt), dt, scale=x.shape[0] * 2)


def test_centering_along_a_strided_axis(ng):
    x = _data((700, 96), np.float16, 6)
    A = ng.array(x)
    out = ng.empty(x.shape, np.float16)
    out[:] = A - ng.mean(A, axis=0, keepdims=True)
    x64 = x.astype(np.float64)
    assert_matches(out.get(), (x64 - x64.mean(axis=0, keepdims=True)).astype(np.float16),
                   np.float16, scale=4)
