"""CUDA streams and events for users, and the copies that run on them.

In: ``ng.Stream()``, ``ng.Event()``, ``with ng.stream(s):`` and the
asynchronous copies of the GPU factory.  Out: :class:`Stream` (a pycuda
stream: every launch site reads it through :mod:`gpuarray.cuda.stream`),
:class:`Event` (a ``CUevent``, :mod:`gpuarray.cuda.events`) and
:class:`GPUStreamFunctions`, the factory methods over them; the argument
checks are the interface's (:mod:`gpuarray.core.streams`).

User streams are *blocking* streams: the driver orders them with the
legacy default stream, where everything outside ``with ng.stream(s):``
runs, so code that never names a stream sees one order.  Two user
streams run concurrently until an event orders them (``s2.wait(e)``).
"""
import contextlib

import numpy as np

from ..core import dtypes, shapes
from ..core.lanes import DEFAULT_LANES
from ..core.streams import StreamFunctions, check_elapsed
from . import events, lanes, pinned, stream


class Stream:
    """A CUDA stream of one GPU factory; make them with ``ng.Stream()``."""

    def __init__(self, backend):
        backend._ready()
        self.backend = backend
        self.pycuda = backend._drv.Stream()

    @property
    def handle(self):
        """The ``CUstream`` as an integer (for other libraries)."""
        return self.pycuda.handle

    def synchronize(self):
        """Block until the work queued on this stream has finished."""
        stream.refuse_in_capture("Stream.synchronize()")
        self.backend._ready()
        self.pycuda.synchronize()

    def query(self):
        """True when the work queued on this stream has finished."""
        self.backend._ready()
        return self.pycuda.is_done()

    def wait(self, event):
        """Make later work on this stream wait, on the device, for ``event``."""
        self.backend._check_event(event)
        if not event.recorded:
            raise RuntimeError("Stream.wait() needs a recorded event (event.record() first)")
        self.backend._ready()
        events.wait(self.handle, event.handle)

    def record(self, event=None):
        """Record ``event`` (a new one when None) on this stream; returns it."""
        event = self.backend.Event() if event is None else event
        return event.record(self)

    def __repr__(self):
        return f"<gpuarray Stream 0x{self.handle:x} of {self.backend!r}>"


class Event:
    """A point in a stream's work; make them with ``ng.Event(timing=True)``."""

    def __init__(self, backend, timing=True):
        backend._ready()
        self.backend, self.timing = backend, bool(timing)
        self.handle = events.EventHandle(self.timing)
        self.recorded = False

    def record(self, stream_=None):
        """Mark the point after the work queued so far on ``stream_``
        (default: the current stream); returns self."""
        self.backend._check_stream(stream_)
        stream.refuse_in_capture("recording an event")
        self.backend._ready()
        self.handle.record(stream.current_handle() if stream_ is None else stream_.handle)
        self.recorded = True
        return self

    def query(self):
        """True when the work before the recorded point has finished."""
        self.backend._ready()
        return self.handle.query()

    def synchronize(self):
        """Block until the work before the recorded point has finished."""
        stream.refuse_in_capture("Event.synchronize()")
        self.backend._ready()
        self.handle.synchronize()

    def elapsed(self, end):
        """Milliseconds of device time from this event's point to ``end``'s
        (waits for ``end``).

        Raises
        ------
        ValueError
            If either event was created with ``timing=False``.
        RuntimeError
            If either event was never recorded.
        """
        check_elapsed(self, end)
        end.synchronize()
        return self.handle.elapsed(end.handle)

    def __repr__(self):
        state = "recorded" if self.recorded else "not recorded"
        return f"<gpuarray Event ({state}) of {self.backend!r}>"


class GPUStreamFunctions(StreamFunctions):
    """The stream methods of :class:`gpuarray.GPU`."""

    stream_class = Stream
    event_class = Event

    def current_stream(self):
        return stream.current_public()

    def _ready(self):
        """Make the factory's context current on this thread (raises if it cannot be)."""
        if not self._attached.ready:
            self._attach()

    def _using_stream(self, s):
        return stream.using(None if s is None else s.pycuda, s)

    def _lanes(self, after, count=DEFAULT_LANES):
        return lanes.Lanes(self, after, count)

    def _queue_on(self, stream_):
        """Send the block's work to ``stream_``; None keeps the current stream
        (where ``_using_stream(None)`` means the default one)."""
        return contextlib.nullcontext() if stream_ is None else self._using_stream(stream_)

    def pinned_empty(self, shape, dtype=np.float64):
        """An uninitialised page-locked host array: asynchronous copies from and
        to it run without staging, while the host goes on."""
        shape, dtype = shapes.as_shape(shape), dtypes.as_dtype(dtype)
        nbytes = shapes.nbytes_of(shape, dtype.itemsize)
        self._ready()
        # allocated as bytes: pycuda's allocator knows numpy's own dtypes only
        block = self._drv.pagelocked_empty(max(nbytes, 1), np.uint8)
        return block[:nbytes].view(dtype).reshape(shape)

    def _staging(self):
        pool = self.__dict__.get("_staging_pool")
        if pool is None:
            pool = self._staging_pool = pinned.StagingPool(
                lambda nbytes: self._drv.pagelocked_empty(nbytes, np.uint8))
        return pool

    def _set_async(self, tensor, host, stream_):
        host = self._check_async_host(tensor, host)
        self._check_stream(stream_)
        stream.refuse_in_capture("copying host data to the device (set_async)")
        tensor.ptr  # noqa: B018 - a freed buffer raises before any work is queued
        self._ready()
        with self._queue_on(stream_):
            target = tensor if tensor.is_contiguous else self.empty(tensor.shape, tensor.dtype)
            self._upload_async(target, host)
            if target is not tensor:
                tensor[...] = target
        return tensor

    def _upload_async(self, target, host):
        if host.size == 0:
            return
        queue = stream.current()
        if host.dtype == target.dtype and pinned.is_page_locked(host):
            self._drv.memcpy_htod_async(target.ptr, pinned.as_bytes(host), queue)
            return
        block = self._staging().lend(target.nbytes)
        staged = block[:target.nbytes].view(target.dtype).reshape(target.shape)
        np.copyto(staged, host, casting="same_kind")
        self._drv.memcpy_htod_async(target.ptr, block[:target.nbytes], queue)
        done = events.EventHandle(timing=False)
        done.record(stream.current_handle())
        self._staging().give_back_after(block, done)

    def _order_consumer(self, consumer):
        """DLPack export to a consumer queueing on stream handle ``consumer``:
        make it wait, on the device, for the work queued here so far."""
        if consumer in (None, -1):
            return  # the consumer asked for no ordering
        ours = stream.current_handle()
        if consumer in (0, 1) or (ours is None and consumer == 2):
            return  # one stream, or the legacy stream, which waits for blocking streams
        self._ready()
        events.order_after(consumer, [ours])

    def _get_async(self, tensor, stream_, out):
        self._check_stream(stream_)
        stream.refuse_in_capture("copying a tensor to the host (get_async)")
        tensor.ptr  # noqa: B018 - a freed buffer raises before any work is queued
        out = self._check_async_out(tensor, out)
        if tensor.size == 0:
            return out
        self._ready()
        with self._queue_on(stream_):
            source = tensor if tensor.is_contiguous else self.evaluate(tensor)
            self._drv.memcpy_dtoh_async(pinned.as_bytes(out), source.ptr, stream.current())
        return out
