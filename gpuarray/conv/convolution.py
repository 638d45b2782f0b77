"""Convolution on the GPU: one checked ConvCall -> gathers and GEMMs.

In: a :class:`gpuarray.conv.call.ConvCall` (checked against its layer) and
the GPU factory.  Out: O, grad_I or grad_F filled in, queued on the
factory's stream.

The convolution runs as GEMMs on the tensor cores (``ng.dot``, whose
epilogue applies alpha, bias, relu and beta), fed by the gathers of
kernels/conv_im2col.cu:

========= ============================================= ====================
kind      GEMM (rows: images x output positions)         then
========= ============================================= ====================
fprop     O = col @ F^T   (col = im2col(I))             --
bprop     dcol = E @ F    (fp32)                        grad_I = col2im(dcol)
update    grad_F = E^T @ col                            --
========= ============================================= ====================

An fp32 3x3 stride-1 layer with 32 or more channels and filters skips
all this too: :mod:`~gpuarray.conv.winograd` runs it as Winograd's
F(2x2, 3x3), transforms around one batched GEMM, and an fp32 stride-1
layer with 4x4 to 7x7 filters and 64 or more channels and filters skips
it for :mod:`~gpuarray.conv.fft`: FFTs of overlap-save tiles around
batched GEMMs over their spectra.  On Hopper most fp16/bf16
layers skip all this: :mod:`~gpuarray.conv.implicit`
runs them as one implicit-GEMM kernel that gathers as it goes (a strided
layer's data gradient too, as a forward convolution over the stride's
phases: :mod:`~gpuarray.conv.phased`), and
:mod:`~gpuarray.conv.small_c` runs the first layers' (C <= 4) fprop and
filter gradient on kernels that keep the input rows of a tile on chip
(sm_80 on).  A filter
gradient of this route whose tensors are contiguous and whose col matrix
fits one chunk is recorded on its first call (:class:`GatheredUpdate`:
the im2col launch and the GEMM's plan) and replayed by later calls of the
same situation with their pointers, alpha and beta -- no views, checks or
planning per call.  A
pointwise layer (1 x 1 x 1 filters, stride 1, no padding) needs no
gather either: its col is I itself.  The col matrix of the whole batch can be
large (N*M*P*Q rows of T*R*S*C), so the batch runs in chunks of images
whose col fits ``WORKSPACE_BYTES``; update sums the chunks in fp32.  No
atomics anywhere: results are the same bits on every run.
"""
import struct

import numpy as np

from ..core import dtypes
from ..gemm import replay
from . import fastdiv, fft, implicit, phased, small_c, winograd
from .call import is_rows
from .layer import pointwise
from .staging import as_rows, contiguous, copy_back, output

STEM = "conv_im2col"
THREADS = 256
#: blocks along y walk the images; the driver allows 65535
MAX_GRID_Y = 65535
#: the most device memory one call's gather buffer takes (the pool caches it)
WORKSPACE_BYTES = 1 << 29
#: kernel index math is 32-bit within one image's col rows
MAX_IMAGE_ELEMENTS = 2**31 - 1

#: ConvArgs of kernels/conv_im2col.cu: src, dst, N, then size, out, filter,
#: stride, pad, dilation (3 ints each), C, ld, alpha, beta, and eleven
#: FastDiv: a thread's vector groups per row, Q, P, C, S, R, W, H, the strides
ARGS = struct.Struct("<2Qq20i2f" + fastdiv.FORMAT * 11)
#: the two pointers at the start of ConvArgs
_SRC_DST = struct.Struct("<2Q")
#: a recorded "this update situation is not replayable"
_NO = "no"

_TYPE_NAME = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
F32 = np.dtype(np.float32)


def run(gpu, call):
    """Queue the kernels of ``call`` (fprop, bprop or update) on ``gpu``."""
    if (small_c.try_run(gpu, call) or implicit.try_run(gpu, call) or winograd.try_run(gpu, call)
            or fft.try_run(gpu, call)):
        return
    if call.kind == "bprop" and phased.try_run(gpu, call):
        return
    layer = call.layer
    _check_image_size(layer)
    if call.kind == "update":
        _run_update(gpu, call, layer)
    else:
        {"fprop": _fprop, "bprop": _bprop}[call.kind](gpu, call, layer)


def chunks(layer, itemsize):
    """``(n0, n1)`` image ranges whose col matrix fits ``WORKSPACE_BYTES`` (at least one image)."""
    per_image = _col_row_count(layer) * _col_stride(layer) * itemsize
    step = max(1, min(layer.N, WORKSPACE_BYTES // per_image))
    return [(n0, min(n0 + step, layer.N)) for n0 in range(0, layer.N, step)]


def _col_row_count(layer):
    return layer.M * layer.P * layer.Q


def _col_width(layer):
    return layer.T * layer.R * layer.S * layer.C


def _col_stride(layer):
    """Elements from one col row to the next: the width rounded up to a
    multiple of 8 (16 bytes of fp16), so that the GEMMs read col, dcol and
    F (padded alike) with the copy engine whatever C is (the first layer's
    C = 3 would not align)."""
    return -(-_col_width(layer) // 8) * 8


def _check_image_size(layer):
    if _col_row_count(layer) * _col_stride(layer) > MAX_IMAGE_ELEMENTS:
        raise ValueError(f"{layer}: one image's im2col matrix has more than 2**31 - 1 "
                         f"elements; split the image")


# -- the three passes ----------------------------------------------------------

def _fprop(gpu, call, layer):
    I = contiguous(gpu, call.a)  # noqa: E741
    O = output(gpu, call.out, call.beta, rows_ok=True)  # noqa: E741
    epilogue = dict(alpha=call.alpha, beta=call.beta, relu=call.relu, bias=call.bias)
    Ft = _fprop_filters(gpu, layer, call.b)
    if pointwise(layer):
        gpu.dot(_rows(I), Ft, _rows(O), **epilogue)
    else:
        col = _workspace(gpu, layer, layer.dtype)
        for n0, n1 in chunks(layer, layer.dtype.itemsize):
            rows, _ = _im2col(gpu, layer, I, n0, n1, col)
            gpu.dot(rows, Ft, _rows(O[n0:n1]), **epilogue)
    copy_back(call.out, O)


def _bprop(gpu, call, layer):
    E = as_rows(gpu, call.b)
    grad = output(gpu, call.out, call.beta, rows_ok=pointwise(layer))
    if pointwise(layer):
        F2 = contiguous(gpu, call.a).reshape(layer.K, layer.C)
        gpu.dot(_rows(E), F2, _rows(grad), alpha=call.alpha, beta=call.beta)
    else:
        F2 = _padded_filters(gpu, layer, call.a)
        dcol = _workspace(gpu, layer, F32)
        for n0, n1 in chunks(layer, F32.itemsize):
            rows = dcol[:(n1 - n0) * _col_row_count(layer)]
            gpu.dot(_rows(E[n0:n1]), F2, rows)
            _col2im(gpu, layer, rows, grad, n0, n1, call.alpha, call.beta)
    copy_back(call.out, grad)


def _run_update(gpu, call, layer):
    """The filter gradient: replayed when this situation was recorded, else run
    (and recorded when it can be replayed)."""
    key = _update_key(call)
    plan = gpu._conv_plans.get(key) if key is not None else None
    if plan is None:
        plan = _update(gpu, call, layer, record=key is not None)
        if key is not None:
            if len(gpu._conv_plans) >= implicit.MAX_PLANS:
                gpu._conv_plans.clear()
            gpu._conv_plans[key] = plan
    elif plan is not _NO:
        plan.run(gpu, call)
    else:
        _update(gpu, call, layer)


def _update_key(call):
    """The situation of a gather-route update, or None when it is never recorded:
    tensors that are not contiguous, or stochastic rounding of grad_F (whose
    refusal inside a captured step the GEMM's own path checks)."""
    I, E, out = call.a, call.b, call.out  # noqa: E741
    if out.rounding or not (I.is_contiguous and is_rows(E) and out.is_contiguous):
        return None
    return ("gathered update", call.layer.key, call.beta != 0, I.ptr & 15, E.ptr & 15,
            E.strides, out.ptr & 15)


def _update(gpu, call, layer, record=False):
    """Run the filter gradient; with ``record``, return its :class:`GatheredUpdate`
    (or ``_NO`` when it cannot be replayed: several chunks, no recorded GEMM)."""
    I, E = contiguous(gpu, call.a), as_rows(gpu, call.b)  # noqa: E741
    grad = output(gpu, call.out, call.beta)
    grad2 = grad.reshape(layer.K, _col_width(layer))
    plan = _NO
    if pointwise(layer):
        a, b = _rows(E).T, _rows(I)
        gpu.dot(a, b, grad2, alpha=call.alpha, beta=call.beta)
        if record:
            plan = GatheredUpdate.recorded(gpu, call, None, 0, a, b, grad2)
    else:
        plan = _update_gathered(gpu, call, layer, I, E, grad2, record)
    copy_back(call.out, grad)
    return plan


def _update_gathered(gpu, call, layer, I, E, grad2, record):  # noqa: E741
    """grad_F (as K x T*R*S*C) = alpha * E^T @ im2col(I) + beta * grad_F, chunk by chunk;
    returns the recorded plan of a one-chunk update when ``record`` (else ``_NO``)."""
    parts = chunks(layer, layer.dtype.itemsize)
    col = _workspace(gpu, layer, layer.dtype)
    width = _col_width(layer)
    if len(parts) == 1:
        rows, gather = _im2col(gpu, layer, I, 0, layer.N, col)
        a, b = _rows(E).T, rows[:, :width]
        gpu.dot(a, b, grad2, alpha=call.alpha, beta=call.beta)
        return GatheredUpdate.recorded(gpu, call, gather, col.nbytes, a, b, grad2) if record \
            else _NO
    # the chunks' products add up in fp32, in a fixed order; one fused
    # assignment applies alpha and beta at the end
    acc = gpu.empty(grad2.shape, F32)
    for i, (n0, n1) in enumerate(parts):
        rows, _ = _im2col(gpu, layer, I, n0, n1, col)
        gpu.dot(_rows(E[n0:n1]).T, rows[:, :width], acc, beta=0.0 if i == 0 else 1.0)
    grad2[:] = acc * call.alpha + grad2 * call.beta if call.beta else acc * call.alpha
    return _NO


class GatheredUpdate:
    """A recorded filter gradient of the gather route: the im2col launch (none
    for a pointwise layer, whose col is I) and the GEMM's recorded plan.

    :meth:`run` queues them again for another call of the same situation:
    a fresh workspace from the pool, the im2col arguments with this call's
    I and workspace, the GEMM plan with this call's E, col (or I) and
    grad_F, alpha and beta.
    """

    def __init__(self, gather, col_bytes, gemm):
        self.gather, self.col_bytes, self.gemm = gather, col_bytes, gemm

    @classmethod
    def recorded(cls, gpu, call, gather, col_bytes, a, b, grad2):
        """The plan of the update that just ran ``gpu.dot(a, b, grad2)``
        (after ``gather``, the im2col launch), or ``_NO`` when that product
        recorded no GEMM plan."""
        key = replay.signature(gpu, False, a, b, grad2, None, None, False, call.beta, None)
        gemm = gpu._gemm_plans.get(key) if key is not None and gpu._gemm_plans else None
        if gemm is None:
            return _NO
        return cls(gather, col_bytes, gemm)

    def run(self, gpu, call):
        """Queue the update of ``call`` (same situation as the recorded one)."""
        col = None
        if self.gather is not None:
            col = gpu.pool.allocate(self.col_bytes)
            kernel, grid, template = self.gather
            args = bytearray(template)
            _SRC_DST.pack_into(args, 0, call.a.ptr, col.ptr)
            kernel.launch(grid, (THREADS, 1, 1), args, 0)
            gpu._stats["kernels_launched"] += 1
        a, b = call.b.ptr, col.ptr if col is not None else call.a.ptr
        if self.gemm.swapped:
            a, b = b, a
        self.gemm.launch(gpu, a, b, call.out.ptr, 0, 0, float(call.alpha), float(call.beta))
        if col is not None:
            # back to the pool now: later work on this stream runs after these kernels
            col.free()


# -- helpers ---------------------------------------------------------------------

def _rows(t):
    """A 5-D activation tensor that reads as rows (:func:`is_rows`) as a matrix:
    one row per position (a view)."""
    return t.reshape(-1, t.shape[-1])


def _workspace(gpu, layer, dtype):
    n = chunks(layer, dtype.itemsize)[0]
    rows = (n[1] - n[0]) * _col_row_count(layer)
    return gpu.empty((rows, _col_stride(layer)), dtype)


def _fprop_filters(gpu, layer, F):
    """fprop's GEMM operand: F as a (T*R*S*C, K) matrix whose rows are padded
    like col's (pointwise layers: (C, K), the transposed view of F).  Other
    fp32 layers get it n-contiguous, a transposed copy: the exact-fp32 GEMM
    copies such an operand by cp.async, where read k-contiguous it takes its
    register-staged kernel of half the K-tile (H100: the first layers'
    fprop 3-6% faster; for pointwise layers, whose filters are not copied
    otherwise, the copy's launch cost more than the GEMM gained).  16-bit
    types get the transposed view, which the tensor-core GEMMs read K-major
    as it is."""
    if pointwise(layer):
        return contiguous(gpu, F).reshape(layer.K, layer.C).T
    if layer.dtype != F32:
        return _padded_filters(gpu, layer, F).T
    width, stride = _col_width(layer), _col_stride(layer)
    Ft = gpu.empty((width, layer.K), F32) if stride == width else gpu.zeros((stride, layer.K), F32)
    Ft[:width] = contiguous(gpu, F).reshape(layer.K, width).T
    return Ft


def _padded_filters(gpu, layer, F):
    """F as a (K, T*R*S*C) matrix whose rows are padded like col's (zeros)."""
    width, stride = _col_width(layer), _col_stride(layer)
    F2 = contiguous(gpu, F).reshape(layer.K, width)
    if stride == width:
        return F2
    padded = gpu.zeros((layer.K, stride), layer.dtype)
    padded[:, :width] = F2
    return padded


def _im2col(gpu, layer, I, n0, n1, col):  # noqa: E741
    """Gather images n0..n1 of I into the first rows of ``col``; returns those
    rows and the launch ``(kernel, grid, packed arguments)``."""
    rows = col[:(n1 - n0) * _col_row_count(layer)]
    vec = 16 // layer.dtype.itemsize
    ld = col.shape[1]
    if ld % vec or col.ptr % 16:
        vec, kind = 1, "v"
    elif layer.C % vec or I.ptr % 16:
        kind = "n"  # vector stores, element gathers (C = 3 and the like)
    else:
        kind = "v"
    name = f"ga_im2col_b{layer.dtype.itemsize}_{kind}{vec}"
    per_image = _col_row_count(layer) * ld // vec
    return rows, _launch(gpu, name, layer, per_image, ld // vec, I[n0:n1].ptr, rows.ptr, n1 - n0,
                         ld, 1.0, 0.0)


def _col2im(gpu, layer, dcol, grad, n0, n1, alpha, beta):
    """grad_I of images n0..n1 = alpha * col2im(dcol) + beta * grad_I.

    A thread sums 4 channels with one 16-byte load per tap where C and the
    pointers allow, else all the channels of one position when C <= 4 (the
    first layers: the walk over the taps once, not C times), else one channel."""
    positions = layer.D * layer.H * layer.W
    if layer.C % 4 == 0 and dcol.ptr % 16 == 0 and grad.ptr % 16 == 0:
        kind, groups = "v4", layer.C // 4
    elif layer.C <= 4:
        kind, groups = "p", 1  # a thread per position
    else:
        kind, groups = "v1", layer.C
    name = f"ga_col2im_{_TYPE_NAME[dtypes.name(layer.dtype)]}_{kind}"
    _launch(gpu, name, layer, positions * groups, groups, dcol.ptr, grad[n0:n1].ptr, n1 - n0,
            dcol.shape[1], alpha, beta)


def _launch(gpu, name, layer, per_image, groups, src, dst, images, ld, alpha, beta):
    """Queue one gather kernel (``groups``: a thread's vectors per row); returns
    ``(kernel, grid, packed arguments)``."""
    grid = (-(-per_image // THREADS), min(images, MAX_GRID_Y), 1)
    divisors = (groups, layer.Q, layer.P, layer.C, layer.S, layer.R, layer.W, layer.H,
                *layer.stride)
    args = ARGS.pack(src, dst, images, layer.D, layer.H, layer.W, layer.M, layer.P, layer.Q,
                     layer.T, layer.R, layer.S, *layer.stride, *layer.pad, *layer.dilation,
                     layer.C, ld, alpha, beta,
                     *(field for d in divisors for field in fastdiv.fast_divisor(d)))
    kernel = gpu.conv_library.function(STEM, name)
    kernel.launch(grid, (THREADS, 1, 1), args, 0)
    gpu._stats["kernels_launched"] += 1
    return kernel, grid, args
