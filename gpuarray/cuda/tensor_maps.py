"""The copy engine's tensor maps: the ``CUtensorMap`` descriptors a TMA kernel reads.

In: a tensor's device address, element type, extents and byte strides,
the tile box one copy moves and the shared-memory swizzle the kernel reads
with (tiled maps: the GEMM kernels' operands and C), or a convolution's
pixel window and traversal strides (im2col maps: the implicit-GEMM
convolution's activation gather).  Out: the 128-byte descriptor, which the
kernel receives by value in its argument block.  Encoding is a host-side
driver call (``cuTensorMapEncodeTiled`` / ``Im2col``); callers keep the
descriptors of recent addresses rather than encoding per launch.
"""
import ctypes

import numpy as np

from ..core import dtypes
from .driver import DriverError, libcuda

TENSOR_MAP_BYTES = 128

# CUtensorMapDataType
_DATA_TYPE = {
    np.dtype(np.float16): 6,
    np.dtype(np.float32): 7,
    dtypes.bfloat16: 9,
    # the copy engine moves FP8 as bytes (it has no FP8 type)
    dtypes.float8_e4m3fn: 0,
    dtypes.float8_e5m2: 0,
}
_TFLOAT32 = 11
# CUtensorMapSwizzle, by the width in bytes of the swizzled row
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_INTERLEAVE_NONE = 0
_L2_PROMOTION_256B = 3
_OOB_FILL_ZEROS = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds reads give zeros


def encode_tiled(ptr, dtype, dims, strides, box, swizzle_bytes, tf32=False):
    """Encode a tiled TMA descriptor.

    Parameters
    ----------
    ptr : int
        Device address of element (0, 0, ...); 16-byte aligned.
    dtype : numpy.dtype
        float16, bfloat16, float32 or an FP8 type.
    dims : sequence of int
        Extents, innermost (contiguous) first.
    strides : sequence of int
        Byte strides of dims[1:], each a multiple of 16.
    box : sequence of int
        Extents of the tile one copy moves, innermost first.
    swizzle_bytes : int
        0, 32, 64 or 128: the shared-memory swizzle the kernel reads with.
    tf32 : bool
        Mark float32 data as TF32 (the copy engine rounds it).

    Returns
    -------
    bytes
        The 128-byte descriptor.
    """
    rank = len(dims)
    out = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)
    # CUtensorMap is 64-byte aligned
    address = (ctypes.addressof(out) + 63) & ~63
    data_type = _TFLOAT32 if tf32 else _DATA_TYPE[np.dtype(dtype)]
    result = libcuda().cuTensorMapEncodeTiled(
        address, data_type, rank, ptr,
        (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * (rank - 1))(*strides),
        (ctypes.c_uint32 * rank)(*box), (ctypes.c_uint32 * rank)(*([1] * rank)),
        _INTERLEAVE_NONE, SWIZZLE[swizzle_bytes], _L2_PROMOTION_256B, _OOB_FILL_ZEROS)
    if result != 0:
        raise DriverError(
            f"cuTensorMapEncodeTiled failed (CUresult {result}) for dims={tuple(dims)} "
            f"strides={tuple(strides)} box={tuple(box)} at address {ptr:#x}")
    return ctypes.string_at(address, TENSOR_MAP_BYTES)


def encode_im2col(ptr, dtype, dims, strides, lower, upper, channels, pixels, element_strides,
                  swizzle_bytes):
    """Encode an im2col TMA descriptor (implicit-GEMM convolution's activation gather).

    Parameters
    ----------
    ptr : int
        Device address of the NHWC (or NDHWC) tensor; 16-byte aligned.
    dtype : numpy.dtype
        float16 or bfloat16 (or float32).
    dims : sequence of int
        Extents innermost first: C, W, H, [D,] N.
    strides : sequence of int
        Byte strides of dims[1:], each a multiple of 16.
    lower, upper : sequence of int
        The pixel bounding box's corners along W, H, [D] (innermost first),
        relative to the tensor's first and last position: the range of
        window starts (lower = -pad, upper = pad - dil * (extent - 1)).
    channels : int
        Channels one copy moves per pixel (at most 256, and 128 bytes with
        the 128-byte swizzle).
    pixels : int
        Pixels (output positions) one copy moves.
    element_strides : sequence of int
        Traversal step per dim (the convolution's strides; 1 for C and N).
    swizzle_bytes : int
        0, 32, 64 or 128.

    Returns
    -------
    bytes
        The 128-byte descriptor.
    """
    rank = len(dims)
    spatial = rank - 2
    out = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)
    address = (ctypes.addressof(out) + 63) & ~63
    result = libcuda().cuTensorMapEncodeIm2col(
        address, _DATA_TYPE[np.dtype(dtype)], rank, ptr,
        (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * (rank - 1))(*strides),
        (ctypes.c_int * spatial)(*lower), (ctypes.c_int * spatial)(*upper), channels, pixels,
        (ctypes.c_uint32 * rank)(*element_strides), _INTERLEAVE_NONE, SWIZZLE[swizzle_bytes],
        _L2_PROMOTION_256B, _OOB_FILL_ZEROS)
    if result != 0:
        raise DriverError(
            f"cuTensorMapEncodeIm2col failed (CUresult {result}) for dims={tuple(dims)} "
            f"strides={tuple(strides)} corners={tuple(lower)}/{tuple(upper)} "
            f"channels={channels} pixels={pixels} at address {ptr:#x}")
    return ctypes.string_at(address, TENSOR_MAP_BYTES)
