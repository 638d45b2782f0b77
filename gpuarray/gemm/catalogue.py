"""The catalogue of hand-written GEMM kernels, and how to call them.

In: a kernel configuration (family, tile, input type, layouts) and the
values of one launch.  Out: a loaded kernel (from the cubins ``make
kernels`` builds into ``gpuarray/kernels/``; see :mod:`gpuarray.cuda.driver`
for why these load through the driver API rather than pycuda), and the
``GemmArgs`` block it takes by value, packed byte for byte as
``kernels/gemm_common.cuh`` declares it (TMA descriptors included).

Families (one ``kernels/gemm_<family>.cu`` each):

* ``sm90``  -- TMA + wgmma, warp-specialised (Hopper, sm_90a);
* ``sm80`` / ``sm80u`` -- mma.sync tensor cores, 16-byte aligned operands /
  any alignment (Ampere and later; Hopper's fallback);
* ``ffma`` / ``ffmau`` -- exact float32 on the FFMA pipes;
* ``small`` -- exact float32 products too small for tiles, a group of
  lanes an output (:func:`gpuarray.gemm.plan.is_small`);
* ``splitk`` -- sums split-K partials and applies the epilogue.
"""
import struct
from dataclasses import dataclass, field

import numpy as np

from ..core import dtypes
from ..cuda import library
from ..cuda.library import KernelsMissing  # noqa: F401 - raised to this module's users

KERNEL_DIR = library.KERNEL_DIR

#: GemmArgs: three tensor maps (A, B, and C for the copy engine's stores),
#: six pointers, ten strides, seed, ten ints, two floats, the call counter,
#: the host output scale, the four pointers of the FP8 scales and amax,
#: padding to the struct's 64-byte alignment
ARGS = struct.Struct("<128s128s128s6Q10qQ7i3i2fIf4Q32x")
ARGS_BYTES = 640
NO_TMAP = bytes(128)

# GemmArgs::c_type / bias_type
TYPE_CODE = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, dtypes.bfloat16: 2,
             dtypes.float8_e4m3fn: 3, dtypes.float8_e5m2: 4}
# GemmArgs::flags
EPI_RELU, EPI_BIAS, EPI_BETA, EPI_SR, EPI_STATS, EPI_AMAX = 1, 2, 4, 8, 16, 32
EPI_SR_BITS_SHIFT = 8
#: GemmArgs::flags: the sm90 kernels' stream-K schedule (kernels/stream_k.cuh),
#: and its variant running the whole waves but the last one or two first
SCHED_STREAM_K, SCHED_WHOLE_FIRST = 64, 128
#: GemmArgs::flags: tmap_c is encoded, the sm90 kernels' 16-bit C stored by
#: the copy engine (kernels/sm90_epilogue.cuh's ga_epilogue16_tma)
EPI_TMA_C = 8192


@dataclass(frozen=True)
class Config:
    """One tile configuration of a kernel family.

    Families without a ``u`` suffix need 16-byte aligned operand addresses,
    leading and batch strides (tiles.family).  ``tma`` maps (operand, layout)
    to the (inner, outer) box and the swizzle width of its tensor map;
    empty for kernels that read through pointers.  ``per_sm`` is how many
    blocks fit on one multiprocessor, ``efficiency`` the fraction of the
    family's peak a full machine of these tiles reaches (the heuristic's
    model, from the benchmarks), ``lone_tail`` the share of a full wave's
    time that the last, part-filled wave of a longer launch takes where it
    leaves each block alone on its multiprocessor (1: no faster; measured
    for the FFMA tiles only).
    """

    family: str
    bm: int
    bn: int
    bk: int
    threads: int
    smem: int
    inputs: tuple
    layouts: tuple = ("kn", "kk", "mn", "mk")
    tma: dict = field(default_factory=dict, hash=False, compare=False)
    per_sm: int = 1
    efficiency: float = 0.8
    persistent: bool = False
    lone_tail: float = 1.0

    def kernel_name(self, input_name, layout):
        return f"ga_gemm_{self.family}_{self.bm}x{self.bn}x{self.bk}_{input_name}_{layout}"

    @property
    def file(self):
        """Stem of the cubin/fatbin holding this family."""
        return "gemm_" + self.family.rstrip("u")


def pack(tmap_a, tmap_b, ptrs, strides, seed, ints, alpha, beta, call, post_scale=1.0,
         scale_ptrs=(0, 0, 0, 0)):
    """GemmArgs bytes.  ptrs: a, b, c, bias, partial, stats; strides: a_m,
    a_k, b_k, b_n, ldc, batch_a, batch_b, batch_c, bias_m, bias_n; ints: M,
    N, K, batch, kbatch, splits, tiles_per_split, flags, c_type, bias_type;
    scale_ptrs: scale_a, scale_b, scale_c, amax (0: none)."""
    return ARGS.pack(tmap_a, tmap_b, NO_TMAP, *ptrs, *strides, seed, *ints, alpha, beta, call, post_scale,
                     *scale_ptrs)


class Library(library.Library):
    """The GEMM modules of ``KERNEL_DIR``, loaded on first use."""

    def __init__(self):
        super().__init__(KERNEL_DIR, "GEMM")
