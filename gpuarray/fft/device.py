"""The GPU factory's Fourier transforms: cuFFT plans over the transformed axes.

In: the kind (``"c2c"``, ``"r2c"``, ``"c2r"``), a tensor or op-tree of the
input dtype (complex, or real for r2c), the axes and their extents ``s``
(the real extents for r2c/c2r), and the direction.  Out: a new tensor
holding the unnormalised transform, as a view with the axes in their
original places; :mod:`gpuarray.fft.namespace` scales it.

The transformed axes are moved last; cuFFT reads a contiguous tensor
where it is, and anything else -- a strided view, an op-tree (the norm's
scale, a cast), the input of c2r, which cuFFT overwrites -- is first
copied there contiguously by one fused kernel.  Then one cuFFT execution
covers up to three axes and every batch.  More axes, or an axis named twice (numpy then
transforms it twice), run as one execution per axis.  Plans are cached
per factory by kind, precision, extents and batch (a cuFFT plan is made
for one size); their work areas come from the factory's pool for each
execution.
"""
from collections import OrderedDict

import numpy as np

from ..core import dtypes
from ..core.array import Tensor
from ..core.shapes import size_of
from ..cuda import cufft

#: plans kept per factory; the least recently used one is destroyed beyond this
MAX_PLANS = 32


class PlanCache:
    """cuFFT plans of one factory, least recently used first."""

    def __init__(self):
        self.plans = OrderedDict()

    def get(self, kind, double, dims, batch):
        """The plan for this transform, made on first use."""
        key = (kind, double, dims, batch)
        plan = self.plans.pop(key, None)
        if plan is None:
            plan = cufft.Plan(kind, double, dims, batch)
            if len(self.plans) >= MAX_PLANS:
                self.plans.popitem(last=False)[1].destroy()
        self.plans[key] = plan
        return plan


def transform(gpu, cache, kind, x, axes, s, forward):
    """The unnormalised transform of ``x`` over ``axes`` (see the module)."""
    if len(set(axes)) != len(axes) or len(axes) > cufft.MAX_RANK:
        return _one_axis_at_a_time(gpu, cache, kind, x, axes, s, forward)
    ndim = len(x.shape)
    order = [a for a in range(ndim) if a not in axes] + list(axes)
    moved = gpu.transpose(x, order) if order != list(range(ndim)) else x
    if _readable_in_place(kind, moved):
        # out of place from the caller's tensor: cuFFT's c2c and r2c leave their input as it was
        source = moved
        target = gpu.empty(_target_shape(kind, moved.shape, s), _target_dtype(kind, moved.dtype))
    else:
        source = gpu.empty(moved.shape, moved.dtype)
        source[...] = moved
        target = source if kind == "c2c" else gpu.empty(_target_shape(kind, moved.shape, s),
                                                        _target_dtype(kind, moved.dtype))
    batch = size_of(moved.shape[:ndim - len(axes)])
    if batch and source.size and target.size:
        double = moved.dtype in (np.float64, np.complex128)
        plan = cache.get(kind, double, tuple(s), batch)
        work = gpu.pool.allocate(plan.work_bytes) if plan.work_bytes else None
        try:
            plan.execute(source.ptr, target.ptr, work.ptr if work else 0,
                         cufft.FORWARD if forward else cufft.INVERSE)
        finally:
            # stream-ordered: later work on this stream runs after the transform
            if work is not None:
                work.free()
    back = [order.index(a) for a in range(ndim)]
    return gpu.transpose(target, back) if back != list(range(ndim)) else target


def _one_axis_at_a_time(gpu, cache, kind, x, axes, s, forward):
    """One execution per axis, in numpy's order (the last axis first); the
    real transform's halved axis is the last one given, so r2c transforms it
    first and c2r last."""
    pairs = list(zip(axes, s))
    if kind == "r2c":
        axis, n = pairs.pop()
        x = transform(gpu, cache, "r2c", x, [axis], [n], True)
    last = pairs.pop() if kind == "c2r" else None
    for axis, n in reversed(pairs):
        x = transform(gpu, cache, "c2c", x, [axis], [n], forward)
    if last is not None:
        x = transform(gpu, cache, "c2r", x, [last[0]], [last[1]], False)
    return x


def _readable_in_place(kind, x):
    """True when cuFFT can read ``x`` where it is: a contiguous tensor, 16-byte
    aligned, for a transform that does not overwrite its input (c2r does)."""
    return (kind != "c2r" and isinstance(x, Tensor) and x.is_contiguous
            and (x.buffer_ptr() + x.offset) % 16 == 0)


def _target_shape(kind, shape, s):
    last = s[-1] // 2 + 1 if kind == "r2c" else s[-1]
    return tuple(shape[:-1]) + (last,)


def _target_dtype(kind, dtype):
    if kind == "c2c":
        return np.dtype(dtype)
    if kind == "r2c":
        return np.dtype(np.complex64 if dtype == np.float32 else np.complex128)
    return dtypes.real_part(dtype)
