"""GPU pooling up to the driver call, on machines without a GPU.

A GPU factory whose driver is a recorder (see test_dispatch): each pooling
launch's PoolArgs are unpacked and checked -- the kernel picked (pass,
op, dtype, channels per thread, argmax type), the grid, the sizes -- and
strided views must go through contiguous temporaries.
"""

import numpy as np
import pytest

from gpuarray.conv import fastdiv, pooling
from test_dispatch import RecordingGPU

FIELDS = ("I O argmax E grad_I N size out window stride pad include_padding").split()


class _Kernel:
    def __init__(self, stem, name, log):
        self.stem, self.name, self.log = stem, name, log

    def patched_launch(self, grid, block, template, holes, smem=0):
        return None  # as where the compiled launch entry is not built

    def launch(self, grid, block, data, shared):
        raw = pooling.ARGS.unpack(bytes(data))
        args = dict(zip(FIELDS[:6], raw[:6]))
        for i, name in enumerate(FIELDS[6:11]):
            args[name] = raw[6 + 4 * i:10 + 4 * i]
        args["include_padding"] = raw[26]
        args["divisors"] = [raw[27 + 3 * i:30 + 3 * i] for i in range(7)]
        self.log.append(("pool", self.stem + ":" + self.name, grid, block, args))


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        assert stem in (pooling.STEM, pooling.WINDOW_STEM)
        return _Kernel(stem, name, self.log)


@pytest.fixture
def ng():
    gpu = RecordingGPU()
    gpu.conv_library = _Library(gpu.launches)
    return gpu


def _pool_launches(ng):
    return [entry[1:] for entry in ng.launches if entry[0] == "pool"]


@pytest.mark.parametrize("dtype, C, J, name, vec", [
    (np.float16, 64, 1, "pool_window:ga_pool_fprop_max_f16_r3s3_u8", 8),
    (np.float32, 12, 1, "pool_window:ga_pool_fprop_max_f32_r3s3_u8", 4),
    ("bfloat16", 12, 1, "pool:ga_pool_fprop_max_bf16_v1_u8", 1),   # 12 % 8: one channel per thread
    (np.float16, 64, 2, "pool:ga_pool_fprop_max_f16_v1_u8", 1),    # channels pooled
])
def test_kernel_choice_and_arguments(ng, dtype, C, J, name, vec):
    pool = ng.pool_layer(dtype, "max", 4, C, H=9, W=11, J=J, R=3, S=3, str_h=2, str_w=2)
    I, O = ng.empty(pool.dimI, pool.dtype), ng.empty(pool.dimO, pool.dtype)
    A = ng.empty(pool.dimO, pool.argmax_dtype)
    ng.fprop_pool(pool, I, O, A)
    (got, grid, block, args), = _pool_launches(ng)
    assert got == name
    per_image = pool.M * pool.P * pool.Q * pool.K // vec
    assert grid == (-(-per_image // pooling.THREADS), 4, 1) and block == (pooling.THREADS, 1, 1)
    assert [d for _, _, d in args["divisors"]] == [pool.K // vec, pool.Q, pool.P, J, 1, 2, 2]
    pointers = (args["I"], args["O"], args["argmax"], args["E"], args["grad_I"])
    assert pointers == (I.ptr, O.ptr, A.ptr, 0, 0)
    assert args["size"] == (C, 1, 9, 11) and args["out"] == (pool.K, 1, pool.P, pool.Q)
    assert args["window"] == (J, 1, 3, 3) and args["stride"] == (J, 1, 2, 2)


def test_max_bprop_without_argmax_finds_it_first(ng):
    pool = ng.pool_layer(np.float32, "max", 2, 8, H=6, W=6, R=2, S=2)
    I, E, G = (ng.empty(d, np.float32) for d in (pool.dimI, pool.dimO, pool.dimI))
    ng.bprop_pool(pool, I, E, G)
    (first, _, _, fargs), (second, _, _, bargs) = _pool_launches(ng)
    assert first == "pool_window:ga_pool_fprop_max_f32_r2s2_u8"
    assert second == "pool_window:ga_pool_bprop_max_f32_k1_u8"
    assert fargs["O"] == 0 and fargs["argmax"] == bargs["argmax"] != 0
    assert (bargs["E"], bargs["grad_I"]) == (E.ptr, G.ptr)


def test_avg_pooling_passes_the_padding_rule(ng):
    pool = ng.pool_layer(np.float16, "avg", 1, 8, H=5, W=5, R=3, S=3, pad_h=1, pad_w=1,
                         include_padding=True)
    ng.fprop_pool(pool, ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16))
    (name, _, _, args), = _pool_launches(ng)
    assert name == "pool_window:ga_pool_fprop_avg_f16_r3s3" and args["include_padding"] == 1
    assert args["pad"] == (0, 0, 1, 1)


def test_strided_views_go_through_contiguous_temporaries(ng):
    pool = ng.pool_layer(np.float32, "max", 2, 4, H=6, W=6, R=2, S=2)
    big = ng.empty((2, 1, 6, 12, 4), np.float32)
    I = big[:, :, :, ::2]                       # not contiguous
    out = ng.empty((2, 1, 3, 6, 4), np.float32)
    O = out[:, :, :, ::2]                       # not contiguous either
    ng.fprop_pool(pool, I, O)
    kinds = [entry[0] for entry in ng.launches]
    assert kinds.count("pool") == 1 and len(kinds) == 3  # copy in, pool, copy out
    (_, _, _, args), = _pool_launches(ng)
    assert args["I"] not in (I.ptr, big.ptr) and args["O"] != O.ptr


@pytest.mark.parametrize("window, stride, name", [
    (3, 2, "pool_window:ga_pool_bprop_max_f16_k2_u8"),   # AlexNet: two outputs each way
    (3, 1, "pool_window:ga_pool_bprop_max_f16_k3_u8"),   # GoogLeNet's 3x3/1
    (2, 2, "pool_window:ga_pool_bprop_max_f16_k1_u8"),   # VGG: windows do not overlap
    (4, 1, "pool:ga_pool_bprop_max_f16_v8_u8"),          # four outputs each way: general
])
def test_bprop_kernel_gathers_at_most_three_outputs_per_axis(ng, window, stride, name):
    pool = ng.pool_layer(np.float16, "max", 2, 16, H=9, W=9, R=window, S=window,
                         str_h=stride, str_w=stride)
    I, G = ng.empty(pool.dimI, np.float16), ng.empty(pool.dimI, np.float16)
    E, A = ng.empty(pool.dimO, np.float16), ng.empty(pool.dimO, pool.argmax_dtype)
    ng.bprop_pool(pool, I, E, G, A)
    (got, _, _, args), = _pool_launches(ng)
    assert got == name
    assert [d for _, _, d in args["divisors"][:3]] == [2, 9, 9]   # C / 8, W, H


def test_seven_by_seven_windows_take_the_general_kernel(ng):
    pool = ng.pool_layer(np.float16, "avg", 2, 16, H=7, W=7, R=7, S=7, str_h=1, str_w=1)
    ng.fprop_pool(pool, ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16))
    (got, _, _, _), = _pool_launches(ng)
    assert got == "pool:ga_pool_fprop_avg_f16_v8"


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 8, 24, 27, 55, 100, 224, 1000, 65535, 2**20 + 1,
                               2**31 - 1])
def test_fast_divisor_divides_every_index_exactly(d):
    magic, shift, divisor = fastdiv.fast_divisor(d)
    assert divisor == d and magic < 2**32
    rng = np.random.default_rng(d)
    edges = [0, 1, d - 1, d, d + 1, 2**31 - 1, 2**31 - 2, (2**31 - 1) // d * d]
    for n in edges + [int(x) for x in rng.integers(0, 2**31, 2000)]:
        if 0 <= n < 2**31:
            assert (n * magic) >> shift == n // d, n


def test_a_repeated_pass_replays_its_recorded_launch(ng):
    pool = ng.pool_layer(np.float16, "max", 2, 16, H=9, W=9, R=3, S=3, str_h=2, str_w=2)
    I, O = ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16)
    A = ng.empty(pool.dimO, pool.argmax_dtype)
    ng.fprop_pool(pool, I, O, A)
    assert len(ng._pool_plans) == 1
    I2, O2 = ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16)
    ng.fprop_pool(pool, I2, O2, A)
    first, second = _pool_launches(ng)
    assert len(ng._pool_plans) == 1 and first[0] == second[0] and first[1] == second[1]
    assert (second[3]["I"], second[3]["O"], second[3]["argmax"]) == (I2.ptr, O2.ptr, A.ptr)
    assert {k: v for k, v in first[3].items() if k not in ("I", "O")} == \
        {k: v for k, v in second[3].items() if k not in ("I", "O")}


def test_a_recorded_pass_still_checks_other_tensors(ng):
    pool = ng.pool_layer(np.float16, "max", 2, 16, H=9, W=9, R=3, S=3, str_h=2, str_w=2)
    I, O = ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16)
    ng.fprop_pool(pool, I, O)
    with pytest.raises(ValueError, match="fprop_pool: O has shape"):
        ng.fprop_pool(pool, I, ng.empty(pool.dimI, np.float16))
    with pytest.raises(TypeError, match="O must be float16"):
        ng.fprop_pool(pool, I, ng.empty(pool.dimO, np.float32))
    with pytest.raises(ValueError, match="argmax applies to max pooling"):
        avg = ng.pool_layer(np.float16, "avg", 2, 16, H=9, W=9, R=3, S=3, str_h=2, str_w=2)
        ng.fprop_pool(avg, I, O, ng.empty(pool.dimO, np.uint8))
    assert len(_pool_launches(ng)) == 1 and len(ng._pool_plans) == 1


def test_views_and_missing_argmax_are_not_recorded(ng):
    pool = ng.pool_layer(np.float32, "max", 2, 4, H=6, W=6, R=2, S=2)
    big = ng.empty((2, 1, 6, 12, 4), np.float32)
    ng.fprop_pool(pool, big[:, :, :, ::2], ng.empty(pool.dimO, np.float32))
    I, E, G = (ng.empty(d, np.float32) for d in (pool.dimI, pool.dimO, pool.dimI))
    ng.bprop_pool(pool, I, E, G)          # argmax found into a temporary each time
    assert ng._pool_plans == {}
