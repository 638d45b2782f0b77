"""Lanes: the independent tasks of a sequence spread over streams, ordered by what they share.

In: ``after``, one entry per task of a sequence in the order the tasks are
issued, each the indices of earlier tasks it must follow (whose results it
reads, or whose memory it overwrites), and a number of lanes.  Out:
:func:`schedule`, a :class:`Schedule` putting each task on a lane with the
waits that keep ``after`` -- computed once, followed by every run -- and
:class:`HostLanes`, the CPU factory's runner, whose work finishes in issue
order and so waits for nothing.  :mod:`gpuarray.cuda.lanes` follows a
schedule on CUDA streams: eagerly, independent kernels overlap; inside a
captured step (``ng.capture``) the lanes become parallel branches of the
graph, at no host cost per replay.

A runner is used as::

    lanes.start()                 # the fork point, on the current stream
    try:
        for i, task in enumerate(tasks):
            lanes.enter(i)        # waits, then task i's lane becomes current
            try:
                task()
            finally:
                lanes.leave(i)    # its event (where a later task waits), back to the origin
    finally:
        lanes.finish()            # the origin stream waits for every lane
"""
from dataclasses import dataclass

#: lanes a schedule uses at most by default: the executor's graphs have a
#: handful of independent products at a time (weight and data gradients)
DEFAULT_LANES = 4


@dataclass(frozen=True)
class Schedule:
    """Where each task runs and which events order the lanes.

    Attributes
    ----------
    lane : tuple of int
        Lane of each task; lane 0 is the stream current at ``start()``.
    forks : tuple of bool
        True for the first task of each other lane: it waits for the fork
        point (everything queued on lane 0 before ``start()``).
    waits : tuple of tuple of int
        Per task, the tasks on other lanes whose events it waits for first.
    records : frozenset of int
        Tasks after which an event is recorded (some later wait names them).
    lanes : int
        Lanes in use.
    """

    lane: tuple
    forks: tuple
    waits: tuple
    records: frozenset
    lanes: int


def schedule(after, count=DEFAULT_LANES):
    """Put each task on one of ``count`` lanes, keeping the order ``after`` asks.

    A task continues the lane of its latest dependency where that lane's
    last task is one, so chains need no event; one with no such lane opens
    a new lane while fewer than ``count`` are in use, else joins the lane
    whose last task is the oldest.  Waits are only those no earlier wait
    or stream order already implies (vector clocks).

    Parameters
    ----------
    after : sequence of iterables of int
        ``after[i]``: the earlier tasks task ``i`` must follow.
    count : int
        Lanes at most (1: every task on the current stream, no events).

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        ``count`` below 1, or a task following itself or a later task.
    """
    if int(count) < 1:
        raise ValueError(f"lanes need a count of at least 1, not {count}")
    tails, clocks = [], []      # per lane: its last task; what it is known to follow
    lane, forks, waits, records, done = [], [], [], set(), []
    for i, deps in enumerate(after):
        deps = sorted(set(deps), reverse=True)
        if deps and not 0 <= deps[-1] <= deps[0] < i:
            raise ValueError(f"task {i} must follow earlier tasks only, not {deps}")
        here = _choose_lane(tails, deps, int(count))
        if here == len(tails):
            tails.append(None)
            clocks.append([-1] * int(count))
        forks.append(here > 0 and tails[here] is None)
        clock, waited = clocks[here], []
        for d in deps:
            other = lane[d]
            if other != here and clock[other] < d:
                waited.append(d)
                records.add(d)
                clock[:] = map(max, clock, done[d])
        clock[here] = i
        tails[here] = i
        lane.append(here)
        waits.append(tuple(waited))
        done.append(tuple(clock))
    return Schedule(tuple(lane), tuple(forks), tuple(waits), frozenset(records),
                    max(len(tails), 1))


def _choose_lane(tails, deps, count):
    """The lane task with dependencies ``deps`` (latest first) goes to."""
    for d in deps:
        if d in tails:
            return tails.index(d)
    if not tails:
        return 0
    if len(tails) < count:
        return len(tails)
    return min(range(len(tails)), key=lambda k: tails[k])


def run_tasks(lanes, tasks):
    """Run the callables ``tasks`` in order on ``lanes`` (a runner whose schedule
    has one entry per task); returns their results.  The lanes are joined
    again when this returns or raises."""
    results = []
    lanes.start()
    try:
        for i, task in enumerate(tasks):
            lanes.enter(i)
            try:
                results.append(task())
            finally:
                lanes.leave(i)
    finally:
        lanes.finish()
    return results


def run_independent(tasks, lanes_for, concurrent=None):
    """Run callables none of which reads what another writes; returns their results.

    They go to ``lanes_for(len(tasks))`` -- lanes of that many independent
    tasks, kept by the caller -- where ``concurrent`` asks for lanes (None:
    only while a captured step is recorded, where they become parallel
    branches of the graph at no host cost per replay), else in order on the
    current stream.
    """
    lanes = IN_ORDER
    if len(tasks) > 1 and concurrent is not False:
        lanes = lanes_for(len(tasks))
        if not (concurrent or lanes.capturing):
            lanes = IN_ORDER
    return run_tasks(lanes, tasks)


class HostLanes:
    """The CPU factory's lanes: tasks run in issue order, which every schedule allows."""

    def __init__(self, after, count=DEFAULT_LANES):
        self.schedule = schedule(after, count)

    @property
    def capturing(self):
        """Whether a captured step is being recorded (never, on the host)."""
        return False

    def start(self):
        """The fork point (nothing to mark on the host)."""

    def enter(self, task):
        """Before ``task`` (nothing to wait for on the host)."""

    def leave(self, task):
        """After ``task``."""

    def finish(self):
        """The join point."""


#: runs every task where and when it is issued (what one stream does): the
#: runner of callers that did not ask for lanes
IN_ORDER = HostLanes(())
