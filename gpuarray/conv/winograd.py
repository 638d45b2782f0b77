"""Winograd F(2x2, 3x3) convolution: the exact-fp32 route of 3x3 layers.

In: a checked :class:`~gpuarray.conv.call.ConvCall` of a float32, 2-D,
3x3, stride-1, undilated layer with at least :data:`MIN_CHANNELS` input
channels and filters (:func:`applies`), and the GPU factory.  Out: O,
grad_I or grad_F filled in, queued on the factory's stream; ``try_run``
returns False for any other call, which then takes the im2col route.

Each pass is transforms (kernels/conv_winograd.cu) around one batched
exact-fp32 GEMM over the 16 points of the transform domain:

======= ====================================== ================================
pass    transforms in                           GEMM (16 batches), transform out
======= ====================================== ================================
fprop   V = B^T d B of I, W = (G g G^T)^T of F  M = V @ W, O = A^T M A
bprop   V of E (padding 2 - pad), U of F        M = V @ U, grad_I = A^T M A
        rotated 180 degrees
update  V of I, E' = A dY A^T of E              dU = E'^T @ V, grad_F = G^T dU G
======= ====================================== ================================

Why: the fp32 layers have no tensor cores to run on (TF32 off), and the
im2col route's GEMM reads nine copies of the input per pass.  F(2x2, 3x3)
needs 16 multiply-adds per 2x2 outputs and channel where the direct
convolution needs 36, for the traffic of the transformed tiles (V, M and
E' hold 4 values per input or output element).  Its rounding error stays
at fp32's level (the transforms' coefficients are 0, +-1 and 1/2).

Non-finite values: an infinite input would make NaN of every output of
the tiles it reaches (the transforms subtract it from itself) where the
direct sum gives +-inf, so the output transform sums a tile whose 16
transformed values are not all finite directly from the input and
filters (fprop and bprop).  The filter gradient does not yet: an
infinite input or error value makes NaN of the filter gradients it
reaches, where the direct sum gives +-inf.

The batch runs in chunks of images whose transformed tensors fit
``WORKSPACE_BYTES``; update sums the chunks' dU in fp32, in chunk order,
and applies alpha and beta in the last transform.  No atomics: the same
bits on every run.
"""
import struct

import numpy as np

from .call import row_stride
from .staging import as_rows, contiguous, copy_back, image_ptr, output, transform_chunks

STEM = "conv_winograd"
THREADS = 256
#: WinogradArgs of kernels/conv_winograd.cu: src, dst, bias, image, filters,
#: tiles, H, W, C, K, TP, TQ, pad_h, pad_w, src_ld, dst_ld, image_H,
#: image_W, image_C, image_ld, alpha, beta, relu, flip, cmajor
ARGS = struct.Struct("<5Qq14i2f3i")
#: points of the transform domain: the batches of the GEMM
POINTS = 16
#: the most device memory one call's transformed tensors take (the pool caches it)
WORKSPACE_BYTES = 1 << 30
#: fewer input channels or filters leave the GEMM too thin to pay for the transforms
MIN_CHANNELS = 32
#: blocks of a launch per multiprocessor: threads stride over the rest
BLOCKS_PER_SM = 16
F32 = np.dtype(np.float32)


def applies(layer):
    """Whether ``layer`` takes the Winograd route."""
    return (layer.dtype == F32 and layer.D == 1 and layer.T == 1
            and (layer.R, layer.S) == (3, 3) and layer.stride == (1, 1, 1)
            and layer.dilation == (1, 1, 1)
            and min(layer.C, layer.K) >= MIN_CHANNELS)


def try_run(gpu, call):
    """Run ``call`` on the Winograd route and return True, or return False
    when its layer (or an fp16/bf16 bias) does not take it."""
    if not applies(call.layer) or (call.bias is not None and call.bias.dtype != F32):
        return False
    {"fprop": _fprop, "bprop": _bprop, "update": _update}[call.kind](gpu, call, call.layer)
    return True


def tiles(rows, cols):
    """2x2 output blocks ``(TP, TQ)`` covering ``rows`` x ``cols`` outputs."""
    return -(-rows // 2), -(-cols // 2)


def chunks(gpu, images, per_image, widths):
    """Per chunk of images whose transformed tensors fit ``WORKSPACE_BYTES``:
    ``(n0, n1, views)``, a (16, tiles, width) view for each of ``widths``
    (channels) (see :func:`~gpuarray.conv.staging.transform_chunks`)."""
    for n0, n1, _, spaces in transform_chunks(gpu, images, per_image, widths, POINTS,
                                              WORKSPACE_BYTES):
        yield n0, n1, spaces


# -- the three passes ------------------------------------------------------------

def _fprop(gpu, call, layer):
    I = as_rows(gpu, call.a)  # noqa: E741
    O = output(gpu, call.out, call.beta, rows_ok=True)  # noqa: E741
    F = contiguous(gpu, call.b)
    # W (16, C, K): the GEMM's second operand n-contiguous, which its fastest
    # kernels copy by cp.async (U (16, K, C) read transposed would take the
    # register-staged kernel of half the K-tile)
    W = _filters(gpu, layer, F, flip=False, cmajor=True)
    TP, TQ = tiles(layer.P, layer.Q)
    bias = 0 if call.bias is None else contiguous(gpu, call.bias).ptr
    _forward(gpu, I, (F, W, False), O, (layer.H, layer.W, layer.C),
             (layer.P, layer.Q, layer.K), (TP, TQ), layer.pad[1:],
             epilogue=(call.alpha, call.beta, bias, call.relu))
    copy_back(call.out, O)


def _bprop(gpu, call, layer):
    E = as_rows(gpu, call.b)
    grad = output(gpu, call.out, call.beta, rows_ok=True)
    F = contiguous(gpu, call.a)
    U = _filters(gpu, layer, F, flip=True, cmajor=False)
    TP, TQ = tiles(layer.H, layer.W)
    pad = tuple(2 - p for p in layer.pad[1:])
    _forward(gpu, E, (F, U, True), grad, (layer.P, layer.Q, layer.K), (layer.H, layer.W, layer.C),
             (TP, TQ), pad, epilogue=(call.alpha, call.beta, 0, False))
    copy_back(call.out, grad)


def _forward(gpu, src, filters, dst, src_size, dst_size, tile_counts, pad, epilogue):
    """dst (N, 1, *dst_size) = the 3x3 convolution of src (N, 1, *src_size),
    chunk by chunk; src and dst read as rows.  ``filters`` is ``(F, U, flip)``:
    the layer's filters (for the direct sums of non-finite tiles), their
    transforms as the GEMM's (16, src channels, dst channels) operand, and
    whether this is the data gradient's rotated convolution."""
    (H, W, C), (P, Q, K), (TP, TQ) = src_size, dst_size, tile_counts
    F, U, flip = filters
    alpha, beta, bias, relu = epilogue
    for n0, n1, (V, M) in chunks(gpu, src.shape[0], TP * TQ, (C, K)):
        count = V.shape[1]
        _launch(gpu, "ga_winograd_input", count * C, image_ptr(src, n0), V.ptr, tiles=count, H=H, W=W,
                C=C, TP=TP, TQ=TQ, pad=pad, src_ld=row_stride(src))
        gpu.batched_dot(V, U, M)
        _launch(gpu, "ga_winograd_output", count * K, M.ptr, image_ptr(dst, n0), bias=bias, tiles=count,
                H=P, W=Q, C=K, TP=TP, TQ=TQ, pad=pad, dst_ld=row_stride(dst), alpha=alpha,
                beta=beta, relu=relu, flip=flip,
                image=(image_ptr(src, n0), F.ptr, H, W, C, row_stride(src)))


def _update(gpu, call, layer):
    I, E = as_rows(gpu, call.a), as_rows(gpu, call.b)  # noqa: E741
    grad = output(gpu, call.out, call.beta)
    C, K = layer.C, layer.K
    TP, TQ = tiles(layer.P, layer.Q)
    dU = gpu.empty((POINTS, K, C), F32)
    for n0, n1, (V, Et) in chunks(gpu, layer.N, TP * TQ, (C, K)):
        count = V.shape[1]
        _launch(gpu, "ga_winograd_input", count * C, image_ptr(I, n0), V.ptr, tiles=count,
                H=layer.H, W=layer.W, C=C, TP=TP, TQ=TQ, pad=layer.pad[1:], src_ld=row_stride(I))
        _launch(gpu, "ga_winograd_grad_output", count * K, image_ptr(E, n0), Et.ptr, tiles=count,
                H=layer.P, W=layer.Q, C=K, TP=TP, TQ=TQ, src_ld=row_stride(E))
        # the chunks add up in fp32, in chunk order
        gpu.batched_dot(Et.transpose(0, 2, 1), V, dU, beta=0.0 if n0 == 0 else 1.0)
    _launch(gpu, "ga_winograd_filter_grad", K * C, dU.ptr, grad.ptr, C=C, K=K,
            alpha=call.alpha, beta=call.beta)
    copy_back(call.out, grad)


def _filters(gpu, layer, F, flip, cmajor):
    """The transformed contiguous filters F (``flip``: rotated 180 degrees):
    U (16, K, C), or with ``cmajor`` its transpose W (16, C, K)."""
    K, C = layer.K, layer.C
    U = gpu.empty((POINTS, C, K) if cmajor else (POINTS, K, C), F32)
    _launch(gpu, "ga_winograd_filter", K * C, F.ptr, U.ptr, C=C, K=K, flip=flip, cmajor=cmajor)
    return U


def _launch(gpu, name, threads, src, dst, bias=0, tiles=0, H=0, W=0, C=0, K=0, TP=1, TQ=1,
            pad=(0, 0), src_ld=0, dst_ld=0, alpha=1.0, beta=0.0, relu=False, flip=False,
            cmajor=False, image=(0, 0, 0, 0, 0, 0)):
    """Queue one transform kernel over ``threads`` work items (``image``: the
    output transform's (input, filters, H, W, C, ld) for its direct sums)."""
    image_addr, filters_addr, *image_sizes = image
    args = ARGS.pack(src, dst, bias, image_addr, filters_addr, tiles, H, W, C, K, TP, TQ, *pad,
                     src_ld, dst_ld, *image_sizes, alpha, beta, int(relu), int(flip), int(cmajor))
    grid = (max(1, min(-(-threads // THREADS), gpu.sms * BLOCKS_PER_SM)), 1, 1)
    gpu.conv_library.function(STEM, name).launch(grid, (THREADS, 1, 1), args, 0)
    gpu._stats["kernels_launched"] += 1
