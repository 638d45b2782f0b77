"""Where a convolution's kernels read and write the caller's tensors.

In: the factory and a call's tensors.  Out: the tensor itself where the
kernels can use it (contiguous), else a contiguous copy (inputs) or a
temporary copied back after the kernels (outputs); and the chunks of a
batch whose transformed tiles fit a workspace.  Shared by the gather
route (:mod:`~gpuarray.conv.convolution`), the Winograd route
(:mod:`~gpuarray.conv.winograd`) and the FFT route
(:mod:`~gpuarray.conv.fft`), whose kernels index dense NDHWC tensors.
"""
import numpy as np

from .call import is_rows

F32 = np.dtype(np.float32)


def contiguous(gpu, t):
    """``t`` itself when contiguous, else a contiguous copy."""
    return t if t.is_contiguous else gpu.evaluate(t)


def as_rows(gpu, t):
    """``t`` itself where it reads as rows (see :func:`~gpuarray.conv.call.is_rows`),
    else a contiguous copy."""
    return t if is_rows(t) else gpu.evaluate(t)


def output(gpu, target, beta, rows_ok=False):
    """Where the kernels write ``target``: itself when contiguous (or, with
    ``rows_ok``, when the kernels write it as rows and it reads as rows), else a
    temporary (holding target's values when beta needs them)."""
    if target.is_contiguous or (rows_ok and is_rows(target)):
        return target
    return gpu.evaluate(target) if beta else gpu.empty(target.shape, target.dtype)


def image_ptr(t, n):
    """Address of image ``n`` of the batch ``t`` (``t[n:].ptr``, without making the view)."""
    return t.ptr + n * t.strides[0]


def copy_back(target, written):
    """Copy the kernels' result into ``target`` when they wrote a temporary."""
    if written is not target:
        target[:] = written


def transform_chunks(gpu, images, per_image, widths, points, budget):
    """Per chunk of images whose transformed tiles fit ``budget`` bytes:
    ``(n0, n1, tiles, spaces)``, with ``tiles = (n1 - n0) * per_image`` and
    for each of ``widths`` (values per tile and point) a contiguous fp32
    view of shape ``(points, tiles, width)``, cut from one workspace per
    width allocated once for the largest chunk (the whole workspace where
    the chunk fills it)."""
    step = max(1, min(images, budget // (points * per_image * sum(widths) * F32.itemsize)))
    spaces = [gpu.empty((points, step * per_image, w), F32) for w in widths]
    for n0 in range(0, images, step):
        n1 = min(n0 + step, images)
        tiles = (n1 - n0) * per_image
        if n1 - n0 == step:
            yield n0, n1, tiles, spaces
        else:
            yield n0, n1, tiles, [space.reshape(-1)[:points * tiles * w].reshape(points, tiles, w)
                                  for space, w in zip(spaces, widths)]
