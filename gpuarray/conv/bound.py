"""Bound convolution calls: one call checked and routed once, then run again and again.

In: a checked :class:`~gpuarray.conv.call.ConvCall`, or a bias gradient's
checked arguments, and the GPU factory.  Out: a :class:`~gpuarray.core.bound.BoundCall`;
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
(:mod:`~gpuarray.conv.bias`) its patched launch.  Memory held so stays
constant across runs.  Every other
route runs the checked call through the factory's full path.

A run checks that no tensor's memory was freed (a freed tensor raises,
as every call does); inside a captured step, or where the output's
stochastic rounding was switched on, it takes the full path
(:mod:`gpuarray.cuda.replays`).
"""
import functools

from ..core.bound import BoundCall
from ..cuda.replays import Replay
from ..gemm.replay import replay_counted
from . import bias, implicit, small_c


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
    narrow = None if padded is None else functools.partial(implicit.keep_channels, call, padded)
    replay = Replay(gpu, functools.partial(replay_counted, gpu, record), tensors, call.out,
                    full_path, narrow)
    return BoundCall(replay.run, call.out, what)


def bind_bias(gpu, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
    """A ``BoundCall`` of a checked bias gradient on ``gpu``;
    ``full_path`` runs the call as ``update_bias`` does."""
    what = f"update_bias of {E.shape[-1]} channels"
    plan = bias.plan_of(gpu, E, grad_b, O)
    if plan is None:
        return BoundCall(full_path, grad_b, what)
    # the plan's own run: a semaphore block lent per run, as to every call
    tensors = tuple(t for t in (E, grad_b, O) if t is not None)
    launch = functools.partial(plan.run, gpu, E, grad_b, O, alpha, beta)
    replay = Replay(gpu, launch, tensors, grad_b, full_path)
    return BoundCall(replay.run, grad_b, what)
