"""Streams, events and asynchronous copies: the factory interface, and its host form.

In: ``ng.Stream()``, ``ng.Event()``, ``with ng.stream(s):``,
``ng.current_stream()``, ``ng.pinned_empty(shape, dtype)`` and a tensor's
``set_async(host)`` / ``get_async()``.  Out: for the CPU factory, where
every operation has finished when its call returns, a stream is an order
that always holds, an event notes the host clock when it is recorded, and
the asynchronous copies are plain copies.  The argument checks live here
once; :mod:`gpuarray.cuda.streams` gives the GPU factory the same methods
over CUDA streams, events and page-locked memory.
"""
import contextlib
import threading
import time

import numpy as np

from . import dtypes, shapes
from .lanes import DEFAULT_LANES, HostLanes


class HostStream:
    """A stream of the CPU factory: its work is done when each call returns."""

    def __init__(self, backend):
        self.backend = backend

    def synchronize(self):
        """Wait until the work queued on this stream has finished."""

    def query(self):
        """True when the work queued on this stream has finished."""
        return True

    def wait(self, event):
        """Make later work on this stream wait for ``event``'s recorded point."""
        self.backend._check_event(event)

    def record(self, event=None):
        """Record ``event`` (a new one when None) here; returns it."""
        event = self.backend.Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self):
        return f"<{type(self).__name__} of {self.backend!r}>"


class HostEvent:
    """An event of the CPU factory: the host clock when it was recorded."""

    def __init__(self, backend, timing=True):
        self.backend, self.timing = backend, bool(timing)
        self._time = None

    @property
    def recorded(self):
        """True once :meth:`record` was called."""
        return self._time is not None

    def record(self, stream=None):
        """Mark the current point of ``stream`` (default: the current stream); returns self."""
        self.backend._check_stream(stream)
        self._time = time.perf_counter()
        return self

    def query(self):
        """True when the work before the recorded point has finished."""
        return True

    def synchronize(self):
        """Wait until the work before the recorded point has finished."""

    def elapsed(self, end):
        """Milliseconds from this event's point to ``end``'s.

        Raises
        ------
        ValueError
            If either event was created with ``timing=False``.
        RuntimeError
            If either event was never recorded.
        """
        check_elapsed(self, end)
        return (end._time - self._time) * 1e3


def check_elapsed(start, end):
    """Raise unless both events keep timestamps and were recorded."""
    start.backend._check_event(end)
    if not (start.timing and end.timing):
        raise ValueError("elapsed() needs events created with timing=True")
    if not (start.recorded and end.recorded):
        raise RuntimeError("elapsed() needs both events recorded first")


class _Current(threading.local):
    """This thread's current stream of a CPU factory (None: the default)."""

    stream = None


class StreamFunctions:
    """``Stream``, ``Event``, ``stream()``, ``pinned_empty`` and the checks of
    the asynchronous copies, for host factories (the GPU overrides them)."""

    stream_class = HostStream
    event_class = HostEvent

    def Stream(self):  # noqa: N802 - a class-like factory method, as torch.cuda.Stream
        """A new stream: work queued on different streams may overlap."""
        return self.stream_class(self)

    def Event(self, timing=True):  # noqa: N802
        """A new event.

        Parameters
        ----------
        timing : bool
            Keep a timestamp so that :meth:`elapsed` works.
        """
        return self.event_class(self, timing)

    @contextlib.contextmanager
    def stream(self, s):
        """Send the kernels, copies and allocations inside the block to stream ``s``.

        Parameters
        ----------
        s : Stream or None
            A stream of this factory; None is the default stream.
        """
        self._check_stream(s)
        with self._using_stream(s):
            yield s

    def current_stream(self):
        """The stream this thread's work goes to (None: the default stream)."""
        return self._current_streams().stream

    def pinned_empty(self, shape, dtype=np.float64):
        """An uninitialised host array that asynchronous copies can read and write
        without staging (page-locked memory on the GPU factory)."""
        shape, dtype = shapes.as_shape(shape), dtypes.as_dtype(dtype)
        return np.empty(shape, dtype)

    def _lanes(self, after, count=DEFAULT_LANES):
        """A runner spreading tasks that follow ``after`` over streams
        (:mod:`gpuarray.core.lanes`); on the host, one order."""
        return HostLanes(after, count)

    def _set_async(self, tensor, host, stream):
        host = self._check_async_host(tensor, host)
        self._check_stream(stream)
        tensor[...] = self.array(host, tensor.dtype)

    def _get_async(self, tensor, stream, out):
        self._check_stream(stream)
        out = self._check_async_out(tensor, out)
        out[...] = self.to_host(tensor)
        return out

    # -- checks shared with the GPU factory ------------------------------
    def _check_stream(self, s):
        if s is not None and not (isinstance(s, self.stream_class) and s.backend is self):
            raise ValueError(f"expected a Stream of {self!r} or None, not {s!r}")

    def _check_event(self, event):
        if not (isinstance(event, self.event_class) and event.backend is self):
            raise ValueError(f"expected an Event of {self!r}, not {event!r}")

    @staticmethod
    def _check_async_host(tensor, host):
        """The host array ``set_async`` copies from, after checking it."""
        if not isinstance(host, np.ndarray):
            raise TypeError(f"set_async needs a numpy array, not {type(host).__name__}")
        if host.shape != tensor.shape:
            raise ValueError(f"set_async: host array of shape {shapes.shape_str(host.shape)} "
                             f"does not match the tensor's shape "
                             f"{shapes.shape_str(tensor.shape)}")
        if not host.flags.c_contiguous:
            raise ValueError("set_async needs a C-contiguous host array "
                             "(np.ascontiguousarray makes one)")
        if not dtypes.can_cast_same_kind(host.dtype, tensor.dtype):
            raise TypeError(f"Cannot cast array data from {host.dtype!r} to "
                            f"{tensor.dtype!r} according to the rule 'same_kind'")
        return host

    def _check_async_out(self, tensor, out):
        """The host array ``get_async`` copies into (a new pinned one when None)."""
        if out is None:
            return self.pinned_empty(tensor.shape, tensor.dtype)
        if not isinstance(out, np.ndarray):
            raise TypeError(f"get_async: out must be a numpy array, not {type(out).__name__}")
        if out.shape != tensor.shape or out.dtype != tensor.dtype:
            raise ValueError(f"get_async: out has shape {shapes.shape_str(out.shape)} and "
                             f"dtype {out.dtype}; the tensor has "
                             f"{shapes.shape_str(tensor.shape)} and {tensor.dtype}")
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("get_async: out must be a writeable C-contiguous array")
        return out

    # -- the current stream (the GPU keeps it in gpuarray.cuda.stream) ----
    def _current_streams(self):
        local = self.__dict__.get("_streams_local")
        if local is None:
            local = self.__dict__.setdefault("_streams_local", _Current())
        return local

    @contextlib.contextmanager
    def _using_stream(self, s):
        local = self._current_streams()
        saved, local.stream = local.stream, s
        try:
            yield
        finally:
            local.stream = saved
