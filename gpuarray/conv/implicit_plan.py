"""Plans of the implicit-GEMM convolution kernels (kernels/conv_sm90.cu).

In: a layer (a :class:`~gpuarray.conv.layer.ConvLayer`), the pass and the
epilogue's structure.  Out: a :class:`~gpuarray.gemm.replay.GemmPlan` --
the kernel and its grid, the packed ``ConvGemmArgs`` (``GemmArgs`` then
``ConvGeom``) with holes for pointers and scalars, and the geometry of the
two TMA descriptors (an im2col map of the gathered activations, a tiled
map of the other operand) -- which :mod:`~gpuarray.conv.implicit` records
once per situation and replays.  The GEMM each pass is, and every
descriptor's fields, are in conv_sm90.cu's header.
"""
import functools
import struct

import numpy as np

from ..cuda import tensor_maps
from ..gemm import catalogue as gk, tiles as gemm_tiles
from ..gemm.replay import GemmPlan, TensorMap, sm90_kernel, with_output_map
from . import fastdiv
from .layer import ConvLayer

STEM = "conv_sm90"
#: tiles conv_sm90.cu instantiates (the 256-row ones for fprop and bprop only)
TILES = ((256, 128), (256, 96), (256, 64), (128, 256), (128, 192), (128, 128), (128, 64),
         (64, 128), (64, 64))
#: channels (or output positions) per K-tile: one 128-byte swizzle row of fp16/bf16
CHUNK = 64
#: ConvGeom (kernels/conv_loads.cuh): P, Q, R, S, cchunks, C, strides, paddings,
#: dilations, then the FastDiv of P*Q, Q, S, cchunks and 64 * cchunks
GEOM = struct.Struct("<12i" + fastdiv.FORMAT * 5)
#: ConvGemmArgs is GemmArgs then ConvGeom, padded to the 64-byte alignment
ARGS_BYTES = 768
#: split-K: at least this many K-tiles per split
MIN_KTILES_PER_SPLIT = 8
#: threads per block of gemm_splitk.cu's reduce kernel
REDUCE_THREADS = 256
#: choose_schedule's answer for the stream-K schedule
STREAM_K = "stream-K"
#: stream-K's modelled fix-up: a fixed cost, and the rate at which the
#: finishing block of a cut tile takes in each other block's partial tile
#: (fitted to sweeps of the convnets' filter gradients on an H100: ~4.4 us
#: a 128x256 tile, which makes stream-K lose wherever a tile is cut
#: between more than about five blocks)
STREAM_K_FIXUP_S = 2e-6
STREAM_K_BYTES_PER_S = 30e9
#: fprop's and bprop's shared K-tiles run this much slower under stream-K
#: than in waves of whole tiles: its blocks work on tiles far apart, which
#: share less of the gathered input in L2.  Fitted to the convnets' layers
#: on an H100 (benchmarks/conv_schedule.py, fp16, 2026-11-28: 1.02 to 1.10
#: lose least against the fastest schedule measured per layer, 7 us over
#: 47 layer passes; without the whole waves first, stream-K's K-tiles ran
#: 1.19-1.26x slower than data-parallel ones)
STREAM_K_FPROP_SLOWDOWN = 1.06
#: the filter gradient's 128x256 tiles run in multicast pairs where their
#: rows pair up (conv_sm90.cu's ..._update_mc2: the two blocks of a cluster
#: take vertically adjacent tiles and read their shared B from L2 once;
#: without it the tiles ran at 92% of L2 throughput, 75% tensor-pipe use)
PAIRED_UPDATE = True
#: blocks per multicast cluster
PAIR = 2
#: fprop's and bprop's tiles that run in ping-pong when data-parallel
#: (conv_sm90.cu's ..._pp kernels: each consumer warpgroup a whole tile, the
#: two taking turns, so one's epilogue runs under the other's wgmmas).  H200,
#: kernels alone, same run, against the same tiles cooperative: VGG-A conv7
#: and conv8 fprop 102.4 -> 95.5 us, bprop 107.3 -> 104.5, AlexNet conv5
#: fprop 52.4 -> 49.0; on the layers that pick wider tiles it stayed behind
#: them (VGG-A conv2 fprop: 240 against 224 on 256x128)
PINGPONG_TILES = {(128, 128)}
#: ... where every block has at least this many tiles: a block's only tile
#: runs on one warpgroup (GoogLeNet 5b's 3x3 reduce, 98 tiles: 11.6 -> 12.4 us)
PINGPONG_MIN_TILES = 2
#: how much faster the paired update's K-tiles run than unpaired ones (H200,
#: the convnets' paired updates, kernels alone: 2871 -> 2609 us)
PAIR_SPEEDUP = 1.10
#: the filter gradient's 128x192 tiles cover output area this much slower
#: than its 128x256 ones (three gathered B panels a K-tile share each A
#: panel where four do).  Measured per unit of tile area on the H200,
#: kernels alone, same run: VGG-A conv2 0.91, GoogLeNet conv3 0.91 (against
#: pairs of 256), AlexNet conv3 0.89, GoogLeNet 3a 3x3 0.99; 0.95 picks the
#: faster tile on those four (GoogLeNet 5b's 7x7 layers, 192 within 5%
#: faster, stay on 256)
UPDATE_192_RATE = 0.95
#: fprop with a bias, of layers of 97 to 128 filters, runs transposed
#: (conv_sm90.cu's ..._fprop_t: the filters as a 128x256 tile's rows, 256
#: output positions as its columns, gathered as B), where the bias runs along
#: the tile's rows: two values a thread, in registers, against a column
#: bias copied through shared memory every tile.  H200, fp16, kernels alone,
#: same run, bias and relu: VGG-A conv2 262 -> 242 us, GoogLeNet 3a's 3x3
#: 56.0 -> 54.0, 3b's 1x1 33.8 -> 32.0; without a bias the transposed tiles
#: ran 1-5% slower (VGG-A conv2 225 -> 236), and over 96 filters no faster
#: with one (GoogLeNet 3a's 5x5 reduce on 256x96: 26.8 both).  Without beta,
#: data-parallel, over at least a wave of tiles.
TRANSPOSED_MAX_FILTERS = 128
TRANSPOSED_MIN_FILTERS = 97
TRANSPOSED_TILE = (128, 256)


class Im2colMap(TensorMap):
    """An im2col descriptor: fixed geometry, encoded once per recent address
    (:class:`~gpuarray.gemm.replay.TensorMap`'s cache)."""

    def __init__(self, dtype, dims, strides, lower, upper, pixels, element_strides):
        self.geometry = (dtype, dims, strides, lower, upper, CHUNK, pixels, element_strides, 128)
        self.encoded = {}

    def _make(self, ptr):
        return tensor_maps.encode_im2col(ptr, *self.geometry)


def bprop_layer(layer):
    """The fprop layer whose output is ``layer``'s data gradient (unit stride only).

    grad_I = conv(E, F') with F'[c, r, s, k] = F[k, R-1-r, S-1-s, c] (the
    kernel reads F' from F) and padding ``dil * (extent - 1) - pad``.
    """
    return _bprop_layer(layer.dtype, layer.N, layer.C, layer.K, layer.P, layer.Q, layer.R,
                        layer.S, layer.pad[1:], layer.dilation[1:])


@functools.lru_cache(maxsize=256)
def _bprop_layer(dtype, N, C, K, P, Q, R, S, pad, dil):
    return ConvLayer(dtype, N, K, C, H=P, W=Q, R=R, S=S, pad_h=dil[0] * (R - 1) - pad[0],
                     pad_w=dil[1] * (S - 1) - pad[1], dil_h=dil[0], dil_w=dil[1])


def choose(gpu, m, n, configs=None):
    """The tile with the least modelled time for an M x N output: waves of
    tiles over the SMs, each costing its area over the tile's measured
    efficiency (the GEMM catalogue's); among ``configs`` (default: every
    fprop tile)."""
    best = None
    for cfg in configs or _configs():
        count = -(-m // cfg.bm) * -(-n // cfg.bn)
        waves = -(-count // gpu.sms)
        cost = (waves * cfg.bm * cfg.bn / cfg.efficiency, -cfg.bm * cfg.bn)
        if best is None or cost < best[0]:
            best = (cost, cfg)
    return best[1]


def choose_fprop(gpu, m, n, ktiles):
    """fprop's (and bprop's) tile and schedule for an M x N output of
    ``ktiles`` K-tiles: ``(cfg, stream_k)``.  Data-parallel on the tile of
    :func:`choose`, unless stream-K on some tile models faster, its shared
    K-tiles :data:`STREAM_K_FPROP_SLOWDOWN` slower: where the tiles leave
    the last wave part-empty (Overfeat's conv3 data gradient: 288 tiles of
    128x128, 2.2 waves, 104 us; stream-K on 128x256, 74 us), the whole
    waves but the last one or two run as they are and every SM then takes
    an equal share of the other tiles' K-tiles."""
    cfg = choose(gpu, m, n)
    best = (waves_seconds(gpu, cfg, -(-m // cfg.bm) * -(-n // cfg.bn), ktiles), cfg, False)
    for other in _configs():
        seconds = stream_k_seconds(gpu, other, -(-m // other.bm) * -(-n // other.bn), ktiles,
                                   STREAM_K_FPROP_SLOWDOWN, whole_first=True)
        if seconds is not None and seconds < best[0]:
            best = (seconds, other, True)
    return best[1], best[2]


def waves_seconds(gpu, cfg, tiles, ktiles):
    """Modelled seconds of ``tiles`` whole tiles of ``ktiles`` K-tiles each,
    in waves over the SMs (the data-parallel schedule, or a K-split's)."""
    return -(-tiles // gpu.sms) * ktiles * gemm_tiles.ktile_seconds(gpu, cfg)


def stream_k_seconds(gpu, cfg, tiles, ktiles, slowdown=1.0, whole_first=False):
    """Modelled seconds of the stream-K schedule over ``tiles`` output tiles
    of ``ktiles`` K-tiles each (kernels/stream_k.cuh), or None where it
    cannot run.  With ``whole_first`` and two waves of tiles or more, all
    but the last one or two waves run whole, one tile a block; every SM
    then runs an equal share of the other tiles' K-tiles, each ``slowdown``
    times the tile's K-tile time, and a tile cut between blocks costs its
    finishing block one partial tile read per other block sharing it,
    through L2."""
    iters = tiles * ktiles
    if not gpu.sms <= iters < 2**31:  # a K-tile per block; the kernel's 32-bit indices
        return None
    whole = (tiles // gpu.sms - 1) * gpu.sms if whole_first and tiles >= 2 * gpu.sms else 0
    share = -(-(tiles - whole) * ktiles // gpu.sms)
    sharing = -(-ktiles // share) + 1  # the most blocks one tile is cut between
    fixup = STREAM_K_FIXUP_S + sharing * cfg.bm * cfg.bn * 4 / STREAM_K_BYTES_PER_S
    per_ktile = gemm_tiles.ktile_seconds(gpu, cfg)
    return (whole // gpu.sms * ktiles + share * slowdown) * per_ktile + fixup


def _configs():
    return [cfg for cfg in gemm_tiles.CONFIGS + gemm_tiles.CONV_CONFIGS
            if cfg.family == "sm90" and "f16" in cfg.inputs and (cfg.bm, cfg.bn) in TILES]


def _config(bm, bn):
    return next(cfg for cfg in _configs() if (cfg.bm, cfg.bn) == (bm, bn))


def record_fprop(gpu, layer, relu, beta, bias, kind="fprop", filters=None, ldi=None, ldo=None):
    """fprop's plan (``kind="bprop"``: ``layer`` is the bprop layer and
    ``filters`` the original layer, whose F the kernel reads mirrored);
    ``ldi`` / ``ldo``: elements between the input's / output's positions
    (default: their channel counts; larger for a channel slice).  Tiles
    of :data:`PINGPONG_TILES` on a data-parallel schedule take the
    ping-pong kernel where every block has :data:`PINGPONG_MIN_TILES`;
    fprop with a bias and without beta runs transposed where
    :func:`transposed` says so."""
    m, n = layer.N * layer.P * layer.Q, layer.K
    ktiles = layer.R * layer.S * -(-layer.C // CHUNK)
    flags = (gk.EPI_RELU if relu else 0) | (gk.EPI_BIAS if bias is not None else 0)
    if kind == "fprop" and not beta and bias is not None and transposed(gpu, m, n):
        return _record_transposed(gpu, layer, flags, bias, ktiles, ldi, ldo)
    cfg, stream_k = choose_fprop(gpu, m, n, ktiles)
    flags |= ((gk.EPI_BETA if beta else 0)
              | (gk.SCHED_STREAM_K | gk.SCHED_WHOLE_FIRST if stream_k else 0))
    strides = (0, 1, 1, 0, ldo or n, 0, 0, 0, 0,
               bias.strides[0] // bias.itemsize if bias is not None else 0)
    ints = (m, n, ktiles * CHUNK, 1, 1, 1, ktiles, flags, gk.TYPE_CODE[layer.dtype],
            gk.TYPE_CODE[bias.dtype] if bias is not None else 0)
    b_map = filter_map(layer, cfg.bn) if filters is None else filter_map(filters, CHUNK)
    tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
    if not stream_k and (cfg.bm, cfg.bn) in PINGPONG_TILES and tiles >= PINGPONG_MIN_TILES * gpu.sms:
        kind += "_pp"
    return _plan(gpu, layer, cfg, kind, strides, ints, 1,
                 (im2col_map(layer, cfg.bm, ldi), b_map))


def transposed(gpu, m, n):
    """Whether fprop's M x N output (M output positions, N filters), with
    a bias, runs transposed: :data:`TRANSPOSED_MIN_FILTERS` to
    :data:`TRANSPOSED_MAX_FILTERS` filters, and at least a wave of the
    transposed tiles."""
    bm, bn = TRANSPOSED_TILE
    tiles = -(-n // bm) * -(-m // bn)
    return TRANSPOSED_MIN_FILTERS <= n <= TRANSPOSED_MAX_FILTERS and tiles >= gpu.sms


def _record_transposed(gpu, layer, flags, bias, ktiles, ldi, ldo):
    """fprop's plan as C^T = F im2col(I)^T: the kernel's A is F (its rows the
    filters), its B the gathered input, and it stores C transposed into O
    (a bias along its rows); the caller passes F before I (``swapped``)."""
    m, n = layer.K, layer.N * layer.P * layer.Q
    cfg = _config(*TRANSPOSED_TILE)
    strides = (0, 1, 1, 0, ldo or m, 0, 0, 0, bias.strides[0] // bias.itemsize, 0)
    ints = (m, n, ktiles * CHUNK, 1, 1, 1, ktiles, flags, gk.TYPE_CODE[layer.dtype],
            gk.TYPE_CODE[bias.dtype])
    return _plan(gpu, layer, cfg, "fprop_t", strides, ints, 1,
                 (filter_map(layer, cfg.bm), im2col_map(layer, cfg.bn, ldi)), swapped=True)


def padded_channels(layer):
    """Columns per filter tap of the filter gradient's GEMM: C rounded up to
    whole 64-channel chunks (when C % 64 != 0 the GEMM writes an fp32
    (K, 1, R, S, padded) result and the caller keeps the first C channels)."""
    return -(-layer.C // CHUNK) * CHUNK


def record_update(gpu, layer, beta, lde=None):
    """The filter gradient's plan: the largest tile that fits, and the K
    axis (N*P*Q positions: long; the output, K x R*S*C, small) spread over
    the SMs by stream-K or by split-K, whichever the model says is faster
    (:func:`choose_schedule`); ``lde``: elements between E's positions
    (default K).  With C % 64 != 0 the plan writes the padded fp32 result
    of :func:`padded_channels`, without beta."""
    padded = padded_channels(layer)
    m, n, k = layer.K, layer.R * layer.S * padded, layer.N * layer.P * layer.Q
    cfg, paired = choose_update_tile(gpu, m, n)
    ktiles = -(-k // CHUNK)
    splits = choose_schedule(gpu, cfg, m, n, ktiles)
    flags = gk.EPI_BETA if beta else 0
    if splits == STREAM_K:
        flags |= gk.SCHED_STREAM_K
        splits, per_split = 1, ktiles
    else:
        per_split = -(-ktiles // splits)
        splits = -(-ktiles // per_split)
    c_type = gk.TYPE_CODE[layer.dtype if padded == layer.C else np.dtype(np.float32)]
    ints = (m, n, k, 1, 1, splits, per_split, flags, c_type, 0)
    strides = (1, m, 0, 1, n, 0, 0, 0, 0, 0)
    esz = layer.dtype.itemsize
    lde = lde or m
    errors = TensorMap(layer.dtype, (m, k, 1), (lde * esz, -(-(lde * k * esz) // 16) * 16),
                       (CHUNK, CHUNK, 1), 128, False)
    return _plan(gpu, layer, cfg, "update", strides, ints, splits,
                 (errors, im2col_map(layer, CHUNK)), PAIR if paired else 1)


def choose_update_tile(gpu, m, n):
    """The filter gradient's tile for an M x N output (M = K filters, N =
    R*S*Cp columns), and whether it runs in multicast pairs: 128 rows where
    there are 128 filters (else 64), as wide as the output allows of 256,
    128 and 64 columns -- or 192 (128 rows only) where that models less
    work over the whole output, tiles times a K-tile's time (the schedules
    spread the long reduction over every SM whatever the tile count).  A
    width that leaves its last tile part-empty pays for the empty part:
    VGG-A conv2's 576 columns are three tiles of 192, not three of 256 with
    the last a quarter full (253 -> 209 us on the H200)."""
    bm = 128 if m >= 128 else 64
    tiles = [(bm, 256 if bm == 128 and n >= 256 else 128 if n >= 128 else 64)]
    if bm == 128 and n >= 192:
        tiles.append((128, 192))
    best = min(tiles, key=lambda tile: _update_work(gpu, m, n, tile))  # the widest on a tie
    return _config(*best), _paired(m, best)


def _paired(m, tile):
    """Whether the filter gradient's ``tile`` runs in multicast pairs (its
    128x256 tiles, where their rows pair up)."""
    return PAIRED_UPDATE and tile == (128, 256) and -(-m // tile[0]) % PAIR == 0


def _update_work(gpu, m, n, tile):
    """Modelled seconds of all the filter gradient's ``tile``s over an M x N
    output for one K-tile each (choose_update_tile's measure)."""
    cfg = _config(*tile)
    rate = 1.0
    if _paired(m, tile):
        rate = PAIR_SPEEDUP
    elif tile == (128, 192):
        rate = UPDATE_192_RATE
    return -(-m // cfg.bm) * -(-n // cfg.bn) * gemm_tiles.ktile_seconds(gpu, cfg) / rate


def choose_schedule(gpu, cfg, m, n, ktiles):
    """How the filter gradient's GEMM (an M x N output of ``ktiles`` K-tiles)
    spreads its K-tiles over the SMs: :data:`STREAM_K`, or a K-split count
    (1: none), the least modelled time.

    Split-K: waves of (tiles x splits) blocks over the SMs, each running its
    share of the K-tiles at the tile's measured rate; a split adds its fp32
    partial sums, written and read back through DRAM, and the reduce kernel.
    At least MIN_KTILES_PER_SPLIT K-tiles per split.  VGG-A conv2's update (3
    tiles, 12,544 K-tiles) fills the machine with 44.

    Stream-K (kernels/stream_k.cuh): every SM runs an equal share of all
    tiles' K-tiles; a tile cut between blocks costs its finishing block
    one partial tile read per other block sharing it, through L2
    (:func:`stream_k_seconds`)."""
    tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
    partial = 2 * m * n * 4 / gemm_tiles.DRAM_BYTES_PER_S

    def seconds(splits):
        main = waves_seconds(gpu, cfg, tiles * splits, -(-ktiles // splits))
        return main + (splits * partial + gemm_tiles.SPLIT_S if splits > 1 else 0.0)

    best = min(range(1, max(1, ktiles // MIN_KTILES_PER_SPLIT) + 1), key=seconds)
    stream_k = stream_k_seconds(gpu, cfg, tiles, ktiles)
    return STREAM_K if stream_k is not None and stream_k < seconds(best) else best


def _plan(gpu, layer, cfg, kind, strides, ints, splits, maps, pair=1, swapped=False):
    """GemmPlan of one conv_sm90 kernel (and the split-K reduce when splits > 1);
    ``pair``: blocks per multicast cluster (the update's ``_mc2`` kernels),
    which the schedule counts as one unit of ``pair`` tile rows; ``swapped``:
    the kernel's A is the call's second operand (the transposed fprop)."""
    cchunks = -(-layer.C // CHUNK)
    divisors = (layer.P * layer.Q, layer.Q, layer.S, cchunks, cchunks * CHUNK)
    geom = GEOM.pack(layer.P, layer.Q, layer.R, layer.S, cchunks, layer.C,
                     *layer.stride[1:], *layer.pad[1:], *layer.dilation[1:],
                     *(field for d in divisors for field in fastdiv.fast_divisor(d)))
    ints, c_map = with_output_map(ints, strides, cfg.bn, transposed=kind == "fprop_t")
    template = gk.pack(gk.NO_TMAP, gk.NO_TMAP, (0,) * 6, strides, gpu.seed, ints, 0.0, 0.0, 0)
    template += geom + bytes(ARGS_BYTES - gk.ARGS_BYTES - GEOM.size)
    name = f"ga_conv_sm90_{cfg.bm}x{cfg.bn}x64_{_input_name(layer.dtype)}_{kind}"
    name += f"_mc{pair}" if pair > 1 else ""
    m, n, flags = ints[0], ints[1], ints[7]
    total = -(-m // (cfg.bm * pair)) * -(-n // cfg.bn) * splits  # the schedule's units
    kernel = sm90_kernel(gpu.gemm_library.function(STEM, name, cfg.smem), pair)
    at_once = gpu.sms
    if pair > 1:
        at_once = clusters_at_once(gpu, kernel, cfg)
    if flags & gk.SCHED_STREAM_K:
        # every unit gets at least one K-tile (stream_k.cuh), and all run at
        # once (a unit waits on later ones); a partial tile slot per block,
        # then a flag per block and consumer warpgroup
        blocks = min(total * ints[6], at_once) * pair
        slots = blocks * cfg.bm * cfg.bn * 4
        launches = [(kernel, (blocks, 1, 1), (cfg.threads, 1, 1), cfg.smem)]
        flag_words = blocks * cfg.bm // 64
        return GemmPlan(name, False, launches, template, maps, slots + 4 * flag_words, 1,
                        pair, zeroed=(slots, flag_words), c_map=c_map)
    launches = [(kernel, (min(total, at_once) * pair, 1, 1), (cfg.threads, 1, 1), cfg.smem)]
    workspace = 0
    if splits > 1:
        reduce = gpu.gemm_library.function("gemm_splitk", "ga_gemm_splitk_reduce", 0)
        blocks = min(-(-(m * -(-n // 4)) // REDUCE_THREADS), gpu.sms * 8)
        launches.append((reduce, (blocks, 1, 1), (REDUCE_THREADS, 1, 1), 0))
        workspace = splits * m * n * 4
    return GemmPlan(name, swapped, launches, template, maps, workspace, splits, pair, c_map=c_map)


def clusters_at_once(gpu, kernel, cfg):
    """How many clusters of ``kernel`` (a ClusterKernel of ``cfg``) the GPU
    runs at once: a cluster's blocks share a GPC, so fewer than the SMs over
    the cluster's size may fit (asked of the driver when a plan is recorded)."""
    return min(kernel.max_active((cfg.threads, 1, 1), cfg.smem), gpu.sms // kernel.size)


def _input_name(dtype):
    return "f16" if dtype == np.float16 else "bf16"


def im2col_map(layer, pixels, ld=None):
    """The im2col descriptor of the layer's input: ``pixels`` output positions
    per copy, 64 channels each; ``ld`` elements between the input's positions
    (default C)."""
    esz = layer.dtype.itemsize
    C, H, W = layer.C, layer.H, layer.W
    ld = ld or C
    _, pad_h, pad_w = layer.pad
    _, dil_h, dil_w = layer.dilation
    _, str_h, str_w = layer.stride
    return Im2colMap(layer.dtype, (C, W, H, layer.N), (ld * esz, W * ld * esz, H * W * ld * esz),
                     (-pad_w, -pad_h), (pad_w - dil_w * (layer.S - 1), pad_h - dil_h * (layer.R - 1)),
                     pixels, (1, str_w, str_h, 1))


def filter_map(layer, box_filters):
    """F as (C, K, R*S): a box of 64 channels x ``box_filters`` filters at one tap."""
    esz = layer.dtype.itemsize
    taps = layer.R * layer.S
    return TensorMap(layer.dtype, (layer.C, layer.K, taps), (taps * layer.C * esz, layer.C * esz),
                     (CHUNK, box_filters, 1), 128, False)
