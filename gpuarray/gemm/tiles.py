"""Which GEMM kernel runs a problem: the tile catalogue and its cost model.

In: a :class:`gpuarray.gemm.plan.Problem` and the device (architecture,
multiprocessor count).  Out: the kernel family, the candidate tile
configurations, the K-splits worth trying, and a modelled time for each
(config, splits) pair; :func:`gpuarray.gemm.plan.choose` takes the cheapest.

The model: a launch runs in waves of (tiles x splits x cluster) blocks
over the machine's block slots; a wave costs one tile's flops at the per-slot
share of the family's peak (scaled by the tile's measured efficiency),
plus its epilogue -- a cost per element of the whole tile, masked
elements included -- and a fixed cost per tile; no launch beats reading
its operands once from DRAM or a block streaming its own slice at twice
its fair share of bandwidth.  Split-K adds the partial sums' traffic and
one more launch; the cluster K-split of the sm90 and FFMA kernels (the
blocks of a cluster share a tile's K-tiles and add their accumulators
over distributed shared memory) adds the hand-over instead.  The epilogue
terms decide short products: a col matrix of 3.2 M rows x 32 times a
32 x 64 filter matrix ran 1.8x faster on 128 x 64 tiles than on the
128 x 128 ones the flops alone picked.  The FFMA kernels add what a small
launch shows: a 64 x 64 block alone on its SM runs faster than one of
four, a K-tile costs a least time whatever its flops, and outputs
finished one at a time (a bias) cost more than the float4 stores.
"""
import numpy as np

from ..core import dtypes
from .catalogue import Config

# Hopper-class figures (H100/H200); used as ratios, so other GPUs rank alike
_PEAK = {"sm90": 900e12, "sm90_tf32": 450e12, "fp8_sm90": 1800e12, "sm80": 500e12,
         "sm80_tf32": 250e12, "ffma": 64e12}
DRAM_BYTES_PER_S = 3.8e12
_LAUNCH_S = 2.5e-6
# the reduce kernel after the main one (GPU time, H200 sweeps)
SPLIT_S = 6e-6
# per sm90 tile: the epilogue's time per element of the tile (masked ones
# included) and a fixed cost, fitted to H100 sweeps of K <= 192 products
# whose tiles run 0.4-9 us each (M = 1.6-3.2 M, N = 32-64, every sm90 tile)
_EPILOGUE_S_PER_ELEMENT = 0.25e-9
_TILE_S = 0.45e-6
_SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
_MIN_KTILES_PER_SPLIT = 4
#: blocks of a cluster K-split (8: the largest portable cluster)
CLUSTERS = (2, 3, 4, 8)
#: families whose kernels run the cluster K-split (on sm_90 and newer)
_CLUSTER_FAMILIES = ("sm90", "fp8_sm90", "ffma", "ffmau")
# the cluster K-split's cost per tile.  sm90: a fixed part (the cluster
# barrier at the start, the hand-over) and block 0 reading the others'
# accumulators, fitted to H100 kernel-alone times (64x32 to 128x128 tiles,
# 2-3 blocks: 1.8 us for 8 KB read, 5.8 for 128 KB).  FFMA (every block
# adds a share, gemm_ffma.cu's cluster_reduce): a fixed part and a part per
# block, fitted with the terms below to H100 sweeps of MNIST's eight
# products (every tile, split and cluster forced; the picks ran 0-1.5 us
# slower than the fastest, 10 us a training step faster than before).
_CLUSTER_S = 2.3e-6
_DSMEM_BYTES_PER_S = 30e9
_FFMA_CLUSTER_S = 1.0e-6
_FFMA_CLUSTER_BLOCK_S = 0.4e-6
# ... and those terms hold for short shares of K only: with more than this
# many K a block, FFMA clusters ran far slower than modelled (H200,
# 4096x32x4096 in clusters of 4, 1024 K a block: 93 us modelled 79, where
# 8 plain K-splits took 73; 784x128x4096 in clusters of 4, 46.6 against
# 41.6 split 16), so the planner does not offer them (MNIST's products,
# the fit's, keep at most 500)
_FFMA_CLUSTER_MAX_K = 512
# FFMA 64x64 tiles (4 warps, 4 blocks an SM): a block alone on its SM ran
# about 3.5x faster than one of four; the 128x128 ones (8 warps, 2 an SM)
# did not run faster alone (1000x256x784 in 128 clusters of 8: 31 us)
_LONE_BLOCK_EXPONENT = 0.9
# ... but in the last, part-filled wave of a long launch the 128x128x16
# ones do (Config.lone_tail): at 3072^3 (576 blocks, 2 an SM: two full
# waves, then 48 blocks alone on their SMs) the last wave took 0.53 of a
# full one's time (H200), which keeps the one-an-SM 128x256 tiles (24
# blocks in their last wave, at full cost: 1708 against 1476 us) off such
# launches.  The 128x128x8 kk ones, both operands staged through registers
# a K-tile ahead, do not: their last wave at 3072^3 took a full wave's time.
# A 128x256 FFMA block (one an SM) overlaps nothing with its tile's start
# and end (the ring's first copies, 128 KB of C stored): fitted to eleven
# forced pairs of 128x256 and 128x128 tiles (H200), where the wide tile
# lost with 16-64 K-tiles a block over several waves or splits (1024^3 in
# 4 splits 72.9 against 66.5 us, 4608x4608x1024 1042 against 989) and won
# 2-4% from 128 K-tiles (4096^3 3007 against 3111)
_FFMA_ALONE_TILE_S = 10e-6
# FFMA kernels finishing their outputs one at a time (a bias, beta, a
# 16-bit C; a float32 C with at most relu goes out as float4s): a fixed
# part and a part per output a thread, the loads of the bias not
# overlapping (1000x256x784 with bias and relu against plain: 45.7 against
# 34.3 us unsplit, 28.9 against 21.3 in clusters of 2, about 5 us more in
# clusters of 4).  Split-K leaves this epilogue to its reduce kernel.
_FFMA_ELEMENT_FIXED_S = 3.5e-6
_FFMA_ELEMENT_S = 0.25e-6
# FFMA kernels: the least time a block spends on a K-tile, however few
# blocks share its SM (the register-staged loads of the unaligned kernels
# are not hidden by the few warps of a lone block: 1000x10x100, row-major
# operands, took 18.8 us for 13 K-tiles of 8 on the H100, the flops alone
# 4; about 0.6 us a K-tile with a transposed A)
_KTILE_MIN_S = {"ffma": 0.3e-6, "ffmau": 0.9e-6}

_HALF = ("f16", "bf16")
_F32 = ("f32",)
_TF32 = ("tf32",)
#: FP8 operand pairs (A type then B type, one name when they agree): the
#: promoted kernels, then the fast-accumulation ones
_FP8 = ("e4m3", "e5m2", "e4m3e5m2", "e5m2e4m3")
_FP8_FAST = tuple(name + "fast" for name in _FP8)
_FP8_NAMES = {dtypes.float8_e4m3fn: "e4m3", dtypes.float8_e5m2: "e5m2"}


def _sm90(bm, bn, bk, smem, inputs, efficiency, layouts=("kn", "kk", "mn", "mk"),
          family="sm90"):
    """A TMA/wgmma tile: boxes per (operand, layout) as gemm_sm90.cu's table."""
    b_n = (32, 64, 64) if bn == 32 else (64, 64, 128)
    tma = {("a", "k"): (bk, bm, 128), ("a", "m"): (64, 64, 128),
           ("b", "n"): b_n, ("b", "k"): (bk, bn, 128)}
    threads = 128 * (min(bm // 64, 2) + 1)  # consumer warpgroups (two of 128 rows at bm = 256), producer
    return Config(family, bm, bn, bk, threads, smem, inputs, layouts,
                  tma=tma, efficiency=efficiency, persistent=True)


def _fp8(bm, bn, smem, efficiency, inputs=_FP8 + _FP8_FAST):
    """An FP8 tile of gemm_fp8_sm90.cu: K-major operands, 128-element K-tiles."""
    return _sm90(bm, bn, 128, smem, inputs, efficiency, ("kk",), family="fp8_sm90")


#: every kernel the planner may pick: tile, threads, shared memory (the
#: largest over layouts), blocks per SM and measured efficiency (H200)
CONFIGS = (
    _sm90(128, 256, 64, 218192, _HALF, 0.75),
    _sm90(128, 128, 64, 218224, _HALF, 0.67),
    _sm90(128, 64, 64, 218256, _HALF, 0.41),
    _sm90(64, 128, 64, 208016, _HALF, 0.43),
    _sm90(64, 64, 64, 224480, _HALF, 0.28),
    _sm90(64, 32, 64, 208144, _HALF, 0.16),
    _sm90(128, 256, 32, 218192, _TF32, 0.78, ("kk",)),
    _sm90(128, 128, 32, 218224, _TF32, 0.65, ("kk",)),
    _sm90(128, 64, 32, 218256, _TF32, 0.5, ("kk",)),
    _sm90(64, 32, 32, 208144, _TF32, 0.3, ("kk",)),
    _fp8(128, 256, 218192, 0.63),
    _fp8(128, 128, 218224, 0.58),
    _fp8(128, 64, 218256, 0.4),
    _fp8(64, 128, 208016, 0.4),
    _fp8(64, 32, 208144, 0.15),
    Config("sm80", 128, 128, 32, 256, 81920, _HALF, per_sm=2, efficiency=0.5),
    Config("sm80", 64, 64, 32, 128, 40960, _HALF, per_sm=4, efficiency=0.32),
    Config("sm80", 128, 128, 32, 256, 98304, _TF32, per_sm=1, efficiency=0.44),
    Config("sm80", 64, 64, 32, 128, 49152, _TF32, per_sm=3, efficiency=0.34),
    Config("sm80u", 128, 128, 32, 256, 40960, _HALF, per_sm=1, efficiency=0.22),
    Config("sm80u", 64, 64, 32, 128, 20480, _HALF, per_sm=3, efficiency=0.2),
    Config("sm80u", 128, 128, 32, 256, 65536, _TF32, per_sm=1, efficiency=0.32),
    Config("sm80u", 64, 64, 32, 128, 32768, _TF32, per_sm=3, efficiency=0.25),
    Config("ffma", 128, 256, 16, 256, 75264, _F32, ("kn",), per_sm=1, efficiency=0.745),
    Config("ffma", 128, 128, 16, 256, 50688, _F32, ("kn", "mn", "mk"), per_sm=2,
           efficiency=0.72, lone_tail=0.55),
    Config("ffma", 128, 128, 8, 256, 16896, _F32, ("kk",), per_sm=2, efficiency=0.66),
    Config("ffma", 128, 256, 16, 256, 50176, _F32, ("kk",), per_sm=1, efficiency=0.695),
    Config("ffma", 64, 64, 16, 128, 26112, _F32, per_sm=4, efficiency=0.5),
    Config("ffmau", 128, 128, 8, 256, 16896, _F32, per_sm=2, efficiency=0.62),
    Config("ffmau", 64, 64, 8, 128, 8704, _F32, per_sm=4, efficiency=0.45),
)

#: tiles only the convolution kernels are built with (kernels/conv_sm90.cu):
#: 128x192 for layers of 192 or 384 channels, which a 128x256 tile leaves
#: a quarter empty (efficiency: between its neighbours', not swept), and
#: (fprop and the data gradient only) 256-row tiles for layers of few output
#: channels, whose 128-row tiles wait on operand bytes from L2.  Their
#: efficiencies were set against benchmarks/conv_schedule.py's sweep of
#: the convnets' layers (H100, fp16, 2026-11-28): 256x96 at 0.68 took
#: AlexNet conv5's 256 filters (57 against 52 us on 128x128); at 0.6 it
#: keeps to outputs of about 96 columns
CONV_CONFIGS = (
    _sm90(128, 192, 64, 226400, _HALF, 0.74),
    _sm90(256, 128, 64, 218192, _HALF, 0.75),
    _sm90(256, 96, 64, 218192, _HALF, 0.6),
    _sm90(256, 64, 64, 226400, _HALF, 0.52),
)


class UnsupportedDevice(RuntimeError):
    """The GPU is older than the GEMM kernels' oldest target (sm_80)."""


def _major(gpu):
    """The GPU's compute capability major number ("sm_90" -> 9)."""
    return int(gpu.arch[3:-1])


def family(gpu, prob):
    """Kernel family for ``prob`` on ``gpu`` (see catalogue)."""
    major = _major(gpu)
    if major < 8:
        raise UnsupportedDevice(f"GEMM kernels need compute capability 8.0 or newer; "
                                f"this GPU is {gpu.arch}")
    if prob.call.fp8:
        if major != 9:
            raise UnsupportedDevice(f"FP8 products run on Hopper's tensor cores (sm_90); "
                                    f"this GPU is {gpu.arch}")
        return "fp8_sm90"
    aligned = prob.a.aligned(16) and prob.b.aligned(16)
    if prob.dtype == np.float32 and prob.call.precision == "fp32":
        return "ffma" if aligned else "ffmau"
    tma_ok = major == 9 and aligned and (prob.call.precision != "tf32" or prob.layout == "kk")
    if tma_ok and configs("sm90", input_name(prob), prob.layout):
        return "sm90"
    return "sm80" if aligned else "sm80u"


def operands_to_pack(gpu, prob):
    """Operands worth copying K-major so that a TF32 product runs on wgmma
    (which reads 32-bit operands K-major only) rather than mma.sync; for
    FP8 (which only wgmma runs, K-major) every operand that is not K-major
    or not 16-byte aligned."""
    if prob.call.fp8:
        return [name for name, op in (("a", prob.a), ("b", prob.b))
                if op.layout != "k" or not op.aligned(16)]
    if gpu.arch != "sm_90" or prob.call.precision != "tf32" or prob.layout == "kk":
        return ()
    names = [name for name, op in (("a", prob.a), ("b", prob.b)) if op.layout != "k"]
    flops = 2.0 * prob.m * prob.n * prob.k * prob.kbatch * prob.batch
    saved = flops * (1 / (_PEAK["sm80_tf32"] * 0.44) - 1 / (_PEAK["sm90_tf32"] * 0.78))
    copied = sum((prob.k * prob.kbatch) * (prob.m if name == "a" else prob.n) * prob.batch
                 for name in names) * 4 * 2
    return names if saved > copied / DRAM_BYTES_PER_S + len(names) * SPLIT_S else ()


def input_name(prob):
    """Kernel-name spelling of the operands' type: f16, bf16, f32, tf32 or an FP8 pair."""
    if prob.call.precision == "tf32":
        return "tf32"
    if prob.call.fp8:
        a, b = _FP8_NAMES[prob.a.t.dtype], _FP8_NAMES[prob.b.t.dtype]
        return (a if a == b else a + b) + ("fast" if prob.call.precision == "fast" else "")
    return "bf16" if prob.dtype == dtypes.bfloat16 else {2: "f16", 4: "f32"}[prob.dtype.itemsize]


def configs(family_name, input_name, layout):
    """Tile configurations of a family that compile ``input_name`` in ``layout``."""
    return [c for c in CONFIGS
            if c.family == family_name and input_name in c.inputs and layout in c.layouts]


def ktile_seconds(gpu, cfg):
    """Modelled seconds for one block of ``cfg`` to run one K-tile (its
    slot's share of the family's peak, at the tile's measured efficiency)."""
    peak = _PEAK[cfg.family.rstrip("u")]
    return 2.0 * cfg.bm * cfg.bn * cfg.bk / (peak * cfg.efficiency / (gpu.sms * cfg.per_sm))


def split_choices(gpu, prob, cfg):
    """K-splits worth modelling: only while the tiles leave block slots idle."""
    tiles = -(-prob.m // cfg.bm) * -(-prob.n // cfg.bn) * prob.batch
    ktiles = prob.kbatch * -(-prob.k // cfg.bk)
    slots = gpu.sms * cfg.per_sm
    return [s for s in _SPLITS
            if s == 1 or (tiles * (s // 2 or 1) < slots and ktiles // s >= _MIN_KTILES_PER_SPLIT)]


def cluster_choices(gpu, prob, cfg, capacity):
    """Cluster K-splits worth modelling (1: none): sizes of CLUSTERS whose
    clusters hold every tile in one wave, each block keeping a few K-tiles
    (an FFMA block at most ``_FFMA_CLUSTER_MAX_K`` of K).

    ``capacity()`` gives {size: clusters the GPU runs at once}; it is asked
    only when clusters of two could hold every tile (a driver query)."""
    if cfg.family not in _CLUSTER_FAMILIES or _major(gpu) < 9:
        return [1]
    tiles = -(-prob.m // cfg.bm) * -(-prob.n // cfg.bn) * prob.batch
    if 2 * tiles > gpu.sms * cfg.per_sm:
        return [1]
    ktiles = prob.kbatch * -(-prob.k // cfg.bk)
    # (an FFMA block's K-tiles are short: one each can pay; the model weighs it)
    ffma = cfg.family.startswith("ffma")
    least = 1 if ffma else _MIN_KTILES_PER_SPLIT
    most = _FFMA_CLUSTER_MAX_K // cfg.bk if ffma else ktiles
    fits = capacity()
    return [1] + [c for c in CLUSTERS
                  if tiles <= fits[c] and least <= ktiles // c and -(-ktiles // c) <= most]


def element_epilogue(prob):
    """Whether the FFMA kernels finish ``prob``'s outputs one at a time
    (gemm_ffma.cu's vec_epilogue, less C's alignment)."""
    call = prob.call
    return (call.bias is not None or call.beta != 0 or call.c.dtype != np.float32
            or bool(call.c.rounding))


def cluster_smem(cfg, cluster):
    """Dynamic shared memory of ``cfg``'s launches in clusters of ``cluster``
    blocks.  The FFMA kernels exchange their accumulators through it: every
    block holds ``cluster`` slots of ceil(V / cluster) float4s a thread, V
    = the float4s of a thread's accumulators (gemm_ffma.cu's cluster_reduce);
    the sm90 kernels pass them through their drained operand rings."""
    if cfg.family.endswith("sm90"):
        return cfg.smem
    vectors = cfg.bm * cfg.bn // (4 * cfg.threads)
    return max(cfg.smem, cluster * -(-vectors // cluster) * 16 * cfg.threads)


def _ffma_tile(gpu, prob, cfg, per_tile, blocks, k_chunk, splits, cluster):
    """An FFMA block's modelled seconds for its tile, from ``per_tile`` (its
    flops at its slot's share): the terms of small launches above."""
    if cfg.per_sm >= 4:
        # fewer blocks than slots: each shares its SM's FFMA pipes with fewer others
        per_tile /= (cfg.per_sm / min(cfg.per_sm, -(-blocks // gpu.sms))) ** _LONE_BLOCK_EXPONENT
    per_tile = max(per_tile, k_chunk // cfg.bk * _KTILE_MIN_S[cfg.family])
    if cfg.per_sm == 1:
        per_tile += _FFMA_ALONE_TILE_S
    if cluster > 1:
        per_tile += _FFMA_CLUSTER_S + (cluster - 1) * _FFMA_CLUSTER_BLOCK_S
    if splits == 1 and element_epilogue(prob):
        per_tile += _FFMA_ELEMENT_FIXED_S + cfg.bm * cfg.bn / (cfg.threads * cluster) * _FFMA_ELEMENT_S
    return per_tile


def _waves(gpu, cfg, blocks, waves):
    """Waves of a launch in units of a full wave's time: a last wave that
    leaves each block alone on its SM takes ``cfg.lone_tail`` of a full
    one (single waves keep their calibrated whole-wave cost)."""
    last = blocks - (waves - 1) * gpu.sms * cfg.per_sm
    if waves > 1 and cfg.per_sm > 1 and last <= gpu.sms:
        return waves - 1 + cfg.lone_tail
    return waves


def model_time(gpu, prob, cfg, splits, cluster=1):
    """Modelled seconds of (cfg, splits, cluster) for ``prob`` (for ranking only)."""
    peak = _PEAK[cfg.family.rstrip("u") + ("_tf32" if prob.call.precision == "tf32" else "")]
    slots = gpu.sms * cfg.per_sm
    tiles = -(-prob.m // cfg.bm) * -(-prob.n // cfg.bn) * prob.batch
    ktiles = prob.kbatch * -(-prob.k // cfg.bk)
    k_chunk = -(-ktiles // (splits * cluster)) * cfg.bk
    blocks = tiles * splits * cluster
    waves = -(-blocks // slots)
    per_tile = 2.0 * cfg.bm * cfg.bn * k_chunk / (peak * cfg.efficiency / slots)
    if cfg.family.endswith("sm90"):  # measured there (the other families' epilogues differ)
        per_tile += cfg.bm * cfg.bn * _EPILOGUE_S_PER_ELEMENT + _TILE_S
        if cluster > 1:
            per_tile += _CLUSTER_S + (cluster - 1) * cfg.bm * cfg.bn * 4 / _DSMEM_BYTES_PER_S
    elif cfg.family.startswith("ffma"):
        per_tile = _ffma_tile(gpu, prob, cfg, per_tile, blocks, k_chunk, splits, cluster)
    compute = _waves(gpu, cfg, blocks, waves) * per_tile
    isz = prob.dtype.itemsize
    stream = waves * (cfg.bm + cfg.bn) * k_chunk * isz / (2 * DRAM_BYTES_PER_S / slots)
    kb = prob.k * prob.kbatch
    dram = (prob.batch * (prob.m + prob.n) * kb * isz
            + prob.batch * prob.m * prob.n * prob.call.c.itemsize) / DRAM_BYTES_PER_S
    time = max(compute, stream, dram) + _LAUNCH_S
    if splits > 1:
        time += (splits + 1) * prob.batch * prob.m * prob.n * 4 / DRAM_BYTES_PER_S + SPLIT_S
    return time
