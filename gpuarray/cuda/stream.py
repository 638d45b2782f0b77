"""The stream this thread's device work goes to, and whether it is being captured.

In: :func:`using` entered by ``with ng.stream(s):`` (:mod:`gpuarray.cuda.streams`)
and :func:`capturing_on` entered by :mod:`gpuarray.cuda.capture` around the
recording of a step; both restore the previous stream on exit
(:func:`swap` switches without a block, for :mod:`gpuarray.cuda.lanes`).  Out:
:func:`current` (a pycuda ``Stream`` or None, the legacy default stream)
and its ``CUstream``, which every launch site passes to the driver --
:func:`launch_handle` (0 for the default stream) for kernels,
:func:`current_handle` (None for it) for memsets and libraries -- and
:func:`capturing`, which the operations that cannot be captured (host
reads and writes, synchronisation) check to raise clearly;
:func:`note_random` / :func:`take_random` tell the capture that the step
drew random numbers.  All of it is one :class:`LaunchState` per thread
(:func:`launch_state`): a cached assignment reads the stream and the capture
with one thread-local lookup.

Thread-local: one thread may record a step while others launch as usual.
"""
import contextlib
import threading


class LaunchState:
    """One thread's launch state, read by every launch site.

    Attributes
    ----------
    stream : pycuda Stream or None
        Where launches, copies and allocations go (None: the legacy default stream).
    public : Stream or None
        The user's object for ``stream``.
    handle : int
        ``stream``'s ``CUstream`` as the launch entry takes it (0 for the
        default stream), kept beside it: pycuda reads it through a property.
    capture : str or None
        What this thread is capturing (a description), or None.
    tracer : object or None
        The recording's note-taker of the step's floats (their stand-ins,
        :mod:`gpuarray.core.step_numbers`) while a step records, else None:
        the dispatcher tells it which kernel arguments they fill.
    random : bool
        Whether the step being captured drew random numbers.
    """

    __slots__ = ("stream", "public", "handle", "capture", "tracer", "random")

    def __init__(self):
        self.stream = self.public = self.capture = self.tracer = None
        self.handle, self.random = 0, False

    def point(self, stream, public):
        """Send launches to the pycuda ``stream`` (None: the default stream)."""
        handle = 0 if stream is None else stream.handle  # first: may raise
        self.stream, self.public, self.handle = stream, public, handle


class _Local(threading.local):
    """Per thread: its :class:`LaunchState`, one thread-local read away (a
    replay asks for the stream and the capture at once)."""

    def __init__(self):
        self.state = LaunchState()


_local = _Local()


def launch_state():
    """This thread's :class:`LaunchState`."""
    return _local.state


def current():
    """The pycuda stream launches go to on this thread (None: the default stream)."""
    return _local.state.stream


def current_public():
    """The user's ``Stream`` object launches go to (None: the default stream)."""
    return _local.state.public


def current_handle():
    """``CUstream`` of :func:`current` (None: the default stream)."""
    handle = _local.state.handle
    return None if handle == 0 else handle


def launch_handle():
    """``CUstream`` of :func:`current` as an int, 0 for the default stream
    (the form :mod:`gpuarray.cuda.launch_entry` takes)."""
    return _local.state.handle


def capturing():
    """What this thread is capturing (a description), or None."""
    return _local.state.capture


@contextlib.contextmanager
def using(stream, public):
    """Send this thread's launches, copies and allocations to the pycuda
    ``stream`` (None: the default stream) whose user object is ``public``."""
    current = _local.state
    if current.capture is not None:
        raise RuntimeError(f"cannot switch streams inside a captured step ({current.capture}): "
                           "the graph records the work of its capture stream only")
    saved = current.stream, current.public
    current.point(stream, public)
    try:
        yield
    finally:
        current.point(*saved)


@contextlib.contextmanager
def capturing_on(stream, what, tracer=None):
    """Send this thread's launches to ``stream`` while ``what`` is captured
    (``tracer``: the recording's note-taker, see :class:`LaunchState`)."""
    current = _local.state
    if current.capture is not None:
        raise RuntimeError(f"cannot capture {what} inside the capture of {current.capture}")
    saved = current.stream, current.public
    current.point(stream, current.public)
    current.capture, current.tracer = what, tracer
    try:
        yield
    finally:
        current.point(*saved)
        current.capture = current.tracer = None


def swap(stream):
    """Make the pycuda ``stream`` current for this thread's launches, a capture
    under way included; returns the stream it replaces.  For
    :mod:`gpuarray.cuda.lanes`, whose side streams have joined the capture
    (they waited for an event recorded on it) before any work reaches them."""
    current = _local.state
    previous = current.stream
    current.point(stream, current.public)
    return previous


def note_random():
    """The step being captured draws random numbers: its graph must advance
    the replay counter (see :mod:`gpuarray.cuda.capture`)."""
    _local.state.random = True


def take_random():
    """Whether :func:`note_random` was called since the last call; resets it."""
    current = _local.state
    drew, current.random = current.random, False
    return drew


def refuse_in_capture(operation):
    """Raise when this thread is capturing: ``operation`` cannot become part of a graph."""
    what = capturing()
    if what is not None:
        raise RuntimeError(
            f"{operation} inside a captured step ({what}): a CUDA graph replays device "
            "work only, so host reads, host writes and synchronisation cannot be captured; "
            "do them outside the step, and pass the data in tensors")
