"""The GPU GEMM planner up to the driver call, on machines without a GPU.

A GPU factory whose driver is a recorder (see test_dispatch): the packed
GemmArgs of each launch are unpacked and checked field by field -- layouts
from strides, C^T = B^T A^T for a column-major C, batch folding, split-K,
epilogue flags -- and the chosen kernel must exist in the catalogue.
"""

import numpy as np
import pytest

from gpuarray.cuda import tensor_maps as cuda_tensor_maps
from gpuarray.gemm import catalogue as gk, plan as gemm_plan, replay, tiles
from test_dispatch import RecordingGPU

FIELDS = ("tmap_a tmap_b tmap_c a b c bias partial stats a_m a_k b_k b_n ldc batch_a batch_b "
          "batch_c bias_m bias_n seed M N K batch kbatch splits tiles_per_split flags c_type "
          "bias_type alpha beta call post_scale scale_a scale_b scale_c amax").split()


class _Function:
    def __init__(self, name, log, cluster=1, dependent=False):
        self.name, self.log, self.cluster, self.dependent = name, log, cluster, dependent

    def clustered(self, size, dependent=False):
        return _Function(self.name, self.log, size, dependent)

    def max_active(self, block, smem):
        # an H100's answers for one-block-per-SM kernels (132 SMs in GPCs of
        # 16-18), about four times as many for the 64x64 FFMA kernels (4 an SM)
        per_sm = 4 if block[0] == 128 and smem < 57 * 1024 else 1
        return per_sm * {2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15}[self.cluster]

    def launch(self, grid, block, data, shared):
        buf = bytes(data[:gk.ARGS_BYTES])  # implicit-GEMM convolutions append their geometry
        args = dict(zip(FIELDS, gk.ARGS.unpack(buf)), cluster=self.cluster, dependent=self.dependent)
        self.log.append((self.name, grid, block, args, shared))


class _Library:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem):
        return _Function(name, self.log)


class _Driver:
    def __init__(self, log):
        self.log = log

    def memset_d32_async(self, ptr, value, count, stream=None):
        self.log.append((ptr, value, count))


class GemmRecordingGPU(RecordingGPU):
    def __init__(self, arch="sm_90"):
        super().__init__()
        self.arch = arch
        self.memsets = []  # (address, value, 32-bit words) of each memset_d32_async
        self._drv = _Driver(self.memsets)
        self.gemm_library = _Library(self.launches)


@pytest.fixture
def tile_path(monkeypatch):
    """Products of every size take the tiles (the tests here check their
    planning; test_gemm_small checks the small products' kernel)."""
    monkeypatch.setattr(gemm_plan, "SMALL_PRODUCT_FMAS", 0)


pytestmark = pytest.mark.usefixtures("tile_path")


@pytest.fixture
def tensor_maps(monkeypatch):
    """Records cuTensorMapEncodeTiled calls instead of making them (no libcuda here)."""
    calls = []

    def encode(ptr, dtype, dims, strides, box, swizzle_bytes, tf32=False):
        calls.append(dict(ptr=ptr, dtype=dtype, dims=tuple(dims), strides=tuple(strides),
                          box=tuple(box), swizzle=swizzle_bytes, tf32=tf32))
        return bytes(128)

    monkeypatch.setattr(cuda_tensor_maps, "encode_tiled", encode)
    return calls


@pytest.fixture
def ng(tensor_maps):
    return GemmRecordingGPU()


def _main(ng):
    name, grid, block, args, shared = ng.launches[0]
    return name, args


def test_row_major_operands(ng):
    A, B = ng.empty((300, 200), np.float32), ng.empty((200, 100), np.float32)
    C = ng.empty((300, 100), np.float32)
    ng.dot(A, B, C)
    name, args = _main(ng)
    assert name.startswith("ga_gemm_ffma_") and name.endswith("_f32_kn")
    assert (args["M"], args["N"], args["K"]) == (300, 100, 200)
    assert (args["a_m"], args["a_k"], args["b_k"], args["b_n"], args["ldc"]) == (200, 1, 100, 1, 100)
    assert args["flags"] == 0 and args["alpha"] == 1.0


def test_transposed_views_select_layouts(ng):
    A = ng.empty((200, 300), np.float16).T  # (300, 200), M contiguous
    B = ng.empty((100, 200), np.float16).T  # (200, 100), K contiguous
    ng.dot(A, B, ng.empty((300, 100), np.float16))
    name, args = _main(ng)
    assert name.endswith("_f16_mk")
    assert (args["a_m"], args["a_k"], args["b_k"], args["b_n"]) == (1, 300, 1, 200)


def test_column_major_c_swaps_operands(ng):
    A, B = ng.empty((300, 200), np.float32), ng.empty((200, 100), np.float32)
    bias = ng.empty((100,), np.float32)
    ng.dot(A, B, ng.empty((100, 300), np.float32).T, bias=bias)
    name, args = _main(ng)
    # C^T (100 x 300) = B^T A^T: B^T (100 x 200) has M contiguous, A^T (200 x 300) K
    assert (args["M"], args["N"], args["K"]) == (100, 300, 200)
    assert name.endswith("_mk")
    assert (args["a_m"], args["a_k"], args["b_k"], args["b_n"]) == (1, 100, 1, 200)
    assert (args["bias_m"], args["bias_n"]) == (1, 0)


def test_epilogue_flags_and_types(ng):
    A, B = ng.empty((64, 64), np.float16), ng.empty((64, 64), np.float16)
    C = ng.empty((64, 64), np.float16)
    C.rounding = 8
    bias = ng.empty((64, 1), np.float32)
    ng.dot(A, B, C, alpha=2.0, beta=0.5, relu=True, bias=bias, stats=ng.empty((2,), np.float32))
    _, args = _main(ng)
    expected = gk.EPI_RELU | gk.EPI_BIAS | gk.EPI_BETA | gk.EPI_STATS | gk.EPI_SR
    assert args["flags"] == expected | (8 << gk.EPI_SR_BITS_SHIFT)
    assert (args["c_type"], args["bias_type"]) == (1, 0)
    assert (args["bias_m"], args["bias_n"]) == (1, 0)
    assert (args["alpha"], args["beta"]) == (2.0, 0.5)


def test_tensor_maps_of_a_hopper_kernel(ng, tensor_maps):
    A = ng.empty((300, 512), np.float16)            # "k": K contiguous
    B = ng.empty((1024, 512), np.float16).T         # (512, 1024), "k" too
    ng.dot(A, B, ng.empty((300, 1024), np.float16))
    name, args = _main(ng)
    assert name.startswith("ga_gemm_sm90_") and name.endswith("_f16_kk")
    bm, bn, bk = (int(x) for x in name.split("_")[3].split("x"))
    map_a, map_b, map_c = tensor_maps
    assert map_a["dims"] == (512, 300, 1) and map_a["strides"][0] == 1024
    assert map_a["box"] == (bk, bm, 1) and map_a["swizzle"] == 128
    assert map_b["dims"] == (512, 1024, 1) and map_b["box"] == (bk, bn, 1)
    # C, stored by the copy engine 64 rows x 32 columns at a time
    assert map_c["dims"] == (1024, 300, 1) and map_c["strides"][0] == 2048
    assert map_c["box"] == (32, 64, 1) and map_c["swizzle"] == 64
    assert args["flags"] & gk.EPI_TMA_C
    assert all(s % 16 == 0 for m in tensor_maps for s in m["strides"])


def test_results_alternating_between_two_buffers_are_encoded_once_each(ng, tensor_maps):
    # C = A @ B in a loop: the new C is allocated before the old one is freed
    A, B = ng.empty((2048, 2048), np.float16), ng.empty((2048, 1024), np.float16)
    outputs = [ng.empty((2048, 1024), np.float16) for _ in range(2)]
    for step in range(6):
        ng.dot(A, B, outputs[step % 2])
    assert sorted(m["ptr"] for m in tensor_maps) == sorted([A.ptr, B.ptr] + [C.ptr for C in outputs])


@pytest.mark.parametrize("case", ["beta", "fp32_c", "odd_ldc", "stats", "splits", "switched_off"])
def test_c_stays_with_the_threads_where_the_copy_engine_cannot_store_it(ng, tensor_maps, case,
                                                                        monkeypatch):
    # beta reads C, stats and split-K partials finish values one by one; the
    # copy engine stores 16-bit rows of whole 16-byte pieces only
    monkeypatch.setattr(replay, "STORE_C_BY_COPY_ENGINE", case != "switched_off")
    k = 16384 if case == "splits" else 2048
    A, B = ng.empty((2048, k), np.float16), ng.empty((k, 256 if case == "splits" else 1024), np.float16)
    c_type = np.float32 if case == "fp32_c" else np.float16
    rows = 1028 if case == "odd_ldc" else B.shape[1]  # odd: a row stride of 2056 bytes
    C = ng.empty((2048, rows), c_type)[:, :B.shape[1]]
    kwargs = {"beta": {"beta": 1.0}, "stats": {"stats": ng.empty((2,), np.float32)}}.get(case, {})
    ng.dot(A, B, C, **kwargs)
    name, args = _main(ng)
    assert name.startswith("ga_gemm_sm90_")
    assert not args["flags"] & gk.EPI_TMA_C and len(tensor_maps) == 2
    if case == "splits":
        assert args["splits"] > 1


def test_tf32_outside_kk(ng, tensor_maps):
    # small: mma.sync reads any layout
    A, B = ng.empty((64, 64), np.float32), ng.empty((64, 64), np.float32)
    ng.dot(A, B, ng.empty((64, 64), np.float32), precision="tf32")
    name, _ = _main(ng)
    assert name.startswith("ga_gemm_sm80_") and name.endswith("_tf32_kn")
    # large: B is copied K-major (one fusion kernel) for the wgmma kernel
    A, B = ng.empty((2048, 2048), np.float32), ng.empty((2048, 2048), np.float32)
    ng.launches.clear()
    before = ng.stats()["kernels_launched"]
    ng.dot(A, B, ng.empty((2048, 2048), np.float32), precision="tf32")
    name, args = ng.launches[-1][0], ng.launches[-1][3]
    assert name.startswith("ga_gemm_sm90_") and name.endswith("_tf32_kk")
    assert ng.stats()["kernels_launched"] - before == 2
    assert (args["b_k"], args["b_n"]) == (1, 2048)
    assert tensor_maps[-1]["tf32"]


def test_deep_product_splits_k(ng):
    ng.dot(ng.empty((64, 16384), np.float32), ng.empty((16384, 64), np.float32),
           ng.empty((64, 64), np.float32))
    names = [entry[0] for entry in ng.launches]
    _, args = _main(ng)
    assert args["splits"] > 1 and args["partial"] != 0
    assert names[-1] == "ga_gemm_splitk_reduce"
    ktiles = -(-16384 // int(names[0].split("_")[3].split("x")[2]))
    assert (args["splits"] - 1) * args["tiles_per_split"] < ktiles <= args["splits"] * args["tiles_per_split"]


def test_one_tile_with_a_long_reduction_fills_the_gpu(ng):
    # a first layer's filter gradient, E^T @ col: 64 x 32 outputs (one tile)
    # summed over 3.2 M positions; 32 splits kept 32 blocks busy on 132 SMs
    rows = 64 * 224 * 224
    ng.dot(ng.empty((rows, 64), np.float32).T, ng.empty((rows, 32), np.float32),
           ng.empty((64, 32), np.float32))
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith("ga_gemm_ffma_") and args["splits"] >= ng.sms
    assert grid[0] == args["splits"] and ng.launches[-1][0] == "ga_gemm_splitk_reduce"


def test_skinny_product_splits_k_over_a_cluster(ng):
    # 4096 x 32 x 4096: a few dozen tiles; each tile's K-tiles go to the
    # blocks of a cluster, reduced inside the one kernel
    ng.dot(ng.empty((4096, 4096), np.float16), ng.empty((4096, 32), np.float16),
           ng.empty((4096, 32), np.float16))
    assert len(ng.launches) == 1  # no reduce kernel
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith("ga_gemm_sm90_") and args["cluster"] > 1
    assert args["splits"] == 1 and args["partial"] == 0
    assert grid[0] % args["cluster"] == 0 and grid[0] <= ng.sms
    assert ng.last_gemm.cluster == args["cluster"]


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_mnist_sized_fp32_product_splits_k_over_a_cluster(arch, tensor_maps):
    # 1000 x 256 x 784 (MNIST's first layer), exact fp32: 64 tiles of 64x64
    # on the FFMA pipes, their K-tiles shared by the blocks of clusters
    # (sm_90), which add up their accumulators in the one kernel; before
    # sm_90, split-K and its reduce kernel
    ng = GemmRecordingGPU(arch)
    ng.dot(ng.empty((1000, 784), np.float32), ng.empty((784, 256), np.float32),
           ng.empty((1000, 256), np.float32))
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith("ga_gemm_ffma_64x64x16_")
    if arch == "sm_80":
        assert args["cluster"] == 1 and args["splits"] > 1 and len(ng.launches) == 2
        return
    assert len(ng.launches) == 1 and args["cluster"] > 1 and args["splits"] == 1
    assert grid[0] == 64 * args["cluster"]
    cfg = next(c for c in tiles.configs("ffma", "f32", "kn") if c.bm == 64)
    # room for the exchange's slots: 8 float4s a thread, in cluster shares
    assert shared == tiles.cluster_smem(cfg, args["cluster"]) >= 8 * 16 * 128


def test_long_k_fp32_product_splits_k_in_two_kernels(ng):
    # 4096 x 32 x 4096, exact fp32: clusters would give each block 1024 of
    # K, where the FFMA clusters ran slower than split-K and its reduce
    # kernel (tiles._FFMA_CLUSTER_MAX_K)
    ng.dot(ng.empty((4096, 4096), np.float32), ng.empty((4096, 32), np.float32),
           ng.empty((4096, 32), np.float32))
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith("ga_gemm_ffma_") and args["cluster"] == 1 and args["splits"] > 1
    assert ng.launches[-1][0] == "ga_gemm_splitk_reduce"


@pytest.mark.parametrize("m, n, k, layout, kernel", [
    (4096, 4096, 4096, "kn", "128x256x16"),  # the wide tile, 2-4% faster (H200)
    (4096, 4096, 4096, "mn", "128x128x16"),  # A M-contiguous: no wide tile
    (3072, 3072, 3072, "kn", "128x128x16"),  # 24 wide tiles in its last wave: 128x128's alone run faster
    (4608, 4608, 1024, "kn", "128x128x16"),  # 64 K-tiles a block over 5 waves: the wide tile's ends cost
    (3072, 3072, 3072, "kk", "128x256x16"),  # 128x128x8 kk's lone blocks run no faster
])
def test_large_fp32_products_take_the_wide_ffma_tile_where_it_is_faster(ng, m, n, k, layout, kernel):
    A = ng.empty((k, m), np.float32).T if layout[0] == "m" else ng.empty((m, k), np.float32)
    B = ng.empty((n, k), np.float32).T if layout[1] == "k" else ng.empty((k, n), np.float32)
    ng.dot(A, B, ng.empty((m, n), np.float32))
    name, grid, block, args, shared = ng.launches[0]
    assert name == f"ga_gemm_ffma_{kernel}_f32_{layout}" and args["splits"] == 1
    if kernel.startswith("128x256"):
        cfg = next(c for c in tiles.configs("ffma", "f32", layout) if c.bn == 256)
        assert grid[0] == -(-m // 128) * -(-n // 256) and block[0] == 256 and shared == cfg.smem


def test_fp32_product_with_a_bias_leaves_its_epilogue_to_the_split_k_reduce(ng):
    # the FFMA kernels finish outputs with a bias one at a time, slowly: the
    # planner splits K in two kernels and the reduce kernel adds the bias
    ng.dot(ng.empty((1000, 784), np.float32), ng.empty((784, 256), np.float32),
           ng.empty((1000, 256), np.float32), bias=ng.empty((256,), np.float32), relu=True)
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith("ga_gemm_ffma_") and args["cluster"] == 1 and args["splits"] > 1
    assert ng.launches[1][0] == "ga_gemm_splitk_reduce"


def test_large_products_take_no_cluster(ng):
    ng.dot(ng.empty((4096, 4096), np.float16), ng.empty((4096, 4096), np.float16),
           ng.empty((4096, 4096), np.float16))
    _, grid, _, args, _ = ng.launches[0]
    assert args["cluster"] == 1 and grid[0] == ng.sms  # persistent: one block per SM


@pytest.mark.parametrize("dtype, m, n, family, cluster", [
    (np.float16, 4096, 4096, "ga_gemm_sm90_", 1),     # plain blocks
    (np.float16, 4096, 32, "ga_gemm_sm90_", 2),       # a cluster K-split
    (np.float32, 1000, 256, "ga_gemm_ffma_", 2),      # FFMA clusters
    (np.float32, 4096, 32, "ga_gemm_ffma_", 1),       # FFMA split-K and its reduce
])
def test_only_the_sm90_kernels_launch_as_dependents(ng, dtype, m, n, family, cluster):
    # a dependent launch may start before the previous kernel ends: only
    # the kernels that wait for it themselves (gemm_sm90.cuh) may ask for
    # it; the FFMA tiles and the split-K reduce launch plainly
    k = 784 if m == 1000 else 4096
    ng.dot(ng.empty((m, k), dtype), ng.empty((k, n), dtype), ng.empty((m, n), dtype))
    name, grid, block, args, shared = ng.launches[0]
    assert name.startswith(family) and (args["cluster"] > 1) == (cluster > 1)
    assert args["dependent"] == name.startswith("ga_gemm_sm90_")
    assert all(not launch[3]["dependent"] for launch in ng.launches[1:])


def test_dependent_launch_switch(ng, monkeypatch):
    monkeypatch.setattr(replay, "DEPENDENT_LAUNCH", False)
    ng.dot(ng.empty((4096, 4096), np.float16), ng.empty((4096, 4096), np.float16),
           ng.empty((4096, 4096), np.float16))
    assert not ng.launches[0][3]["dependent"]


def test_shared_weights_fold_into_m(ng):
    A, B = ng.empty((8, 50, 64), np.float32), ng.empty((64, 32), np.float32)
    ng.batched_dot(A, B, ng.empty((8, 50, 32), np.float32))
    _, args = _main(ng)
    assert (args["M"], args["batch"], args["kbatch"]) == (400, 1, 1)


def test_weight_gradient_folds_into_k(ng):
    x = ng.empty((8, 64, 50), np.float32).transpose(0, 2, 1)  # (8, 50, 64), M contiguous
    dy = ng.empty((8, 64, 32), np.float32)
    ng.batched_dot(x, dy, ng.empty((50, 32), np.float32))
    _, args = _main(ng)
    assert (args["M"], args["N"], args["K"], args["kbatch"]) == (50, 32, 512, 1)


def test_unfoldable_sum_over_batches_uses_kbatch(ng):
    A, B = ng.empty((8, 50, 64), np.float32), ng.empty((8, 64, 32), np.float32)
    ng.batched_dot(A, B, ng.empty((50, 32), np.float32))
    _, args = _main(ng)
    assert (args["batch"], args["kbatch"], args["batch_a"], args["batch_b"]) == (1, 8, 3200, 2048)


def test_unaligned_operands_use_the_unaligned_family(ng):
    A = ng.empty((64, 101), np.float16)[:, 1:]
    ng.dot(A, ng.empty((100, 64), np.float16), ng.empty((64, 64), np.float16))
    name, _ = _main(ng)
    assert name.startswith("ga_gemm_sm80u_")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_inner_product_is_a_1x1_gemm(ng, dtype):
    V, W = ng.empty((256,), dtype), ng.empty((512,), dtype)[::2]
    C = ng.empty((), dtype)
    ng.dot(V, W, C, alpha=2.0, beta=0.5, relu=True, bias=ng.empty((), np.float32))
    name, args = _main(ng)
    assert (args["M"], args["N"], args["K"], args["batch"], args["kbatch"]) == (1, 1, 256, 1, 1)
    assert (args["a_k"], args["b_k"], args["ldc"], args["bias_m"], args["bias_n"]) == (1, 2, 1, 0, 0)
    assert args["c"] == C.ptr
    assert args["flags"] == gk.EPI_RELU | gk.EPI_BIAS | gk.EPI_BETA
    family, _, input_name, layout = name.split("_")[2:]
    assert tiles.configs(family, input_name, layout)  # a kernel of the catalogue
    ng.launches.clear()
    C[...] = ng.dot(V, W)  # the lazy product: one GEMM into C
    _, args = _main(ng)
    assert (args["M"], args["N"], args["K"], args["c"], args["flags"]) == (1, 1, 256, C.ptr, 0)


def test_old_gpus_are_refused():
    ng = GemmRecordingGPU(arch="sm_75")
    with pytest.raises(tiles.UnsupportedDevice, match="compute capability 8.0"):
        ng.dot(ng.empty((8, 8), np.float16), ng.empty((8, 8), np.float16), ng.empty((8, 8), np.float16))


@pytest.mark.parametrize("family", sorted({c.family for c in tiles.CONFIGS}))
def test_catalogue_entries_are_consistent(family):
    for cfg in tiles.CONFIGS:
        if cfg.family != family:
            continue
        assert cfg.threads % 32 == 0 and cfg.smem <= 227 * 1024
        if cfg.tma:
            assert set(cfg.tma) >= {("a", l[0]) for l in cfg.layouts} | {("b", l[1]) for l in cfg.layouts}


def test_missing_cubins_raise_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(gk, "KERNEL_DIR", tmp_path)
    with pytest.raises(gk.KernelsMissing, match="make kernels"):
        gk.Library().function("gemm_sm90", "ga_gemm_sm90_128x256x64_f16_kn", 218192)


E4M3, E5M2 = gk.dtypes.float8_e4m3fn, gk.dtypes.float8_e5m2


def test_fp8_in_place_layout_reads_scales_on_the_device(ng, tensor_maps):
    A = ng.empty((300, 512), E4M3)                 # K contiguous
    B = ng.empty((1024, 512), E5M2).T              # (512, 1024), K contiguous
    C, sb, amax = ng.empty((300, 1024), E4M3), ng.empty((1,), np.float32), ng.empty((1,), np.float32)
    ng.dot(A, B, C, alpha=2.0, scale_a=0.5, scale_b=sb, scale_c=3.0, amax=amax)
    assert len(ng.launches) == 1  # no copy
    name, args = _main(ng)
    assert name.startswith("ga_gemm_fp8_sm90_") and name.endswith("x128_e4m3e5m2_kk")
    # a number scale_a folds into alpha, a number scale_c travels as post_scale
    assert (args["alpha"], args["post_scale"]) == (1.0, 3.0)
    assert (args["scale_a"], args["scale_b"], args["scale_c"], args["amax"]) == (0, sb.ptr, 0, amax.ptr)
    assert args["flags"] == gk.EPI_AMAX and args["c_type"] == gk.TYPE_CODE[E4M3] == 3
    assert [m["dtype"] for m in tensor_maps] == [E4M3, E5M2]
    assert tensor_maps[0]["box"][0] == 128 and tensor_maps[0]["strides"][0] == 512


def test_fp8_column_major_c_swaps_the_scales(ng, tensor_maps):
    A, B = ng.empty((64, 32), E4M3), ng.empty((48, 32), E4M3).T
    sa, sb = ng.empty((1,), np.float32), ng.empty((), np.float32)
    ng.dot(A, B, ng.empty((48, 64), np.float32).T, scale_a=sa, scale_b=sb)
    _, args = _main(ng)
    assert (args["M"], args["N"]) == (48, 64)
    assert (args["a"], args["b"], args["scale_a"], args["scale_b"]) == (B.ptr, A.ptr, sb.ptr, sa.ptr)


def test_fp8_other_layouts_are_copied_k_major(ng, tensor_maps):
    A, B = ng.empty((64, 32), E4M3), ng.empty((32, 48), E4M3)   # B row-major: N contiguous
    ng.dot(A, B, ng.empty((64, 48), np.float16), scale_a=1.0, scale_b=1.0)
    name, args = ng.launches[-1][0], ng.launches[-1][3]
    assert len(ng.launches) == 2 and name.endswith("_e4m3_kk")
    assert (args["b_k"], args["b_n"]) == (1, 32) and args["b"] != B.ptr


def test_fp8_needs_hopper():
    ng = GemmRecordingGPU(arch="sm_89")
    with pytest.raises(tiles.UnsupportedDevice, match="FP8 products run on Hopper"):
        ng.dot(ng.empty((8, 16), E4M3), ng.empty((8, 16), E4M3).T, ng.empty((8, 8), np.float32),
               scale_a=1.0, scale_b=1.0)
