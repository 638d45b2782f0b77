"""Runs of bound calls on the GPU: the call's checks that must repeat, then its recorded launches.

In: the GPU factory, a callable queuing a bound call's recorded launches
(a :class:`~gpuarray.gemm.replay.GemmLaunch`'s replay, a plan's patched
launch), the tensors the launches use, the tensor the call writes and the
call's full path.  Out: :class:`LazyReplay`, whose :meth:`LazyReplay.run`
is the run of a :class:`~gpuarray.core.bound.BoundCall`
(:mod:`gpuarray.conv.bound`, :mod:`gpuarray.gemm.bound`): the first run
outside a captured step takes the full path (planning the call as any call
does) and then records its launches -- a :class:`Replay` -- which every
later run queues.

A run takes the full path -- the call as an eager call makes it --
inside a captured step (the step's graph then holds what an eager call
would queue, temporaries of its own included, and nothing shares the
recorded workspace with it) and when the output's stochastic rounding
was switched on after binding (the recorded launch rounds to nearest).
"""
from . import stream


class LazyReplay:
    """A bound call's runs: the full path until a run records the launches.

    Parameters
    ----------
    gpu : gpuarray.GPU
    full_path : callable
        Runs the call as an eager call does.
    record : callable
        Returns the call's :class:`Replay`, or None where its launches cannot
        be recorded (every run then takes the full path); called once, after
        the first full-path run outside a captured step, so that the call's
        plan is there to record.
    """

    __slots__ = ("gpu", "full_path", "record", "replay")

    def __init__(self, gpu, full_path, record):
        self.gpu, self.full_path, self.record, self.replay = gpu, full_path, record, None

    def run(self):
        """Queue the call's work on the current stream."""
        if self.replay is not None:
            self.replay.run()
            return
        self.full_path()
        if self.record is not None and stream.capturing() is None:
            record, self.record = self.record, None
            self.replay = self.gpu._run_bound(record)


class Replay:
    """Queues recorded launches again after checking the call's tensors.

    Parameters
    ----------
    gpu : gpuarray.GPU
    launch : callable
        Queues the launches (no arguments).
    tensors : tuple of Tensor
        Every tensor the launches read or write: each run checks that none
        was freed, and holds them.
    out : Tensor
        What the call writes.
    full_path : callable
        Runs the call as an eager call does.
    then : callable, optional
        Runs after the launches (a padded filter gradient's narrowing).
    """

    __slots__ = ("gpu", "launch", "tensors", "out", "full_path", "then")

    def __init__(self, gpu, launch, tensors, out, full_path, then=None):
        self.gpu, self.launch, self.tensors, self.out = gpu, launch, tensors, out
        self.full_path, self.then = full_path, then

    def run(self):
        """Queue the call's work on the current stream."""
        if self.out.rounding or stream.capturing() is not None:
            self.full_path()
            return
        for t in self.tensors:
            t.ptr  # noqa: B018 - a freed buffer raises here, before any work is queued
        self.gpu._run_bound(self.launch)
        if self.then is not None:
            self.then()
