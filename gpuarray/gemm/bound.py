"""Bound matrix products on the GPU: one ``dot`` call, its launch recorded and replayed per run.

In: a checked ``ng.bind_dot`` call -- the user's A, B, C, bias, alpha,
beta, relu -- its full path (the call as ``dot`` makes it) and the GPU
factory.  Out: a :class:`~gpuarray.core.bound.BoundCall`.

The first run takes the full path, which plans the product and records
its plan as any repeated ``dot`` does (:mod:`gpuarray.gemm.replay`).
Then, where that plan is there for these operands, the plan's launches
are recorded with the operands' addresses (a
:class:`~gpuarray.gemm.replay.GemmLaunch`, owning its split-K workspace)
and every later run replays them (:mod:`gpuarray.cuda.replays`: the
checks a run repeats, and when it takes the full path).  A product with
no recordable plan (an operand sharing C's memory, an empty product)
takes the full path every run.
"""
import functools

from ..core.bound import BoundCall
from ..cuda.replays import LazyReplay, Replay
from . import replay


def bind_product(gpu, full_path, A, B, C, alpha, beta, relu, bias):
    """The :class:`~gpuarray.core.bound.BoundCall` of a checked ``dot`` into C on ``gpu``."""
    record = functools.partial(_record, gpu, full_path, (A, B, C, bias), alpha, beta, relu)
    return BoundCall(LazyReplay(gpu, full_path, record).run, C, "dot")


def _record(gpu, full_path, operands, alpha, beta, relu):
    A, B, C, bias = operands
    key = replay.signature(gpu, False, A, B, C, bias, None, relu, beta, None)
    plan = gpu._gemm_plans.get(key) if key is not None and gpu._gemm_plans else None
    if plan is None:
        return None
    a, b = (B, A) if plan.swapped else (A, B)
    record = plan.record(gpu, a.ptr, b.ptr, C.ptr, bias.ptr if bias is not None else 0, 0,
                         alpha, beta)
    tensors = tuple(t for t in operands if t is not None)
    return Replay(gpu, functools.partial(replay.replay_counted, gpu, record), tensors, C,
                  full_path)
