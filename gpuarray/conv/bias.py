"""The bias gradient on the GPU, the ReLU's gradient fused: kernels/bias_grad.cu.

In: a checked :meth:`~gpuarray.conv.functions.ConvFunctions.update_bias`
call -- the errors E (channels last), the bias gradient ``grad_b`` (K,),
the layer's ReLU output O or None, alpha and beta -- and the GPU factory.
Out: True when the kernels ran (E masked by ``O > 0`` in place where O is
given, ``grad_b`` written), False where the tensors do not suit them; the
caller then runs the same computation as op-trees.

Why: a layer's backward pass masked E by its ReLU in one kernel and summed
E's columns in another.  The second read E again, and a column sum over a
few channels and millions of rows ran at a fifth of HBM's bandwidth (H100,
VGG-A's conv1 errors: 582 us against 419 for the mask); one pass does both.

Which calls: float16, bfloat16 and float32 E (and O, of E's dtype) whose
rows of K channels are contiguous and one row stride apart (a channel slice
of a wider tensor is fine), 16-byte aligned with K a multiple of 16 bytes'
worth; ``grad_b`` contiguous, of any of the three dtypes.  The launch shape
and packed arguments are recorded per situation (shapes, strides, dtypes);
a repeated call patches the pointers and alpha, beta in and launches.
"""
import struct

import numpy as np

from ..core import dtypes
from ..cuda import stream
from .call import is_rows, row_stride

STEM = "bias_grad"
#: the partial kernel's threads a block at most and blocks a multiprocessor
#: (the kernel's BG_THREADS and BG_BLOCKS: 64 registers a thread)
THREADS, BLOCKS_PER_SM = 512, 2
#: 16-byte vectors of a block's column slice at most: 32 are 512 bytes of a
#: row, so that a warp reads whole 512-byte runs of wide rows
MAX_COLS = 32
#: rows each thread should at least walk (a grid for small M has fewer blocks)
MIN_ROWS_PER_THREAD = 8
#: the finishing kernel's float4 columns a block at most
FINISH_COLUMNS = 32
MAX_PLANS = 512
#: BiasGradArgs: E, O, G, partial, M, ldE, ldO, ldG, K, cols, Kp, padding
ARGS = struct.Struct("<4Q4q3i4x")
#: BiasFinishArgs: partial, grad_b, alpha, beta, rows, K, Kp, padding
FINISH_ARGS = struct.Struct("<2Q2d3i4x")
_TYPE = {np.dtype(np.float16): "f16", dtypes.bfloat16: "bf16", np.dtype(np.float32): "f32"}
_NO = "no"


def try_run(gpu, E, grad_b, O, alpha, beta):  # noqa: E741
    """Run the bias gradient on the kernels if they take these tensors."""
    key = (E.shape, E.strides, E.dtype, None if O is None else O.strides, grad_b.dtype,
           grad_b.strides)
    plan = gpu._bias_plans.get(key)
    if plan is None:
        plan = BiasPlan.recorded(gpu, E, grad_b, O)
        if len(gpu._bias_plans) >= MAX_PLANS:
            gpu._bias_plans.clear()
        gpu._bias_plans[key] = plan
    if plan is _NO or E.ptr % 16 or (O is not None and O.ptr % 16):
        return False
    plan.run(gpu, E, grad_b, O, alpha, beta)
    return True


def launch_shape(M, K, vec, sms):
    """``(grid, block, cols)`` of the partial kernel for M rows of K channels
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
    """The two launches of one situation, their arguments packed once."""

    def __init__(self, gpu, E, grad_b, O, ld):  # noqa: E741
        K = E.shape[-1]
        M = E.size // K
        vec = 16 // E.dtype.itemsize
        grid, block, cols = launch_shape(M, K, vec, gpu.sms)
        Kp = grid[1] * cols * vec
        self.part_bytes = grid[0] * Kp * 4
        name = f"ga_bias_grad_{_TYPE[E.dtype]}" + ("_relu" if O is not None else "")
        ldO = row_stride(O) if O is not None else 0
        args = ARGS.pack(0, 0, 0, 0, M, ld, ldO, ld, K, cols, Kp)
        columns = Kp // 4
        bx = min(FINISH_COLUMNS, columns)
        finish = FINISH_ARGS.pack(0, 0, 0.0, 0.0, grid[0], K, Kp)
        # values of a call: E, O, partial, grad_b, alpha, beta (G is E: the mask in place)
        self.launches = [
            self._launch(gpu, name, grid, block, args,
                         [(0, 0, "add", 0), (8, 1, "add", 0), (16, 0, "add", 0),
                          (24, 2, "add", 0)]),
            self._launch(gpu, f"ga_bias_finish_{_TYPE[grad_b.dtype]}",
                         (-(-columns // bx), 1, 1), (bx, THREADS // bx, 1), finish,
                         [(0, 2, "add", 0), (8, 3, "add", 0), (16, 4, "double", 0),
                          (24, 5, "double", 0)])]

    @classmethod
    def recorded(cls, gpu, E, grad_b, O):  # noqa: E741
        """The plan of this situation, or ``_NO`` where the kernels cannot take it."""
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
        return cls(gpu, E, grad_b, O, ld)

    @staticmethod
    def _launch(gpu, name, grid, block, args, holes):
        kernel = gpu.conv_library.function(STEM, name)
        return kernel, grid, block, args, holes, kernel.patched_launch(grid, block, args, holes)

    def run(self, gpu, E, grad_b, O, alpha, beta):  # noqa: E741
        """Queue both launches on the factory's stream."""
        part = gpu.pool.allocate(self.part_bytes)
        values = [E.ptr, 0 if O is None else O.ptr, part.ptr, grad_b.ptr,
                  float(alpha), float(beta)]
        handle = stream.launch_handle()
        for kernel, grid, block, args, holes, patched in self.launches:
            if patched is not None:
                result = patched.launch(values, handle)
                if result:
                    kernel.check_launch(result)
            else:
                kernel.launch(grid, block, _patched(args, holes, values), 0)
            gpu._stats["kernels_launched"] += 1
        # back to the pool now: later work on this stream runs after these kernels
        part.free()


def _patched(args, holes, values):
    """``args`` with its holes filled from ``values`` (without the compiled entry)."""
    buf = bytearray(args)
    for offset, slot, kind, _ in holes:
        struct.pack_into("<d" if kind == "double" else "<Q", buf, offset, values[slot])
    return buf
