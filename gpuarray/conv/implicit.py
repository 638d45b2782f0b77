"""Implicit-GEMM fprop on Hopper: a checked ConvCall -> a recorded plan -> kernels/conv_sm90.cu.

In: an fprop :class:`~gpuarray.conv.call.ConvCall` on contiguous tensors
and the GPU factory.  Out: O filled in by one kernel, the GEMM kernel of
gemm_sm90.cuh whose producer gathers A's rows (the filter windows) from I
through an im2col tensor map instead of reading a materialized col
matrix; the GEMM's epilogue applies alpha, bias, relu and beta.

:func:`eligible` says which layers this kernel runs (2-D, fp16/bf16, C a
multiple of 8, the copy engine's limits on padding, dilation and stride,
16-byte aligned tensors); the others take the gather + GEMM route of
:mod:`~gpuarray.conv.convolution`.  The plan -- tile, grid, the packed
arguments with holes for pointers and scalars, the two descriptors'
geometry -- is recorded per layer structure and epilogue and replayed as
:class:`~gpuarray.gemm.replay.GemmPlan` replays GEMMs: a descriptor is
re-encoded only when its tensor moves.
"""
import functools
import struct

import numpy as np

from ..core import dtypes
from ..cuda import driver
from ..gemm import catalogue as gk, tiles
from ..gemm.replay import GemmPlan, TensorMap
from .layer import ConvLayer

STEM = "conv_sm90"
#: tiles conv_sm90.cu instantiates
TILES = ((128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
#: channels per K-tile (one 128-byte swizzle row of fp16/bf16)
CHUNK = 64
#: ConvGeom (gemm_sm90.cuh): P, Q, S, cchunks, C, strides, paddings, dilations
GEOM = struct.Struct("<11i")
#: ConvGemmArgs is GemmArgs then ConvGeom, padded to the 64-byte alignment
ARGS_BYTES = 512
#: the copy engine's im2col limits for a 4-D tensor: corners within a signed
#: byte, traversal strides up to 8
CORNER = (-128, 127)
MAX_STRIDE = 8
MAX_PLANS = 1024
#: split-K: at least this many K-tiles per split
MIN_KTILES_PER_SPLIT = 8
#: threads per block of gemm_splitk.cu's reduce kernel
REDUCE_THREADS = 256
_HALF = (np.dtype(np.float16), dtypes.bfloat16)


class Im2colMap:
    """The im2col descriptor of I: fixed geometry, re-encoded when I moves."""

    def __init__(self, dtype, dims, strides, lower, upper, pixels, element_strides):
        self.geometry = (dtype, dims, strides, lower, upper, CHUNK, pixels, element_strides, 128)
        self.ptr, self.bytes = None, None

    def encode(self, ptr, stats):
        if ptr != self.ptr:
            self.bytes = driver.encode_im2col(ptr, *self.geometry)
            self.ptr = ptr
            stats["tma_encodes"] = stats.get("tma_encodes", 0) + 1
        return self.bytes


def eligible(gpu, layer, tensors):
    """True when the implicit-GEMM kernel runs this layer on these (contiguous) tensors."""
    if gpu.arch != "sm_90" or layer.dtype not in _HALF or (layer.D, layer.T) != (1, 1):
        return False
    if layer.C % 8 or any(t.ptr % 16 for t in tensors):
        return False
    _, pad_h, pad_w = layer.pad
    _, str_h, str_w = layer.stride
    _, dil_h, dil_w = layer.dilation
    corners = (-pad_h, -pad_w, pad_h - dil_h * (layer.R - 1), pad_w - dil_w * (layer.S - 1))
    return (all(CORNER[0] <= c <= CORNER[1] for c in corners)
            and max(str_h, str_w) <= MAX_STRIDE)


def bprop_layer(layer):
    """The fprop layer whose output is ``layer``'s data gradient, for stride 1.

    With unit stride, grad_I = conv(E, F') where F'[c, r, s, k] =
    F[k, R-1-r, S-1-s, c] (filters flipped, channels and filters swapped)
    and the padding is ``dil * (R - 1) - pad``; None for other strides.
    """
    if layer.stride != (1, 1, 1) or (layer.D, layer.T) != (1, 1):
        return None
    return _bprop_layer(layer.dtype, layer.N, layer.C, layer.K, layer.P, layer.Q, layer.R,
                        layer.S, layer.pad[1:], layer.dilation[1:])


@functools.lru_cache(maxsize=256)
def _bprop_layer(dtype, N, C, K, P, Q, R, S, pad, dil):
    return ConvLayer(dtype, N, K, C, H=P, W=Q, R=R, S=S, pad_h=dil[0] * (R - 1) - pad[0],
                     pad_w=dil[1] * (S - 1) - pad[1], dil_h=dil[0], dil_w=dil[1])


def fprop(gpu, call, I, F, O):  # noqa: E741
    """Queue ``O = relu(alpha * conv(I, F) + bias) + beta * O`` (contiguous tensors)."""
    bias = call.bias
    key = (_structure(call.layer), call.relu, call.beta != 0,
           None if bias is None else (bias.dtype, bias.strides))
    plan = gpu._conv_plans.get(key)
    if plan is None:
        plan = record(gpu, call)
        if len(gpu._conv_plans) >= MAX_PLANS:
            gpu._conv_plans.clear()
        gpu._conv_plans[key] = plan
    plan.launch(gpu, I.ptr, F.ptr, O.ptr, bias.ptr if bias is not None else 0, 0,
                call.alpha, call.beta)


def _structure(layer):
    return (layer.dtype, layer.dimI, layer.dimF, layer.pad, layer.stride, layer.dilation)


def choose(gpu, m, n):
    """The fprop tile with the least modelled time: waves of tiles over the
    SMs, each costing its area over the tile's measured efficiency."""
    best = None
    for cfg in _configs():
        count = -(-m // cfg.bm) * -(-n // cfg.bn)
        waves = -(-count // gpu.sms)
        cost = (waves * cfg.bm * cfg.bn / cfg.efficiency, -cfg.bm * cfg.bn)
        if best is None or cost < best[0]:
            best = (cost, cfg)
    return best[1]


def _configs():
    return [cfg for cfg in tiles.CONFIGS
            if cfg.family == "sm90" and "f16" in cfg.inputs and (cfg.bm, cfg.bn) in TILES]


def _config(bm, bn):
    return next(cfg for cfg in _configs() if (cfg.bm, cfg.bn) == (bm, bn))


def record(gpu, call):
    """The :class:`GemmPlan` of an fprop call: tile, grid, arguments, descriptors."""
    layer = call.layer
    m, n = layer.N * layer.P * layer.Q, layer.K
    cfg = choose(gpu, m, n)
    ktiles = layer.R * layer.S * -(-layer.C // CHUNK)
    bias = call.bias
    flags = ((gk.EPI_RELU if call.relu else 0) | (gk.EPI_BIAS if bias is not None else 0)
             | (gk.EPI_BETA if call.beta != 0 else 0))
    strides = (0, 1, 1, 0, n, 0, 0, 0, 0,
               bias.strides[0] // bias.itemsize if bias is not None else 0)
    ints = (m, n, ktiles * CHUNK, 1, 1, 1, ktiles, flags, gk.TYPE_CODE[layer.dtype],
            gk.TYPE_CODE[bias.dtype] if bias is not None else 0)
    maps = (im2col_map(layer, cfg.bm), filter_map(layer, cfg.bn))
    return _plan(gpu, layer, cfg, "fprop", strides, ints, 1, maps)


def update_eligible(gpu, layer, tensors):
    """True when the implicit-GEMM filter gradient runs this layer (C % 64 == 0, K % 8 == 0)."""
    return layer.C % CHUNK == 0 and layer.K % 8 == 0 and eligible(gpu, layer, tensors)


def update(gpu, call, I, E, grad):  # noqa: E741
    """Queue ``grad_F = alpha * E^T @ im2col(I) + beta * grad_F`` (contiguous tensors)."""
    key = ("update", _structure(call.layer), call.beta != 0)
    plan = gpu._conv_plans.get(key)
    if plan is None:
        plan = record_update(gpu, call)
        if len(gpu._conv_plans) >= MAX_PLANS:
            gpu._conv_plans.clear()
        gpu._conv_plans[key] = plan
    plan.launch(gpu, E.ptr, I.ptr, grad.ptr, 0, 0, call.alpha, call.beta)


def record_update(gpu, call):
    """The :class:`GemmPlan` of a filter gradient: the largest tile that fits,
    K split so that tiles x splits fill the SMs (the reduction, N*P*Q
    positions, is long; the output, K x R*S*C, is small)."""
    layer = call.layer
    m, n, k = layer.K, layer.R * layer.S * layer.C, layer.N * layer.P * layer.Q
    bm = 128 if m >= 128 else 64
    bn = 256 if bm == 128 and n >= 256 else 128 if n >= 128 else 64
    cfg = _config(bm, bn)
    ktiles = -(-k // CHUNK)
    count = -(-m // bm) * -(-n // bn)
    splits = max(1, min(gpu.sms // count, ktiles // MIN_KTILES_PER_SPLIT))
    per_split = -(-ktiles // splits)
    splits = -(-ktiles // per_split)
    ints = (m, n, k, 1, 1, splits, per_split, gk.EPI_BETA if call.beta != 0 else 0,
            gk.TYPE_CODE[layer.dtype], 0)
    strides = (1, m, 0, 1, n, 0, 0, 0, 0, 0)
    esz = layer.dtype.itemsize
    errors = TensorMap(layer.dtype, (m, k, 1), (m * esz, -(-(m * k * esz) // 16) * 16),
                       (CHUNK, CHUNK, 1), 128, False)
    return _plan(gpu, layer, cfg, "update", strides, ints, splits,
                 (errors, im2col_map(layer, CHUNK)))


def _plan(gpu, layer, cfg, kind, strides, ints, splits, maps):
    """GemmPlan of one conv_sm90 kernel (and the split-K reduce when splits > 1)."""
    chunks = -(-layer.C // CHUNK)
    geom = GEOM.pack(layer.P, layer.Q, layer.S, chunks, layer.C, *layer.stride[1:],
                     *layer.pad[1:], *layer.dilation[1:])
    template = gk.pack(gk.NO_TMAP, gk.NO_TMAP, (0,) * 6, strides, gpu.seed, ints, 0.0, 0.0, 0)
    template += geom + bytes(ARGS_BYTES - gk.ARGS_BYTES - GEOM.size)
    name = f"ga_conv_sm90_{cfg.bm}x{cfg.bn}x64_{_input_name(layer.dtype)}_{kind}"
    m, n = ints[0], ints[1]
    total = -(-m // cfg.bm) * -(-n // cfg.bn) * splits
    kernel = gpu.gemm_library.function(STEM, name, cfg.smem)
    launches = [(kernel, (min(total, gpu.sms), 1, 1), (cfg.threads, 1, 1), cfg.smem)]
    workspace = 0
    if splits > 1:
        reduce = gpu.gemm_library.function("gemm_splitk", "ga_gemm_splitk_reduce", 0)
        blocks = min(-(-(m * -(-n // 4)) // REDUCE_THREADS), gpu.sms * 8)
        launches.append((reduce, (blocks, 1, 1), (REDUCE_THREADS, 1, 1), 0))
        workspace = splits * m * n * 4
    return GemmPlan(name, False, launches, template, maps, workspace, splits)


def _input_name(dtype):
    return "f16" if dtype == np.float16 else "bf16"


def im2col_map(layer, pixels):
    """The im2col descriptor of I (conv_sm90.cu's header): ``pixels`` output
    positions per copy, 64 channels each."""
    esz = layer.dtype.itemsize
    C, H, W = layer.C, layer.H, layer.W
    _, pad_h, pad_w = layer.pad
    _, dil_h, dil_w = layer.dilation
    _, str_h, str_w = layer.stride
    return Im2colMap(layer.dtype, (C, W, H, layer.N), (C * esz, W * C * esz, H * W * C * esz),
                     (-pad_w, -pad_h), (pad_w - dil_w * (layer.S - 1), pad_h - dil_h * (layer.R - 1)),
                     pixels, (1, str_w, str_h, 1))


def filter_map(layer, bn):
    """fprop's B: F as (C, K, R*S), a box of 64 channels x BN filters at one tap."""
    esz = layer.dtype.itemsize
    taps = layer.R * layer.S
    return TensorMap(layer.dtype, (layer.C, layer.K, taps), (taps * layer.C * esz, layer.C * esz),
                     (CHUNK, bn, 1), 128, False)
