"""Radix sort keys: which unsigned key each dtype sorts by.

In: a numpy dtype (and, on the host, an array of it).  Out: the key's kind
and width that ``ga_encode_keys`` (``kernels/algorithms_host.cu``) takes,
and :func:`encode` / :func:`decode`, the same transforms in numpy for the
host engine.  Keys order as numpy sorts: integers by value, floats by value
with every NaN last (one all-ones key, so NaNs compare equal); with
``merge_zeros`` -0.0 takes +0.0's key (a stable argsort keeps their order,
as numpy's does), else it sorts just before +0.0 and decodes to itself.
``descending`` complements the key.
"""
import numpy as np

from ..core import dtypes
from ..cuda.algorithms import BFLOAT, FLOAT, SIGNED, UNSIGNED

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def key_kind(dtype):
    """``(kind, width in bytes)`` of ``dtype``'s keys; TypeError where no order exists."""
    dtype = np.dtype(dtype)
    if dtype == dtypes.bfloat16:
        return BFLOAT, 2
    if dtype.kind in "bu":
        return UNSIGNED, dtype.itemsize
    if dtype.kind == "i":
        return SIGNED, dtype.itemsize
    if dtype.kind == "f":
        return FLOAT, dtype.itemsize
    raise TypeError(f"cannot sort arrays of {dtype}")


def key_dtype(dtype):
    """The unsigned integer dtype of ``dtype``'s keys."""
    return np.dtype(_UINT[key_kind(dtype)[1]])


def key_bits(dtype):
    """How many low bits of the key vary: one for bool, else all."""
    dtype = np.dtype(dtype)
    return 1 if dtype.kind == "b" else 8 * dtype.itemsize


def encode(values, merge_zeros, descending):
    """The keys of a numpy array ``values`` (the device's encoding, on the host)."""
    kind, width = key_kind(values.dtype)
    udtype = _UINT[width]
    bits = np.ascontiguousarray(values).view(udtype)
    sign = udtype(1 << (8 * width - 1))
    if kind == UNSIGNED:
        keys = bits.copy()
    elif kind == SIGNED:
        keys = bits ^ sign
    else:
        keys = np.where(bits & sign, ~bits, bits | sign)
        magnitude = bits & ~sign
        if merge_zeros:
            keys[magnitude == 0] = sign
        keys[magnitude > _infinity(kind, width)] = ~udtype(0)
    return ~keys if descending else keys


def decode(keys, dtype, descending):
    """The values of ``keys`` (from :func:`encode` without ``merge_zeros``)."""
    kind, width = key_kind(dtype)
    udtype = _UINT[width]
    keys = ~keys if descending else keys
    sign = udtype(1 << (8 * width - 1))
    if kind == UNSIGNED:
        bits = keys
    elif kind == SIGNED:
        bits = keys ^ sign
    else:
        bits = np.where(keys & sign, keys & ~sign, ~keys)
    return np.ascontiguousarray(bits, dtype=udtype).view(np.dtype(dtype))


def _infinity(kind, width):
    """The bits of +inf: a larger magnitude is a NaN."""
    if kind == BFLOAT:
        return 0x7f80
    return {2: 0x7c00, 4: 0x7f800000, 8: 0x7ff0000000000000}[width]
