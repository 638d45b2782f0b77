"""Lanes on CUDA streams: a schedule's tasks on side streams, ordered by events.

In: a :class:`~gpuarray.core.lanes.Schedule` (from the tasks' dependencies)
and the GPU factory.  Out: :class:`Lanes`, the runner of
:mod:`gpuarray.core.lanes`'s protocol (``start``, ``enter``/``leave`` around
each task, ``finish``).  Lane 0 is the stream current at ``start()``; the
others are streams of their own, made once, which wait for an event
recorded there (the fork) and which that stream waits for at the end (the
join: an event recorded on each lane that ran something), so work before
and after sees one order.

Inside a captured step the same calls build the graph's branches: a stream
waiting on an event recorded on a capturing stream joins its capture, and
the capture may only end once every joined stream has been waited for --
which ``finish()`` does, also when a task raised.  The events are made
without timestamps (recording them costs less) and reused by every run:
a wait orders against the record queued last, which is this run's.
"""
from ..core.lanes import DEFAULT_LANES, schedule
from . import events, stream


class Lanes:
    """Runs the tasks of one schedule on the GPU factory's streams.

    Parameters
    ----------
    gpu : gpuarray.GPU
        The factory; its context must be current.
    after : sequence of iterables of int
        The tasks each task follows (:func:`gpuarray.core.lanes.schedule`).
    count : int
        Lanes at most.
    """

    def __init__(self, gpu, after, count=DEFAULT_LANES):
        self.schedule = schedule(after, count)
        # streams and events are made by the first start(); holding the stream
        # constructor rather than the factory keeps a factory-keyed weak cache
        # of lanes (ad.sgd_update's) from keeping its factory alive
        self._new_stream, self._streams = gpu._drv.Stream, None
        self._origin, self._ran = None, set()

    def _make_streams(self):
        plan = self.schedule
        self._streams = [None] + [self._new_stream() for _ in range(plan.lanes - 1)]
        self._events = {task: events.EventHandle(timing=False) for task in plan.records}
        self._fork = events.EventHandle(timing=False) if plan.lanes > 1 else None
        self._joins = [events.EventHandle(timing=False) for _ in self._streams[1:]]

    @property
    def capturing(self):
        """Whether this thread is recording a captured step (the lanes then cost no replay time)."""
        return stream.capturing() is not None

    def start(self):
        """Mark the fork point on the current stream, which becomes lane 0."""
        if self._streams is None:
            self._make_streams()
        self._origin, self._ran = stream.current(), set()
        if self._fork is not None:
            self._fork.record(_handle(self._origin))

    def enter(self, task):
        """Wait for what ``task`` follows on other lanes, then make its lane current."""
        plan = self.schedule
        lane = plan.lane[task]
        target = self._origin if lane == 0 else self._streams[lane]
        handle = _handle(target)
        self._ran.add(lane)
        if plan.forks[task]:
            events.wait(handle, self._fork)
        for before in plan.waits[task]:
            events.wait(handle, self._events[before])
        stream.swap(target)

    def leave(self, task):
        """Record ``task``'s event where a later wait names it; back to lane 0."""
        event = self._events.get(task)
        if event is not None:
            event.record(_handle(stream.current()))
        stream.swap(self._origin)

    def finish(self):
        """Make lane 0 wait for everything queued on the other lanes this run
        (also after a task raised: a capture cannot end with a lane unjoined)."""
        stream.swap(self._origin)
        handle = _handle(self._origin)
        for lane in sorted(self._ran - {0}):
            join = self._joins[lane - 1]
            join.record(self._streams[lane].handle)
            events.wait(handle, join)
        self._ran = set()


def _handle(pycuda_stream):
    """``CUstream`` of a pycuda stream (None: the legacy default stream)."""
    return None if pycuda_stream is None else pycuda_stream.handle
