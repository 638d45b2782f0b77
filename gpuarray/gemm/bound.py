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
from ..cuda import stream
from ..cuda.replays import Replay
from . import replay


def bind_product(gpu, full_path, A, B, C, alpha, beta, relu, bias):
    """The :class:`~gpuarray.core.bound.BoundCall` of a checked ``dot`` into C on ``gpu``."""
    return BoundCall(_BoundProduct(gpu, full_path, (A, B, C, bias), alpha, beta, relu).run, C,
                     "dot")


class _BoundProduct:
    """Runs the full path until the product's launch is recorded, then replays it."""

    __slots__ = ("gpu", "full_path", "operands", "alpha", "beta", "relu", "replay", "tried")

    def __init__(self, gpu, full_path, operands, alpha, beta, relu):
        self.gpu, self.full_path, self.operands = gpu, full_path, operands
        self.alpha, self.beta, self.relu = alpha, beta, relu
        self.replay, self.tried = None, False

    def run(self):
        if self.replay is not None:
            self.replay.run()
            return
        self.full_path()
        # recorded outside captured steps only: a capture's allocations belong to its graph
        if not self.tried and stream.capturing() is None:
            self.tried = True
            self.replay = self.gpu._run_bound(self._record)

    def _record(self):
        gpu = self.gpu
        A, B, C, bias = self.operands
        key = replay.signature(gpu, False, A, B, C, bias, None, self.relu, self.beta, None)
        plan = gpu._gemm_plans.get(key) if key is not None and gpu._gemm_plans else None
        if plan is None:
            return None
        a, b = (B, A) if plan.swapped else (A, B)
        record = plan.record(gpu, a.ptr, b.ptr, C.ptr, bias.ptr if bias is not None else 0, 0,
                             self.alpha, self.beta)
        tensors = tuple(t for t in self.operands if t is not None)
        return Replay(gpu, functools.partial(replay.replay_counted, gpu, record), tensors, C,
                      self.full_path)
