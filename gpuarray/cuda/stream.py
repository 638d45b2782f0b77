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
drew random numbers.

Thread-local: one thread may record a step while others launch as usual.
"""
import contextlib
import threading


class _State(threading.local):
    """Per-thread state; class attributes are every new thread's defaults, so
    reading them needs no ``getattr`` fallback (launches read them per call)."""

    stream = None
    public = None
    capture = None
    random = False


_local = _State()


def current():
    """The pycuda stream launches go to on this thread (None: the default stream)."""
    return _local.stream


def current_public():
    """The user's ``Stream`` object launches go to (None: the default stream)."""
    return _local.public


def current_handle():
    """``CUstream`` of :func:`current` (None: the default stream)."""
    stream = _local.stream
    return None if stream is None else stream.handle


def launch_handle():
    """``CUstream`` of :func:`current` as an int, 0 for the default stream
    (the form :mod:`gpuarray.cuda.launch_entry` takes)."""
    stream = _local.stream
    return 0 if stream is None else stream.handle


def capturing():
    """What this thread is capturing (a description), or None."""
    return _local.capture


@contextlib.contextmanager
def using(stream, public):
    """Send this thread's launches, copies and allocations to the pycuda
    ``stream`` (None: the default stream) whose user object is ``public``."""
    if capturing() is not None:
        raise RuntimeError(f"cannot switch streams inside a captured step ({capturing()}): "
                           "the graph records the work of its capture stream only")
    saved = _local.stream, _local.public
    _local.stream, _local.public = stream, public
    try:
        yield
    finally:
        _local.stream, _local.public = saved


@contextlib.contextmanager
def capturing_on(stream, what):
    """Send this thread's launches to ``stream`` while ``what`` is captured."""
    if capturing() is not None:
        raise RuntimeError(f"cannot capture {what} inside the capture of {capturing()}")
    saved = _local.stream, _local.public
    _local.stream, _local.capture = stream, what
    try:
        yield
    finally:
        (_local.stream, _local.public), _local.capture = saved, None


def swap(stream):
    """Make the pycuda ``stream`` current for this thread's launches, a capture
    under way included; returns the stream it replaces.  For
    :mod:`gpuarray.cuda.lanes`, whose side streams have joined the capture
    (they waited for an event recorded on it) before any work reaches them."""
    previous, _local.stream = _local.stream, stream
    return previous


def note_random():
    """The step being captured draws random numbers: its graph must advance
    the replay counter (see :mod:`gpuarray.cuda.capture`)."""
    _local.random = True


def take_random():
    """Whether :func:`note_random` was called since the last call; resets it."""
    drew, _local.random = _local.random, False
    return drew


def refuse_in_capture(operation):
    """Raise when this thread is capturing: ``operation`` cannot become part of a graph."""
    what = capturing()
    if what is not None:
        raise RuntimeError(
            f"{operation} inside a captured step ({what}): a CUDA graph replays device "
            "work only, so host reads, host writes and synchronisation cannot be captured; "
            "do them outside the step, and pass the data in tensors")
