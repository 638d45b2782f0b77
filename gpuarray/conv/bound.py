"""Bound convolution calls: one call checked and routed once, then run again and again.

In: a checked :class:`~gpuarray.conv.call.ConvCall`, or a bias
gradient's checked arguments, and the GPU factory.  Out: a
:class:`~gpuarray.core.bound.BoundCall`; calling it (no arguments) queues
the call's work again on the current stream and returns the call's
output tensor.

Why: a network's layers make the same calls with the same tensors every
step, and an eager call's host work -- the checks, the route's decision,
the plan's lookup, packing the kernel's arguments -- repeats for nothing.
A bound call does it once (as cuDNN's frontend runs a finished execution
plan with a fixed variant pack); a run costs the launches.  Each run
reads the tensors' current contents: only the tensors themselves (their
addresses, shapes and strides), the layer and the scalars are fixed.

What runs: the first run outside a captured step takes the call's full
path, then records (:mod:`gpuarray.cuda.replays`).  From then on an
implicit-GEMM convolution (:mod:`~gpuarray.conv.implicit`) replays its
recorded launches, the record owning its split-K workspace (and a padded
filter update its fp32 buffer, narrowed into the output by one fused
assignment per run), and the bias gradient's kernel
(:mod:`~gpuarray.conv.bias`) runs its plan directly; memory held so stays
constant across runs.  Every other route runs the checked call through
the factory's full path.  A run checks that no tensor's memory was freed
(a freed tensor raises, as every call does); inside a captured step, or
where the output's stochastic rounding was switched on, it takes the
full path.
"""
import functools

from ..core.bound import BoundCall
from ..cuda.replays import LazyReplay, Replay
from ..gemm.replay import replay_counted
from . import bias, implicit, small_c


def bind_conv(gpu, call):
    """A ``BoundCall`` of the checked convolution ``call`` on ``gpu``."""
    full_path = functools.partial(gpu._conv, call)
    lazy = LazyReplay(gpu, full_path, functools.partial(_record_conv, gpu, call, full_path))
    return BoundCall(lazy.run, call.out, f"{call.kind}_conv of {call.layer}")


def bind_bias(gpu, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
    """A ``BoundCall`` of a checked bias gradient on ``gpu``;
    ``full_path`` runs the call as ``update_bias`` does."""
    lazy = LazyReplay(gpu, full_path,
                      functools.partial(_record_bias, gpu, E, grad_b, O, alpha, beta, full_path))
    return BoundCall(lazy.run, grad_b, f"update_bias of {E.shape[-1]} channels")


def _record_conv(gpu, call, full_path):
    # the route order of convolution.run: small-C kernels before the implicit GEMM
    if call.out.rounding or small_c.plan_of(gpu, call) is not None:
        return None
    recorded = implicit.record(gpu, call)
    if recorded is None:
        return None
    record, padded = recorded  # the record owns its workspace: freed with the bound call
    tensors = tuple(t for t in (call.a, call.b, call.out, call.bias, padded) if t is not None)
    narrow = None if padded is None else functools.partial(implicit.keep_channels, call, padded)
    return Replay(gpu, functools.partial(replay_counted, gpu, record), tensors, call.out,
                  full_path, narrow)


def _record_bias(gpu, E, grad_b, O, alpha, beta, full_path):  # noqa: E741
    plan = bias.plan_of(gpu, E, grad_b, O)
    if plan is None:
        return None
    # the plan's own run: a semaphore block lent per run, as to every call
    tensors = tuple(t for t in (E, grad_b, O) if t is not None)
    launch = functools.partial(plan.run, gpu, E, grad_b, O, alpha, beta)
    return Replay(gpu, launch, tensors, grad_b, full_path)
