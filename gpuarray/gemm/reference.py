"""The numpy reference of a checked GEMM call: what the CPU factory runs.

In: a :class:`~gpuarray.gemm.call.GemmCall` of CPU tensors.  Out: the
float32 values the GPU kernels store (before C's rounding), computed as
the kernels do -- operands widened to float32 (TF32 operands rounded to
10 mantissa bits, FP8 operands decoded exactly), products summed in
float32, then the shared epilogue (``kernels/gemm_common.cuh``): the
per-tensor scales, alpha, bias, relu, beta * C, the amax statistic and
the output scale, an FP8 output saturated to its largest finite value.
"""
import numpy as np

from .call import FP8_LARGEST


def operand(t, precision):
    """float32 value of a GEMM operand; TF32 keeps 10 mantissa bits (rounded
    to nearest, ties away, as the tensor cores' cvt.rna)."""
    x = np.ascontiguousarray(t.numpy_view(), dtype=np.float32)
    if precision == "tf32":
        bits = x.view(np.uint32)
        x = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return x


def product(call):
    """``sum_i a[i] @ b[i]`` (or per batch) in float32, as (batches, M, N)."""
    a, b = (operand(t, call.precision) for t in (call.a, call.b))
    with np.errstate(all="ignore"):  # non-finite inputs give NaN/inf, as on the GPU
        value = np.matmul(a, b)
    if call.accumulate:
        value = value.sum(axis=0, keepdims=True)
    return value


def _scale(value):
    """A scale argument's float32 value: a one-element tensor's, or 1 when absent."""
    if value is None:
        return np.float32(1)
    return np.float32(value.numpy_view().reshape(-1)[0])


def epilogue(call, value, dest):
    """The value the kernels store into ``dest`` (C's previous values), before rounding.

    Also fills ``call.amax`` with the largest ``abs`` of the result before
    ``scale_c`` (NaN ignored, as the kernels' fmaxf).
    """
    with np.errstate(all="ignore"):
        # the kernels' order: ((alpha * scale_a) * scale_b) * acc, in float32
        value *= np.float32(call.alpha) * _scale(call.scale_a) * _scale(call.scale_b)
        if call.bias is not None:
            value += call.bias.numpy_view().astype(np.float32)
        if call.relu:
            value = np.where(value < 0, np.float32(0), value)  # NaN passes, as on the GPU
        if call.beta != 0:
            value += np.float32(call.beta) * dest.astype(np.float32)
        if call.amax is not None:
            magnitude = np.abs(value)
            top = np.nanmax(magnitude) if np.any(~np.isnan(magnitude)) else np.float32(0)
            call.amax.numpy_view()[...] = top
        post = np.float32(call.post_scale) * _scale(call.scale_c)
        if post != 1:
            value = value * post
    if call.c.dtype in FP8_LARGEST:
        # the kernels' cvt.rn.satfinite: out-of-range values saturate, NaN stays
        top = np.float32(FP8_LARGEST[call.c.dtype])
        value = np.where(np.isnan(value), value, np.clip(value, -top, top))
    return value


def fill_stats(stats, dest):
    """``stats[:] = (max abs(C) over finite values, non-finite count)`` of the stored C."""
    stored = np.abs(dest.astype(np.float32))
    finite = np.isfinite(stored)
    top = stored[finite].max() if finite.any() else 0.0
    stats[:] = (top, np.count_nonzero(~finite))
