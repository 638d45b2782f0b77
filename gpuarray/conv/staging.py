"""Where a convolution's kernels read and write the caller's tensors.

In: the factory and a call's tensors.  Out: the tensor itself where the
kernels can use it (contiguous), else a contiguous copy (inputs) or a
temporary copied back after the kernels (outputs).  Shared by the gather
route (:mod:`~gpuarray.conv.convolution`) and the Winograd route
(:mod:`~gpuarray.conv.winograd`), whose kernels index dense NDHWC tensors.
"""
from .call import is_rows


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


def copy_back(target, written):
    """Copy the kernels' result into ``target`` when they wrote a temporary."""
    if written is not target:
        target[:] = written
