"""The bias gradient on the GPU, the ReLU's gradient fused: kernels/bias_grad.cu.

In: a checked :meth:`~gpuarray.conv.functions.ConvFunctions.update_bias`
call -- the errors E (channels last), the bias gradient ``grad_b`` (K,),
the layer's ReLU output O or None, alpha and beta -- and the GPU factory.
Out: True when the kernel ran (E masked by ``O > 0`` in place where O is
given, ``grad_b`` written), False where the tensors do not suit it; the
caller then runs the same computation as op-trees.

Why: a layer's backward pass masked E by its ReLU in one kernel and summed
E's columns in another.  The second read E again, and a column sum over a
few channels and millions of rows ran at a fifth of HBM's bandwidth (H100,
VGG-A's conv1 errors: 582 us against 419 for the mask); one pass does both.

Which calls: float16, bfloat16 and float32 E (and O, of E's dtype) whose
rows of K channels are contiguous and one row stride apart (a channel slice
of a wider tensor is fine), 16-byte aligned with K a multiple of 16 bytes'
worth, in at most 64 slices of channels (a block counter each); ``grad_b``
contiguous, of any of the three dtypes.  One launch: the kernel's last
block of each slice adds the blocks' partial sums, counting finished blocks
in the first words of a :mod:`~gpuarray.cuda.semaphores` block (zero when
lent, left zero) whose rest holds the partial sums.  The launch shape and
packed arguments are recorded per situation (shapes, strides, dtypes); a
repeated call patches the pointers and alpha, beta in and launches.
"""
import struct

import numpy as np

from ..core import dtypes
from ..cuda import stream
from ..cuda.semaphores import COUNTER_BYTES
from .call import is_rows, row_stride

STEM = "bias_grad"
#: the kernel's threads a block at most and blocks a multiprocessor
#: (the kernel's BG_THREADS and BG_BLOCKS: 64 registers a thread)
THREADS, BLOCKS_PER_SM = 512, 2
#: 16-byte vectors of a block's column slice at most: 32 are 512 bytes of a
#: row, so that a warp reads whole 512-byte runs of wide rows
MAX_COLS = 32
#: rows each thread should at least walk (a grid for small M has fewer blocks)
MIN_ROWS_PER_THREAD = 8
MAX_PLANS = 512
#: BiasGradArgs: E, O, G, partial, grad_b, counters, alpha, beta, M, ldE, ldO,
#: ldG, K, cols, Kp, gb_type
ARGS = struct.Struct("<6Q2d4q4i")
#: slices of channels at most: one 4-byte block counter each
MAX_SLICES = COUNTER_BYTES // 4
_TYPE = {np.dtype(np.float16): "f16", dtypes.bfloat16: "bf16", np.dtype(np.float32): "f32"}
#: grad_b's dtype as the kernel numbers it (GEMM_F32, GEMM_F16, GEMM_BF16)
_GB_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, dtypes.bfloat16: 2}
_NO = "no"


def try_run(gpu, E, grad_b, O, alpha, beta):  # noqa: E741
    """Run the bias gradient on the kernels if they take these tensors."""
    plan = plan_of(gpu, E, grad_b, O)
    if plan is None:
        return False
    plan.run(gpu, E, grad_b, O, alpha, beta)
    return True


def plan_of(gpu, E, grad_b, O):  # noqa: E741
    """The recorded :class:`BiasPlan` of these tensors' situation, or None
    where the kernels do not take them."""
    key = (E.shape, E.strides, E.dtype, None if O is None else O.strides, grad_b.dtype,
           grad_b.strides)
    plan = gpu._bias_plans.get(key)
    if plan is None:
        plan = BiasPlan.recorded(gpu, E, grad_b, O)
        if len(gpu._bias_plans) >= MAX_PLANS:
            gpu._bias_plans.clear()
        gpu._bias_plans[key] = plan
    if plan is _NO or E.ptr % 16 or (O is not None and O.ptr % 16):
        return None
    return plan


def launch_shape(M, K, vec, sms):
    """``(grid, block, cols)`` of the kernel for M rows of K channels
    read ``vec`` a thread: the channels in slices of ``cols`` vectors along
    grid.y, rows of a slice over grid.x blocks of ``rps`` rows a step."""
    vectors = K // vec
    slices = -(-vectors // MAX_COLS)
    cols = -(-vectors // slices)
    rps = THREADS // cols
    blocks = -(-M // (rps * MIN_ROWS_PER_THREAD))
    gx = max(1, min(blocks, BLOCKS_PER_SM * sms // slices))
    return (gx, slices, 1), (cols * rps, 1, 1), cols


class BiasPlan:
    """The launch of one situation, its arguments packed once."""

    def __init__(self, gpu, E, grad_b, O, ld, grid, block, cols):  # noqa: E741
        K = E.shape[-1]
        vec = 16 // E.dtype.itemsize
        Kp = grid[1] * cols * vec
        # the counters, then the partial sums: one semaphore block
        self.block_bytes = COUNTER_BYTES + grid[0] * Kp * 4
        self.grid, self.block = grid, block
        self.args = ARGS.pack(0, 0, 0, 0, 0, 0, 0.0, 0.0, E.size // K, ld,
                              row_stride(O) if O is not None else 0, ld, K, cols, Kp,
                              _GB_TYPE[grad_b.dtype])
        # values of a call: E, O, partial, grad_b, counters, alpha, beta (G is E:
        # the mask in place)
        self.holes = [(0, 0, "add", 0), (8, 1, "add", 0), (16, 0, "add", 0), (24, 2, "add", 0),
                      (32, 3, "add", 0), (40, 4, "add", 0), (48, 5, "double", 0),
                      (56, 6, "double", 0)]
        name = f"ga_bias_grad_{_TYPE[E.dtype]}" + ("_relu" if O is not None else "")
        self.kernel = gpu.conv_library.function(STEM, name)
        self.patched = self.kernel.patched_launch(grid, block, self.args, self.holes)

    @classmethod
    def recorded(cls, gpu, E, grad_b, O):  # noqa: E741
        """The plan of this situation, or ``_NO`` where the kernel cannot take it."""
        if E.dtype not in _TYPE or grad_b.dtype not in _TYPE or not grad_b.is_contiguous:
            return _NO
        if E.size == 0:
            return _NO
        vec = 16 // E.dtype.itemsize
        if E.shape[-1] % vec or not is_rows(E) or (O is not None and not is_rows(O)):
            return _NO
        ld = row_stride(E)
        if ld % vec or (O is not None and row_stride(O) % vec):
            return _NO
        grid, block, cols = launch_shape(E.size // E.shape[-1], E.shape[-1], vec, gpu.sms)
        if grid[1] > MAX_SLICES:
            return _NO
        return cls(gpu, E, grad_b, O, ld, grid, block, cols)

    def run(self, gpu, E, grad_b, O, alpha, beta):  # noqa: E741
        """Queue the launch on the factory's stream."""
        block = gpu.semaphores.allocate(self.block_bytes)
        values = [E.ptr, 0 if O is None else O.ptr, block.ptr + COUNTER_BYTES, grad_b.ptr,
                  block.ptr, float(alpha), float(beta)]
        if self.patched is not None:
            result = self.patched.launch(values, stream.launch_handle())
            if result:
                self.kernel.check_launch(result)
        else:
            self.kernel.launch(self.grid, self.block, _patched(self.args, self.holes, values), 0)
        gpu._stats["kernels_launched"] += 1
        # back to the pool now (its counters zero again once the kernel ends):
        # later work on this stream runs after it
        block.free()


def _patched(args, holes, values):
    """``args`` with its holes filled from ``values`` (without the compiled entry)."""
    buf = bytearray(args)
    for offset, slot, kind, _ in holes:
        struct.pack_into("<d" if kind == "double" else "<Q", buf, offset, values[slot])
    return buf
