"""GEMM on the GPU: one checked GemmCall -> kernel choice -> launches.

In: a :class:`gpuarray.gemm.call.GemmCall` and the GPU factory.  Out: the main
GEMM kernel (and, with split-K, the reduce kernel) queued on the stream.

The path reads top to bottom:

1. :func:`run` -- C must be row-major: a column-major C swaps the operands
   (C^T = B^T A^T); a C that overlaps an operand or has no unit stride is
   computed through a float32 temporary and the fusion compiler.
2. :func:`problem` -- each operand's layout from its strides (a copy where
   neither axis is contiguous), and batch axes folded into M or K where
   the memory allows it (shared weights, weight-gradient sums).
3. :func:`choose` -- the kernel family (by dtype, architecture and
   alignment), then the tile and the K-split with the lowest modelled time;
   an exact fp32 product of at most :data:`SMALL_PRODUCT_FMAS` multiply-adds
   skips the tiles: ``kernels/gemm_small.cu``, a few lanes an output.
4. :func:`launch` -- the :class:`~gpuarray.gemm.replay.GemmPlan` (kernels,
   grid, the packed ``GemmArgs`` with holes for pointers and scalars, TMA
   descriptor geometry), run on this call's pointers.  :func:`run` returns
   the plan when the call needed no copies, so a repeat of the same
   request replays it without steps 1-3.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..core import shapes
from . import catalogue as gk, tiles
from .call import GemmCall, epilogue_tree, stats_by_reduction
from .replay import GemmPlan, TensorMap, scale_pointers, sm90_kernel, with_output_map

_REDUCE_THREADS = 256
#: exact fp32 products of at most this many multiply-adds (batches included)
#: and sums of at most SMALL_PRODUCT_TERMS terms run on gemm_small.cu (no
#: tiles: a group of lanes an output).  A lone FFMA tile's K-tiles are
#: latency-bound: on an H100, 1000x10x100 took 8.6 us on 64x64 tiles and
#: 3.4 here, 1000x100x10 10.3 and 4.2, 100x10x1000 7.5 and 7.6 (2 MFLOP
#: each).  Longer sums leave a group's 32 lanes too many terms each: the
#: tiles split K over blocks instead.
SMALL_PRODUCT_FMAS = 2**21
SMALL_PRODUCT_TERMS = 1024
_SMALL_THREADS = 256
_MAX_CHOICES = 4096
_choices = {}
_capacities = {}


@dataclass
class Operand:
    """A 3-D operand view read as a matrix stack with one contiguous axis."""

    t: object
    layout: str     # "k"/"m" (A) or "k"/"n" (B): the contiguous axis
    ld: int         # element stride of the other axis
    batch: int      # element stride between batches (0: shared)

    @property
    def ptr(self):
        return self.t.ptr

    def aligned(self, nbytes):
        """True when the address and the strides are multiples of ``nbytes``."""
        isz = self.t.itemsize
        return (self.ptr % nbytes == 0 and self.ld > 0 and (self.ld * isz) % nbytes == 0
                and (self.batch * isz) % nbytes == 0)


@dataclass
class Problem:
    """A GEMM in the kernels' terms (gemm_common.cuh)."""

    call: GemmCall
    a: Operand
    b: Operand
    m: int
    n: int
    k: int
    batch: int
    kbatch: int
    ldc: int
    batch_c: int

    @property
    def layout(self):
        return self.a.layout + self.b.layout

    @property
    def dtype(self):
        return self.a.t.dtype


def run(gpu, call):
    """Queue the kernels computing ``call`` on ``gpu``.

    Returns the :class:`~gpuarray.gemm.replay.GemmPlan` when its kernels
    read the operands in place (no copy, no temporary), else None.
    """
    c = call.c
    if call.fp8 and not (_unit(c, 2) or _unit(c, 1)):
        _run_via_contiguous(gpu, call)  # (make_call refused overlaps)
        return None
    if _overlaps(c, call.a) or _overlaps(c, call.b) or not (_unit(c, 2) or _unit(c, 1)):
        _run_via_temporary(gpu, call)
        return None
    swapped = not _unit(c, 2)
    if swapped:
        call = _transposed(call)
    prob = problem(gpu, call)
    plan = launch(gpu, prob, swapped)
    return plan if prob.a.t is call.a and prob.b.t is call.b else None


def _unit(t, axis):
    """Axis ``axis`` of ``t`` is contiguous (or has one element) and the others are not negative."""
    return ((t.strides[axis] == t.itemsize or t.shape[axis] == 1)
            and all(s >= 0 for s in t.strides))


def _overlaps(x, y):
    if x.buffer is not y.buffer:
        return False
    (x0, x1), (y0, y1) = (shapes.byte_span(t.shape, t.strides, t.itemsize) for t in (x, y))
    return x0 + x.offset < y1 + y.offset and y0 + y.offset < x1 + x.offset


def _transposed(call):
    """The same product written for C^T = B^T A^T."""
    swap = (0, 2, 1)
    bias = call.bias.transpose() if call.bias is not None else None
    return replace(call, a=call.b.transpose(*swap), b=call.a.transpose(*swap),
                   c=call.c.transpose(*swap), bias=bias, scale_a=call.scale_b,
                   scale_b=call.scale_a)


def _run_via_contiguous(gpu, call):
    """An FP8 call whose C has no unit stride: into a contiguous C of its dtype, then copied."""
    temporary = gpu.empty(call.c.shape, call.c.dtype)
    if call.beta != 0:
        temporary[...] = call.c
    run(gpu, replace(call, c=temporary))
    call.c[...] = temporary


def _run_via_temporary(gpu, call):
    """Product into a float32 temporary, then the epilogue by the fusion compiler."""
    product = gpu.empty(call.c.shape, np.float32)
    run(gpu, GemmCall(call.a, call.b, product, precision=call.precision,
                      accumulate=call.accumulate))
    gpu.assign(call.c, epilogue_tree(gpu, call, product))
    if call.stats is not None:
        stats_by_reduction(gpu, call.c, call.stats)


# -- 2. the problem ----------------------------------------------------------
def operand(gpu, t, axes):
    """:class:`Operand` of a 3-D view whose two matrix axes are named ``axes``."""
    isz = t.itemsize
    nb, rows, cols = t.shape
    sb, sr, sc = (s // isz for s in t.strides)
    if (sc == 1 or cols == 1) and sr >= 0 and sb >= 0:
        return Operand(t, axes[1], sr if rows > 1 else cols, sb if nb > 1 else 0)
    if (sr == 1 or rows == 1) and sc >= 0 and sb >= 0:
        return Operand(t, axes[0], sc if cols > 1 else rows, sb if nb > 1 else 0)
    # neither axis contiguous: a packed copy (one matrix when it is shared)
    source = t[0] if sb == 0 else t
    packed = gpu.evaluate(source)
    if sb == 0:
        packed = packed._view(t.shape, (0,) + packed.strides, packed.offset)
    return Operand(packed, axes[1], cols, rows * cols if sb != 0 and nb > 1 else 0)


def problem(gpu, call):
    """The :class:`Problem` of a call whose C is row-major."""
    m, n, k = call.mnk
    c = call.c
    isz = c.itemsize
    a, b = operand(gpu, call.a, ("m", "k")), operand(gpu, call.b, ("k", "n"))
    prob = Problem(call, a, b, m, n, k, batch=c.shape[0], kbatch=1,
                   ldc=c.strides[1] // isz if m > 1 else n,
                   batch_c=c.strides[0] // isz if c.shape[0] > 1 else 0)
    if call.accumulate:
        prob.batch, prob.kbatch = 1, call.batches
    for name in tiles.operands_to_pack(gpu, prob):
        setattr(prob, name, _k_major_copy(gpu, getattr(prob, name), name))
    return _fold_batches(prob)


def _k_major_copy(gpu, op, name):
    """``op`` copied so that K is its contiguous axis (a fusion copy kernel)."""
    t = op.t
    nb, rows, cols = t.shape
    source = t[:1] if op.batch == 0 else t
    if name == "a":  # (nb, M, K): a contiguous copy
        packed = gpu.evaluate(source)
        ld = cols
    else:  # (nb, K, N): copy its transpose, view it back
        packed = gpu.empty((source.shape[0], cols, rows), t.dtype)
        packed[:] = source.transpose(0, 2, 1)
        packed = packed.transpose(0, 2, 1)
        ld = rows
    batch = rows * cols if op.batch else 0
    isz = t.itemsize
    strides = (batch * isz,) + packed.strides[1:]
    return Operand(packed._view(t.shape, strides, packed.offset), "k", ld, batch)


def _k_stride(op):
    return 1 if op.layout == "k" else op.ld


def _fold_batches(prob):
    """Merge a batch axis into M (shared B) or K (summed batches) where memory allows."""
    a, b, call = prob.a, prob.b, prob.call
    nb = call.batches
    if nb <= 1:
        return prob
    if (prob.kbatch == nb and a.batch == prob.k * _k_stride(a)
            and b.batch == prob.k * _k_stride(b)):
        # A_i and B_i are consecutive K-slices of one long product
        prob.k, prob.kbatch = prob.k * nb, 1
        prob.a, prob.b = replace(a, batch=0), replace(b, batch=0)
    elif (prob.kbatch == 1 and b.batch == 0 and a.layout == "k" and a.batch == prob.m * a.ld
          and prob.batch_c == prob.m * prob.ldc and (call.bias is None or call.bias.strides[0] == 0)):
        # a shared B: the batches of A and C are just more rows
        prob.m, prob.batch, prob.batch_c = prob.m * nb, 1, 0
        prob.a = replace(a, batch=0)
    return prob


# -- 3. the kernel -----------------------------------------------------------
def choose(gpu, prob):
    """(config, splits, cluster) of the candidate with the lowest modelled time.

    Remembered per problem shape (a training loop asks the same few), up
    to _MAX_CHOICES of them.
    """
    family = tiles.family(gpu, prob)
    key = (family, tiles.input_name(prob), prob.layout, prob.m, prob.n, prob.k,
           prob.batch, prob.kbatch, prob.call.c.itemsize, tiles.element_epilogue(prob), gpu.arch,
           gpu.sms)
    best = _choices.get(key)
    if best is None:
        candidates = []
        for i, cfg in enumerate(tiles.configs(family, key[1], prob.layout)):
            clusters = tiles.cluster_choices(
                gpu, prob, cfg, lambda: cluster_capacity(gpu, cfg, key[1], prob.layout))
            candidates += [(tiles.model_time(gpu, prob, cfg, splits, cluster), i, cfg, splits, cluster)
                           for splits in tiles.split_choices(gpu, prob, cfg)
                           for cluster in (clusters if splits == 1 else (1,))]
        best = min(candidates)[2:]
        if len(_choices) >= _MAX_CHOICES:
            _choices.clear()
        _choices[key] = best
    return best


def cluster_capacity(gpu, cfg, input_name, layout):
    """{blocks per cluster (2 .. 8, the portable sizes): clusters of ``cfg``'s
    kernel the GPU runs at once}.

    A cluster's blocks share one GPC, so this is not the multiprocessors over
    the size: an H100's 132 hold 66 clusters of 2 one-block-per-SM kernels
    but 30 of 4 and 15 of 8.  Asked of the driver once per kind of GPU and
    block footprint.
    """
    smem = {size: tiles.cluster_smem(cfg, size) for size in range(2, 9)}
    key = (gpu.arch, gpu.sms, cfg.threads, tuple(smem.values()))
    capacity = _capacities.get(key)
    if capacity is None:
        kernel = gpu.gemm_library.function(cfg.file, cfg.kernel_name(input_name, layout),
                                           max(smem.values()))
        capacity = {size: kernel.clustered(size).max_active((cfg.threads, 1, 1), smem[size])
                    for size in range(2, 9)}
        _capacities[key] = capacity
    return capacity


# -- 4. the launch -----------------------------------------------------------
def launch(gpu, prob, swapped=False):
    """Record the :class:`GemmPlan` of ``prob``, queue it on prob's operands, return it."""
    plan = record(gpu, prob, swapped)
    call = prob.call
    tensors = (call.scale_a, call.scale_b, call.scale_c, call.amax) if call.fp8 else None
    plan.launch(gpu, prob.a.ptr, prob.b.ptr, call.c.ptr,
                call.bias.ptr if call.bias is not None else 0,
                call.stats.ptr if call.stats is not None else 0, call.alpha, call.beta,
                scale_pointers(call.post_scale, tensors, False))
    return plan


def record(gpu, prob, swapped):
    """The :class:`GemmPlan` of ``prob``: tile, split, grids and the argument template."""
    if is_small(prob):
        return _record_small(gpu, prob, swapped)
    cfg, splits, cluster = choose(gpu, prob)
    ktiles = prob.kbatch * -(-prob.k // cfg.bk)
    per_split = -(-ktiles // splits)
    splits = -(-ktiles // per_split)  # no empty splits
    strides, ints, c_map = _strides(prob), _integers(prob, splits, per_split), None
    if cfg.tma and cfg.family.endswith("sm90"):
        ints, c_map = with_output_map(ints, strides, cfg.bn)
    template = gk.pack(gk.NO_TMAP, gk.NO_TMAP, (0,) * 6, strides, gpu.seed, ints, 0.0, 0.0, 0)
    name = cfg.kernel_name(tiles.input_name(prob), prob.layout)
    total = -(-prob.m // cfg.bm) * -(-prob.n // cfg.bn) * prob.batch * splits
    smem = tiles.cluster_smem(cfg, cluster) if cluster > 1 else cfg.smem
    kernel = gpu.gemm_library.function(cfg.file, name, smem)
    if cfg.family.endswith("sm90"):
        kernel = sm90_kernel(kernel, cluster)
    elif cluster > 1:
        kernel = kernel.clustered(cluster)
    if cluster > 1:
        # a cluster of blocks per tile (they share its K-tiles)
        fit = cluster_capacity(gpu, cfg, tiles.input_name(prob), prob.layout)[cluster]
        grid = min(total, fit) * cluster
    else:
        grid = min(total, gpu.sms * cfg.per_sm) if cfg.persistent else total
    launches = [(kernel, (grid, 1, 1), (cfg.threads, 1, 1), smem)]
    if splits > 1:
        reduce = gpu.gemm_library.function("gemm_splitk", "ga_gemm_splitk_reduce", 0)
        outputs = prob.batch * prob.m * -(-prob.n // 4)
        blocks = min(-(-outputs // _REDUCE_THREADS), gpu.sms * 8)
        launches.append((reduce, (blocks, 1, 1), (_REDUCE_THREADS, 1, 1), 0))
    workspace = splits * prob.batch * prob.m * prob.n * 4 if splits > 1 else 0
    tensor_maps = _tensor_maps(cfg, prob) if cfg.tma else None
    return GemmPlan(name, swapped, launches, template, tensor_maps, workspace, splits, cluster,
                    c_map=c_map)


def is_small(prob):
    """An exact fp32 product too small to fill the tiles (:data:`SMALL_PRODUCT_FMAS`,
    :data:`SMALL_PRODUCT_TERMS`)."""
    call = prob.call
    terms = prob.kbatch * prob.k
    return (call.precision == "fp32" and prob.dtype == np.float32 and not call.fp8
            and terms <= SMALL_PRODUCT_TERMS
            and prob.batch * prob.m * prob.n * terms <= SMALL_PRODUCT_FMAS)


def _record_small(gpu, prob, swapped):
    """The plan of ``prob`` on gemm_small.cu: lanes an output by the terms each sums."""
    terms = prob.kbatch * prob.k
    lanes = 1 if terms <= 16 else 8 if terms <= 256 else 32
    name = f"ga_gemm_small_l{lanes}_f32"
    template = gk.pack(gk.NO_TMAP, gk.NO_TMAP, (0,) * 6, _strides(prob), gpu.seed,
                       _integers(prob, 1, 1), 0.0, 0.0, 0)
    blocks = -(-prob.batch * prob.m * prob.n * lanes // _SMALL_THREADS)
    kernel = gpu.gemm_library.function("gemm_small", name, 0)
    launches = [(kernel, (blocks, 1, 1), (_SMALL_THREADS, 1, 1), 0)]
    return GemmPlan(name, swapped, launches, template, None, 0, 1, 1)


def _integers(prob, splits, per_split):
    call = prob.call
    bias_type = gk.TYPE_CODE[call.bias.dtype] if call.bias is not None else 0
    return (prob.m, prob.n, prob.k, prob.batch, prob.kbatch, splits, per_split,
            _flags(call), gk.TYPE_CODE[call.c.dtype], bias_type)


def _tensor_maps(cfg, prob):
    return tuple(_tensor_map(cfg, op, name, prob) for op, name in ((prob.a, "a"), (prob.b, "b")))


def _tensor_map(cfg, op, name, prob):
    """3-D descriptor geometry (contiguous axis, other axis, data batch) of one operand."""
    inner, outer, swizzle = cfg.tma[(name, op.layout)]
    isz = op.t.itemsize
    extents = {("a", "k"): (prob.k, prob.m), ("a", "m"): (prob.m, prob.k),
               ("b", "n"): (prob.n, prob.k), ("b", "k"): (prob.k, prob.n)}[(name, op.layout)]
    batches = prob.call.batches if op.batch else 1
    # one batch: the stride is never used, but must still be a multiple of 16
    batch_bytes = op.batch * isz if op.batch else -(-(op.ld * extents[1] * isz) // 16) * 16
    return TensorMap(op.t.dtype, (extents[0], extents[1], batches), (op.ld * isz, batch_bytes),
                     (inner, outer, 1), swizzle, prob.call.precision == "tf32")


def _strides(prob):
    a, b, call = prob.a, prob.b, prob.call
    a_m, a_k = (a.ld, 1) if a.layout == "k" else (1, a.ld)
    b_k, b_n = (b.ld, 1) if b.layout == "n" else (1, b.ld)
    if call.bias is not None:
        bias_m, bias_n = (s // call.bias.itemsize for s in call.bias.strides)
    else:
        bias_m = bias_n = 0
    return (a_m, a_k, b_k, b_n, prob.ldc, a.batch, b.batch, prob.batch_c, bias_m, bias_n)


def _flags(call):
    flags = 0
    if call.relu:
        flags |= gk.EPI_RELU
    if call.bias is not None:
        flags |= gk.EPI_BIAS
    if call.beta != 0:
        flags |= gk.EPI_BETA
    if call.stats is not None:
        flags |= gk.EPI_STATS
    if call.amax is not None:
        flags |= gk.EPI_AMAX
    if call.c.rounding:
        flags |= gk.EPI_SR | (call.c.rounding << gk.EPI_SR_BITS_SHIFT)
    return flags
