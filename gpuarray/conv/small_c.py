"""Convolutions of few input channels (first layers) on kernels/conv_small_c.cu.

In: a checked :class:`~gpuarray.conv.call.ConvCall` and the GPU factory.
Out: True when the call ran on the small-C kernels -- fprop as one kernel
(epilogue included), the data gradient as one kernel, the filter gradient
as one kernel writing a block's partial sums and one adding them in block
order -- False when it takes another route.

Why: with C = 3 the gather route writes and reads back an im2col matrix
R*S times the input (GoogLeNet's conv1: 488 MB) and the implicit-GEMM
kernel's copy engine moves one 6-byte pixel per request; these kernels
copy the input rows a tile needs into shared memory once and gather the
im2col elements from there (the kernel file's header has the details).

Which calls: fp16/bf16 2-D layers (D = T = 1) with C <= 4 and K % 8 == 0,
and fp32 fprop of such layers (FFMAs: no tensor-core path keeps fp32's
precision) where a block's shared memory leaves room for two, on sm_80 or
later; I, F, grad_I and grad_F contiguous; fprop's O and the
errors E with 16-byte aligned rows (they may be channel slices); no stochastic
rounding of the output; the tile's input rows and the filters fit shared
memory.  The decision and the packed arguments are recorded per situation,
so a repeated call patches pointers and scalars into the recorded
arguments and launches.
"""
import struct

import numpy as np

from ..core import dtypes
from ..cuda import stream
from . import fastdiv
from .call import is_rows, row_stride

STEM = "conv_small_c"
THREADS = 128
#: output positions of a tile, filters of a block (the kernels' SC_BM, SC_BK)
BM, BK = 128, 64
#: the largest C this route takes (the kernels take any C, bprop C <= 16);
#: fprop and bprop take up to MAX_ONE_CHUNK_C where the filters are one
#: block's chunk (K <= BK; :func:`_takes_channels`): GoogLeNet's C = 16
#: 5x5 layers ran fprop 2.3x and 1.6x faster than on the implicit GEMM
#: (H100; updates mixed: 1.6x and 0.86x; benchmarks/NOTES.rst)
MAX_C, MAX_ONE_CHUNK_C = 4, 16
#: blocks of one kernel a multiprocessor holds at most (the launch bounds)
BLOCKS_PER_SM = {"fprop": 3, "fprop_f32": 4, "update": 3, "bprop": 4, "bprop_c16": 3}
#: bprop's tiles: rows and columns of one phase's positions (SC_TH, SC_TW),
#: and the most filter rows one phase may meet (SC_MAX_NR; the _c16
#: kernels' SC_MAX_NR_C16)
TH, TW, MAX_PHASE_ROWS, MAX_PHASE_ROWS_C16 = 16, 16, 4, 5
#: the most n8 tiles of taps an update warp accumulates (ga_small_c_update_*_j1 .. j6)
MAX_NJ = 6
REDUCE_THREADS, REDUCE_ELEMENTS = 256, 32
#: staged errors: elements a row (SC_EP); staged output: floats a row (SC_SP)
ERROR_PITCH, STAGE_PITCH = 72, 72
MAX_PLANS = 1024
#: SmallCArgs: I, B, out, extra, alpha, beta, 31 ints, 4 FastDiv, padding
ARGS = struct.Struct("<4Q2d31i" + fastdiv.FORMAT * 4 + "4x")
#: SmallCBpropArgs: E, F, grad_I, unused, alpha, beta, 23 ints, 4 FastDiv, padding
BPROP_ARGS = struct.Struct("<4Q2d23i" + fastdiv.FORMAT * 4 + "4x")
#: bprop's phase tables hold filter extents up to 32 (and strides up to 8);
#: above stride 2 the gather route is faster (H100, AlexNet's conv1 at
#: stride 4: 602 against 531 us; Overfeat's 1303 against 611): a phase
#: meets few taps, and a tap's loop over K = 64 filters is too short to
#: keep the tensor cores fed (benchmarks/NOTES.rst)
MAX_BPROP_STRIDE, MAX_BPROP_EXTENT = 2, 32
#: bprop's mma tiles are 8 channels wide: up to 8 channels one group, up
#: to 16 two (the _c16 kernels), these where their tiles fill the GPU at
#: least twice: GoogLeNet's 3a 5x5 data gradient (512 tiles) 104 -> 50
#: us, its 4a 5x5 (128 tiles, one block an SM) 38 -> 51 (H100)
MAX_BPROP_C, MIN_C16_TILES_PER_SM = 16, 2
#: two PhaseTaps (int2 [8][32] and int [8] each)
PHASE_TABLE_BYTES = 2 * (8 * 32 * 8 + 8 * 4)
#: the holes of SmallCArgs: (byte offset, kind) of I, B, out, extra, alpha, beta
HOLES = [(0, "add"), (8, "add"), (16, "add"), (24, "add"), (32, "double"), (40, "double")]
_TYPE = {np.dtype(np.float16): "f16", dtypes.bfloat16: "bf16", np.dtype(np.float32): "f32"}
F32 = np.dtype(np.float32)
_BIAS_KIND = {np.dtype(np.float32): 1, np.dtype(np.float16): 2, dtypes.bfloat16: 3}
_NO = "no"


def try_run(gpu, call):
    """Run ``call`` on the small-C kernels if it is theirs; return whether it was."""
    plan = plan_of(gpu, call)
    if plan is None:
        return False
    plan.run(gpu, call)
    return True


def plan_of(gpu, call):
    """The recorded plan of ``call``'s situation, or None where the call is not this route's."""
    layer = call.layer
    if (not _takes_channels(call) or layer.K % 8 or layer.dtype not in _TYPE
            or (layer.D, layer.T) != (1, 1) or call.out.rounding):
        return None
    if layer.dtype == F32 and (call.kind != "fprop" or layer.C > MAX_C):
        return None
    ld = _row_stride(call)
    if ld is None:
        return None
    bias = call.bias
    vec = _vec(layer, call.a) if call.kind != "bprop" else None
    key = ("small c", call.kind, layer.key, call.relu, ld, vec,
           None if bias is None else bias.dtype)
    plan = gpu._conv_plans.get(key)
    if plan is None:
        plan = SmallCPlan.recorded(gpu, call, ld)
        if len(gpu._conv_plans) >= MAX_PLANS:
            gpu._conv_plans.clear()
        gpu._conv_plans[key] = plan
    return None if plan is _NO else plan


def _takes_channels(call):
    """Whether this route takes ``call``'s channel count: C <= 4 always;
    where the filters are one 64-filter chunk, fprop up to 16 and bprop
    from 9 to 16 (the _c16 kernels; 5-8 channels were not measured against
    the other routes, which keep them)."""
    C = call.layer.C
    if C <= MAX_C:
        return True
    if call.kind == "update" or call.layer.K > BK or C > MAX_ONE_CHUNK_C:
        return False
    return call.kind == "fprop" or _two_groups(call.layer)


def _row_stride(call):
    """Elements between the rows of O (fprop) or E (bprop, update) where the
    kernels can take the call's tensors, else None."""
    others = (call.a, call.b) if call.kind == "fprop" else (call.a, call.out)
    rows = call.out if call.kind == "fprop" else call.b
    if not all(t.is_contiguous for t in others) or not is_rows(rows):
        return None
    if call.bias is not None and not call.bias.is_contiguous:
        return None
    ld = row_stride(rows)
    # fprop stores O, and update stages E, in 16-byte pieces
    if ld * rows.dtype.itemsize % 16 or rows.ptr % 16:
        return None
    return ld


def _kernel_kind(call):
    """The key of a call's kernel in BLOCKS_PER_SM and smem_bytes."""
    if call.kind == "bprop" and _two_groups(call.layer):
        return "bprop_c16"
    if call.kind == "fprop" and call.layer.dtype == F32:
        return "fprop_f32"
    return call.kind


def _two_groups(layer):
    """Whether a data gradient takes the _c16 kernels (8 < C <= 16)."""
    return layer.C > 8


def _vec(layer, I):  # noqa: E741
    """Whether the input's rows start on 16-byte boundaries (cp.async pieces)."""
    return int(I.ptr % 16 == 0 and layer.W * layer.C % 8 == 0)


def geometry(layer):
    """The halo and tap sizes of ``layer`` (see kernels/conv_small_c.cu)."""
    _, pad_h, pad_w = layer.pad
    _, str_h, str_w = layer.stride
    _, dil_h, dil_w = layer.dilation
    piece = _piece(layer)
    span = min(layer.P, (BM + layer.Q - 2) // layer.Q + 1)  # output rows a tile can touch
    columns = (layer.Q - 1) * str_w + (layer.S - 1) * dil_w + 1
    lead = -(pad_w * layer.C) % piece
    rsc = layer.R * layer.S * layer.C
    return dict(halo_rows=(span - 1) * str_h + (layer.R - 1) * dil_h + 1,
                pitch=-(-(lead + columns * layer.C) // piece) * piece, lead=lead,
                row_elems=max(0, min(layer.W, columns - pad_w)) * layer.C,
                RSC=rsc, KW=-(-rsc // 16) * 16, tiles=-(-(layer.P * layer.Q) // BM))


def _piece(layer):
    """Elements of a 16-byte piece of the halo: 8 of 16-bit data, 4 of fp32."""
    return 16 // layer.dtype.itemsize


def update_split(kw):
    """``(jchunks, NJ)``: blocks along the taps and n8 tiles of taps a warp."""
    tiles = kw // 8
    jchunks = -(-tiles // (4 * MAX_NJ))
    return jchunks, -(-tiles // (4 * jchunks))


def bprop_geometry(layer):
    """bprop's tiles and staged errors: positions h = a + str_h * h' of phase
    a take the filter rows r with (a + pad_h - r*dil_h) % str_h == 0 from
    error row h' + (a + pad_h - r*dil_h) // str_h (likewise along w); a tile
    stages the errors every phase of it reads."""
    lows, widths, most = [], [], []
    for extent, pad, dil, stride in zip((layer.R, layer.S), layer.pad[1:], layer.dilation[1:],
                                        layer.stride[1:]):
        phases = [[(a + pad - r * dil) // stride for r in range(extent)
                   if (a + pad - r * dil) % stride == 0] for a in range(stride)]
        offsets = [d for phase in phases for d in phase]
        lows.append(min(offsets))
        widths.append(max(offsets) - min(offsets))
        most.append(max(len(phase) for phase in phases))
    rows, cols = -(-layer.H // layer.stride[1]), -(-layer.W // layer.stride[2])
    return dict(kp=-(-layer.K // 32) * 32, tiles_h=-(-rows // TH), tiles_w=-(-cols // TW),
                halo_rows=TH + widths[0], halo_cols=TW + widths[1], dr_lo=lows[0], ds_lo=lows[1],
                taps=layer.R * layer.S * layer.C, phase_rows=most[0])


def smem_bytes(kind, geo):
    """Dynamic shared memory of one block: fprop the halo (or its staged
    output), filters and tap table (fprop_f32: the fp32 halo, filters
    [RSC][64] and one tap offset a tap); update the halo, staged errors and
    row table; bprop the staged errors, the filter and the phase tables."""
    if kind == "fprop_f32":
        return -(-geo["halo_rows"] * geo["pitch"] // 4) * 16 + geo["RSC"] * (BK + 1) * 4
    if kind.startswith("bprop"):  # staged errors, the whole filter ([R*S*C][KP + 8]), phase tables
        pitch = (geo["kp"] + 8) * 2
        return (geo["halo_rows"] * geo["halo_cols"] + geo["taps"]) * pitch + PHASE_TABLE_BYTES
    halo = -(-geo["halo_rows"] * geo["pitch"] * 2 // 16) * 16
    if kind == "fprop":
        kw = geo["KW"]
        kwp = kw if (kw // 8) % 2 else kw + 8
        # the epilogue stages the tile's sums (fp32) where the halo was
        return max(halo, BM * STAGE_PITCH * 4) + BK * kwp * 2 + kw // 16 * 4 * 16
    return halo + BM * ERROR_PITCH * 2 + BM * 4


class SmallCPlan:
    """The recorded launches of one situation: kernels, grids, shared memory
    and the arguments packed with the pointers and scalars as holes
    (SmallCArgs, or SmallCBpropArgs, whose first 48 bytes are laid out alike)."""

    def __init__(self, gpu, call, ld, geo, smem):
        layer = call.layer
        kind = _kernel_kind(call)
        resident = gpu.sms * max(1, min(BLOCKS_PER_SM[kind],
                                        (gpu.smem_optin + 1024) // (smem + 1024)))
        self.part_bytes = 0
        build = {"fprop": self._fprop, "update": self._update, "bprop": self._bprop}[call.kind]
        self.args, launches = build(call, layer, ld, geo, smem, resident, _TYPE[layer.dtype])
        holes = [(off, slot, kind, 0) for slot, (off, kind) in enumerate(HOLES)]
        self.launches = []
        for name, grid, block, nbytes in launches:
            kernel = gpu.conv_library.function(STEM, name, nbytes)
            patched = kernel.patched_launch(grid, block, self.args, holes, nbytes)
            self.launches.append((kernel, grid, block, nbytes, patched))

    @staticmethod
    def _ints(layer, call, ld, geo, kchunks, jw, blocks, jchunks):
        bias = call.bias
        return (layer.N, layer.H, layer.W, layer.C, layer.K, layer.P, layer.Q, layer.R, layer.S,
                *layer.stride[1:], *layer.pad[1:], *layer.dilation[1:], geo["RSC"], geo["KW"],
                ld, geo["tiles"], geo["halo_rows"], geo["pitch"], geo["lead"], geo["row_elems"],
                _vec(layer, call.a), 0 if bias is None else _BIAS_KIND[bias.dtype], 1,
                int(call.relu), kchunks, jw, blocks, jchunks)

    @staticmethod
    def _packed_args(ints, divisors):
        return ARGS.pack(0, 0, 0, 0, 0.0, 0.0, *ints,
                         *(f for d in divisors for f in fastdiv.fast_divisor(d)))

    def _fprop(self, call, layer, ld, geo, smem, resident, dtype):
        kchunks = -(-layer.K // BK)
        images = layer.N * geo["tiles"]
        blocks = min(images * kchunks, resident)
        args = self._packed_args(self._ints(layer, call, ld, geo, kchunks, 0, blocks, 1),
                                 (layer.Q, geo["tiles"], geo["pitch"] // _piece(layer), images))
        return args, [(f"ga_small_c_fprop_{dtype}", (blocks, 1, 1), (THREADS, 1, 1), smem)]

    def _update(self, call, layer, ld, geo, smem, resident, dtype):
        kchunks = -(-layer.K // BK)
        images = layer.N * geo["tiles"]
        jchunks, nj = update_split(geo["KW"])
        jw = 32 * nj
        blocks = max(1, min(images, resident // (jchunks * kchunks)))
        self.part_bytes = kchunks * jchunks * blocks * BK * jw * 4
        elements = layer.K * geo["RSC"]
        args = self._packed_args(self._ints(layer, call, ld, geo, kchunks, jw, blocks, jchunks),
                                 (layer.Q, geo["tiles"], geo["pitch"] // 8, images))
        return args, [(f"ga_small_c_update_{dtype}_j{nj}", (blocks, jchunks, kchunks),
                       (THREADS, 1, 1), smem),
                      (f"ga_small_c_reduce_{dtype}", (-(-elements // REDUCE_ELEMENTS), 1, 1),
                       (REDUCE_THREADS, 1, 1), 0)]

    def _bprop(self, call, layer, ld, geo, smem, resident, dtype):
        per_image = geo["tiles_h"] * geo["tiles_w"]
        ints = (layer.N, layer.H, layer.W, layer.C, layer.K, layer.P, layer.Q, layer.R, layer.S,
                *layer.stride[1:], *layer.pad[1:], *layer.dilation[1:], ld, geo["kp"],
                geo["tiles_h"], geo["tiles_w"], geo["halo_rows"], geo["halo_cols"], geo["dr_lo"],
                geo["ds_lo"])
        divisors = (per_image, geo["tiles_w"], geo["kp"] // 8, geo["halo_cols"])
        args = BPROP_ARGS.pack(0, 0, 0, 0, 0.0, 0.0, *ints,
                               *(f for d in divisors for f in fastdiv.fast_divisor(d)))
        blocks = min(layer.N * per_image, resident)
        groups = "c16_" if _two_groups(layer) else ""
        return args, [(f"ga_small_c_bprop_{groups}{dtype}", (blocks, 1, 1), (THREADS, 1, 1), smem)]

    @classmethod
    def recorded(cls, gpu, call, ld):
        """The plan of ``call``'s situation, or ``_NO`` where the route cannot take it."""
        layer = call.layer
        major = int(gpu.arch[3:]) // 10
        if major < 8 or layer.H * layer.W * layer.C >= 2**31:
            return _NO
        geo = bprop_geometry(layer) if call.kind == "bprop" else geometry(layer)
        # (the kernel shares a staged row between the filter rows of a
        # phase, which needs them one error row apart: dil_h = 1)
        if call.kind == "bprop" and (layer.C > MAX_BPROP_C or max(layer.stride) > MAX_BPROP_STRIDE
                                     or max(layer.R, layer.S) > MAX_BPROP_EXTENT
                                     or layer.dilation[1] != 1
                                     or geo["phase_rows"] > (MAX_PHASE_ROWS_C16 if _two_groups(layer)
                                                             else MAX_PHASE_ROWS)):
            return _NO
        if (call.kind == "bprop" and _two_groups(layer)
                and layer.N * geo["tiles_h"] * geo["tiles_w"] < MIN_C16_TILES_PER_SM * gpu.sms):
            return _NO
        smem = smem_bytes(_kernel_kind(call), geo)
        if smem > gpu.smem_optin:
            return _NO
        # fp32's FFMAs need warps to hide their loads: at least two blocks an SM
        # (AlexNet's and Overfeat's 11x11 conv1 would hold one)
        if layer.dtype == F32 and 2 * (smem + 1024) > gpu.smem_optin + 1024:
            return _NO
        return cls(gpu, call, ld, geo, smem)

    def run(self, gpu, call):
        """Queue the launches for ``call`` (same situation as the recorded one)."""
        alpha, beta = float(call.alpha), float(call.beta)
        if self.part_bytes:
            part = gpu.pool.allocate(self.part_bytes)
            values = [call.a.ptr, call.b.ptr, part.ptr, call.out.ptr, alpha, beta]
        elif call.kind == "bprop":  # E, F, grad_I
            part = None
            values = [call.b.ptr, call.a.ptr, call.out.ptr, 0, alpha, beta]
        else:
            part = None
            values = [call.a.ptr, call.b.ptr, call.out.ptr,
                      call.bias.ptr if call.bias is not None else 0, alpha, beta]
        handle = stream.launch_handle()
        for kernel, grid, block, smem, patched in self.launches:
            if patched is not None:
                result = patched.launch(values, handle)
                if result:
                    kernel.check_launch(result)
            else:
                kernel.launch(grid, block, self._packed(values), smem)
            gpu._stats["kernels_launched"] += 1
        if part is not None:
            # back to the pool now: later work on this stream runs after these kernels
            part.free()

    def _packed(self, values):
        args = bytearray(self.args)  # (both argument structs start alike)
        struct.pack_into("<4Q2d", args, 0, *values)
        return args
