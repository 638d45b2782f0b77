"""GPU pooling up to the driver call, on machines without a GPU.

A GPU factory whose driver is a recorder (see test_dispatch): each pooling
launch's PoolArgs are unpacked and checked -- the kernel picked (pass,
op, dtype, channels per thread, argmax type), the grid, the sizes -- and
strided views must go through contiguous temporaries.
"""

import numpy as np
import pytest

from gpuarray.conv import pooling
from test_dispatch import RecordingGPU

FIELDS = ("I O argmax E grad_I N size out window stride pad include_padding").split()


class _Kernel:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, grid, block, data, shared):
        raw = pooling.ARGS.unpack(bytes(data))
        args = dict(zip(FIELDS[:6], raw[:6]))
        for i, name in enumerate(FIELDS[6:11]):
            args[name] = raw[6 + 4 * i:10 + 4 * i]
        args["include_padding"] = raw[-1]
        self.log.append(("pool", self.name, grid, block, args))


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        assert stem == pooling.STEM
        return _Kernel(name, self.log)


@pytest.fixture
def ng():
    gpu = RecordingGPU()
    gpu.conv_library = _Library(gpu.launches)
    return gpu


def _pool_launches(ng):
    return [entry[1:] for entry in ng.launches if entry[0] == "pool"]


@pytest.mark.parametrize("dtype, C, J, name", [
    (np.float16, 64, 1, "ga_pool_fprop_max_f16_v8_u8"),
    (np.float32, 12, 1, "ga_pool_fprop_max_f32_v4_u8"),
    ("bfloat16", 12, 1, "ga_pool_fprop_max_bf16_v1_u8"),   # 12 % 8: one channel per thread
    (np.float16, 64, 2, "ga_pool_fprop_max_f16_v1_u8"),    # channels pooled
])
def test_kernel_choice_and_arguments(ng, dtype, C, J, name):
    pool = ng.pool_layer(dtype, "max", 4, C, H=9, W=11, J=J, R=3, S=3, str_h=2, str_w=2)
    I, O = ng.empty(pool.dimI, pool.dtype), ng.empty(pool.dimO, pool.dtype)
    A = ng.empty(pool.dimO, pool.argmax_dtype)
    ng.fprop_pool(pool, I, O, A)
    (got, grid, block, args), = _pool_launches(ng)
    assert got == name
    vec = int(name.split("_v")[1].split("_")[0])
    per_image = pool.M * pool.P * pool.Q * pool.K // vec
    assert grid == (-(-per_image // pooling.THREADS), 4, 1) and block == (pooling.THREADS, 1, 1)
    pointers = (args["I"], args["O"], args["argmax"], args["E"], args["grad_I"])
    assert pointers == (I.ptr, O.ptr, A.ptr, 0, 0)
    assert args["size"] == (C, 1, 9, 11) and args["out"] == (pool.K, 1, pool.P, pool.Q)
    assert args["window"] == (J, 1, 3, 3) and args["stride"] == (J, 1, 2, 2)


def test_max_bprop_without_argmax_finds_it_first(ng):
    pool = ng.pool_layer(np.float32, "max", 2, 8, H=6, W=6, R=2, S=2)
    I, E, G = (ng.empty(d, np.float32) for d in (pool.dimI, pool.dimO, pool.dimI))
    ng.bprop_pool(pool, I, E, G)
    (first, _, _, fargs), (second, _, _, bargs) = _pool_launches(ng)
    assert first.startswith("ga_pool_fprop_max") and second.startswith("ga_pool_bprop_max")
    assert fargs["O"] == 0 and fargs["argmax"] == bargs["argmax"] != 0
    assert (bargs["E"], bargs["grad_I"]) == (E.ptr, G.ptr)


def test_avg_pooling_passes_the_padding_rule(ng):
    pool = ng.pool_layer(np.float16, "avg", 1, 8, H=5, W=5, R=3, S=3, pad_h=1, pad_w=1,
                         include_padding=True)
    ng.fprop_pool(pool, ng.empty(pool.dimI, np.float16), ng.empty(pool.dimO, np.float16))
    (name, _, _, args), = _pool_launches(ng)
    assert name == "ga_pool_fprop_avg_f16_v8" and args["include_padding"] == 1
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
