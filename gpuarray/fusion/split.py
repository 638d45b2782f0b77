"""Splitting long reductions: few very long rows -> two steps per reduction.

In: a planner (:mod:`gpuarray.fusion.plan`) and an op-tree whose reductions run
over few rows of very many elements -- ``ng.sum(A)`` of 10**8 elements is
one row.  Out: the same tree with each such reduction replaced by a
reduction over a small tensor of partial results, plus the ``partial``
kernels that fill it queued on the planner.  (Where the reduction over the
partials is small -- a few rows -- the planner then folds it into the
partial kernel, which its last block runs: ``plan._finish_in_last_block``.)

A partial kernel gives every row ``chunks`` blocks; each block reduces its
slice of the row and writes one partial (float32 for float16/bfloat16, so
nothing is rounded in between).  The finishing reduction over the
partials is an ordinary small reduction.  This keeps the whole GPU busy
where one block, or one cluster, per row would leave most multiprocessors
idle.  Only reductions that combine associatively are split (sum, prod,
max, min, any, all); mean, var and std are built from sums.
"""
import numpy as np

from ..core import dtypes, ops, shapes
from ..core.array import Tensor
from ..core.optree import OpTreeNode, walk
from .layout import PARTIAL_BLOCKS

SPLITTABLE = ("sum", "prod", "max", "min", "any", "all")
#: rows at least this long are split when there are fewer rows than SMs
MIN_LENGTH = 1 << 18
#: blocks aimed at per multiprocessor, over all rows, by column partials
#: (and the split decision); row partials fill a wave of PARTIAL_BLOCKS
BLOCKS_PER_SM = 4
#: elements a block's 256 threads should at least have to reduce
MIN_BLOCK_WORK = 256 * 16
#: a reduction along a strided axis is split once its rows are this long:
#: each of a block's 8 warps walks length / 8 elements one dependent load at
#: a time, and past ~64 memory latencies (~40 us on an H100: the bias
#: gradient of a 1000 x 256 layer took 55 us as 8 blocks) that costs more
#: than the second, small kernel of a split (~3 us)
MIN_COLUMN_LENGTH = 512


def should_split(shape, axes, sms, columnar):
    """True when the rows reduced over ``axes`` are too few and too long.

    Rows along a strided axis (``columnar``) go 32 to a block, so they
    need 32 times as many to fill the GPU.
    """
    rows = shapes.size_of(d for a, d in enumerate(shape) if a not in axes)
    length = shapes.size_of(shape[a] for a in axes)
    if columnar:
        return rows < 32 * BLOCKS_PER_SM * sms and length >= MIN_COLUMN_LENGTH
    return rows < sms and length >= MIN_LENGTH


def is_columnar(tree, shape, axes):
    """True when the last axis is kept and every tensor walks it contiguously,
    so that rows of the reduction neighbour in memory."""
    last = len(shape) - 1
    if last < 0 or last in axes or shape[last] < 32:
        return False
    tensors = [t for t in walk(tree) if isinstance(t, Tensor) and t.ndim and t.shape[-1] > 1]
    return bool(tensors) and all(abs(t.strides[-1]) == t.itemsize for t in tensors)


class SplitMixin:
    """Planner methods splitting long reductions (needs materialize/add_step)."""

    def split_reductions(self, node, shape, axes, memo):
        """Replace splittable reductions over (shape, axes) in ``node``."""
        if not isinstance(node, OpTreeNode):
            return node
        if id(node) in memo:
            return memo[id(node)]
        args = tuple(self.split_reductions(a, shape, axes, memo) for a in node.args)
        result = self.rebuild(node, args)
        splittable = result.op in SPLITTABLE or result.op in ops.USER_REDUCTIONS
        if (result.is_reduction and splittable and result.attrs == axes
                and result.args[0].shape == shape):
            operand = self._materialize_reductions(result.args[0], {})
            result = self._split_one(result, operand, shape, axes)
        memo[id(node)] = result
        return result

    def _materialize_reductions(self, node, memo):
        """A partial kernel cannot hold other reductions: compute them first."""
        if not isinstance(node, OpTreeNode):
            return node
        if id(node) not in memo:
            if node.is_reduction:
                memo[id(node)] = self.materialize(node)
            else:
                args = tuple(self._materialize_reductions(a, memo) for a in node.args)
                memo[id(node)] = self.rebuild(node, args)
        return memo[id(node)]

    def _split_one(self, red, operand, shape, axes):
        rows = shapes.size_of(d for a, d in enumerate(shape) if a not in axes)
        length = shapes.size_of(shape[a] for a in axes)
        if is_columnar(operand, shape, axes):  # 32 rows a block, 8 lanes a row
            chunks = min(-(-self.sms * BLOCKS_PER_SM // -(-rows // 32)), length // 64)
        else:
            chunks = min(-(-self.sms * PARTIAL_BLOCKS // rows), length // MIN_BLOCK_WORK)
        chunks = max(1, chunks)
        storage = np.dtype(np.float32) if dtypes.is_low_precision(red.dtype) else red.dtype
        partial = self.backend.empty((rows * chunks,), storage)
        self.temps.append(partial)
        node = OpTreeNode(red.backend, red.op, (operand,), red.attrs, red.shape, red.dtype)
        self.add_step("partial", partial, node, shape, axes, chunks)
        view = _partials_view(partial, red.shape, axes, chunks)
        return OpTreeNode(red.backend, red.op, (self.logical(view, red.dtype),), axes,
                          red.shape, red.dtype)


def _partials_view(partial, keep_shape, axes, chunks):
    """View the (rows * chunks,) partials as the reduction's shape, with the
    first reduced axis holding the chunks (so reducing ``axes`` finishes)."""
    itemsize = partial.itemsize
    shape, strides = list(keep_shape), [0] * len(keep_shape)
    step = chunks * itemsize
    for a in reversed(range(len(keep_shape))):
        if a not in axes:
            strides[a] = step
            step *= keep_shape[a]
    shape[axes[0]], strides[axes[0]] = chunks, itemsize
    return partial._view(tuple(shape), tuple(strides), partial.offset)
