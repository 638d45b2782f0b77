"""Bound convolution calls: one call checked and routed once, then run again and again.

In: a checked :class:`~gpuarray.conv.call.ConvCall`, or a bias gradient's
checked arguments, and the GPU factory.  Out: a :class:`~gpuarray.conv.call.BoundCall`;
calling it (no arguments) queues the call's work again on the current
stream and returns the call's output tensor.

Why: a network's layers make the same calls with the same tensors every
step, and an eager call's host work -- the checks, the route's decision,
the plan's lookup, packing the kernel's arguments -- repeats for nothing.
A bound call does it once (as cuDNN's frontend runs a finished execution
plan with a fixed variant pack); a run costs the launches.  Each run
reads the tensors' current contents: only the tensors themselves (their
addresses, shapes and strides), the layer and the scalars are fixed.

What runs: an implicit-GEMM convolution (:mod:`~gpuarray.conv.implicit`)
replays its recorded launches, the record owning its split-K workspace
(and a padded filter update its fp32 buffer, narrowed into the output by
one fused assignment per run); the bias gradient's kernel
(:mod:`~gpuarray.conv.bias`) its patched launch, with a semaphore block
of its own.  Memory held so stays constant across runs.  Every other
route runs the checked call through the factory's full path.

What a run checks: that no tensor's memory was freed (a freed tensor
raises, as every call does), and that the output's stochastic rounding
is still off.  Inside a captured step (:mod:`gpuarray.cuda.capture`) and
with rounding on, a run takes the full path: the step's graph then holds
what an eager call would queue, with temporaries of its own.
"""
import functools

from ..cuda import stream
from . import bias, implicit, small_c
from .call import BoundCall


def bind_conv(gpu, call):
    """A ``BoundCall`` of the checked convolution ``call`` on ``gpu``."""
    what = f"{call.kind}_conv of {call.layer}"
    full_path = functools.partial(gpu._conv, call)
    # the route order of convolution.run: small-C kernels before the implicit GEMM
    if call.out.rounding or small_c.plan_of(gpu, call) is not None:
        return BoundCall(full_path, call.out, what)
    recorded = implicit.record(gpu, call)
    if recorded is None:
        return BoundCall(full_path, call.out, what)
    record, padded = recorded  # the record owns its workspace: freed with the bound call
    tensors = tuple(t for t in (call.a, call.b, call.out, call.bias, padded) if t is not None)
    replay = _Replay(gpu, functools.partial(_replay_gemm, gpu, record), tensors, call.out,
                     full_path,
                     None if padded is None else functools.partial(implicit.keep_channels,
                                                                   call, padded))
    return BoundCall(replay.run, call.out, what)


def bind_bias(gpu, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
    """A ``BoundCall`` of a checked bias gradient on ``gpu``;
    ``full_path`` runs the call as ``update_bias`` does."""
    what = f"update_bias of {E.shape[-1]} channels"
    plan = bias.plan_of(gpu, E, grad_b, O)
    if plan is None:
        return BoundCall(full_path, grad_b, what)
    block = gpu.semaphores.allocate(plan.block_bytes)
    values = plan.values(E, grad_b, O, alpha, beta, block)
    tensors = tuple(t for t in (E, grad_b, O) if t is not None)
    replay = _Replay(gpu, functools.partial(plan.launch, gpu, values), tensors, grad_b,
                     full_path, keep=block)
    return BoundCall(replay.run, grad_b, what)


def _replay_gemm(gpu, record):
    record.replay()
    gpu._stats["kernels_launched"] += len(record.launches)


class _Replay:
    """Queues recorded launches again after checking the call's tensors.

    ``launch`` queues them (no arguments); ``then`` (or None) runs after
    it; ``keep`` is memory the launches use, held as long as they may run.
    """

    __slots__ = ("gpu", "launch", "tensors", "out", "full_path", "then", "keep")

    def __init__(self, gpu, launch, tensors, out, full_path, then=None, keep=None):
        self.gpu, self.launch, self.tensors, self.out = gpu, launch, tensors, out
        self.full_path, self.then, self.keep = full_path, then, keep

    def run(self):
        if self.out.rounding or stream.capturing() is not None:
            self.full_path()
            return
        for t in self.tensors:
            t.ptr  # noqa: B018 - a freed buffer raises here, before any work is queued
        self.gpu._run_bound(self.launch)
        if self.then is not None:
            self.then()
