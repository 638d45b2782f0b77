"""CUDA events and cross-stream waits through the driver API.

In: stream handles (``CUstream`` integers; None or 0 is the legacy default
stream, as are DLPack's 1).  Out: :class:`EventHandle`, a ``CUevent`` that
records a point in a stream's work, reports or waits for its completion
and times the span between two of them, and :func:`wait`, which makes one
stream wait on the device -- not on the host -- for a recorded event.

These go through ctypes (like :mod:`gpuarray.cuda.driver`): the memory
pool and DLPack export order streams by raw handle, which pycuda's
``Event`` and ``Stream`` objects cannot wrap.
"""
import ctypes

from .driver import _check, libcuda

#: CU_EVENT_DISABLE_TIMING: recording and waiting cost less without a timestamp
_DISABLE_TIMING = 2
#: CUDA_ERROR_NOT_READY: cuEventQuery's "not yet"
_NOT_READY = 600


def _stream(handle):
    """A handle as the driver takes it; DLPack's 1 (legacy stream) becomes NULL."""
    return ctypes.c_void_p(None if handle in (None, 0, 1) else handle)


class EventHandle:
    """One ``CUevent`` of the current context, destroyed with the object.

    Parameters
    ----------
    timing : bool
        Keep a timestamp, so that :meth:`elapsed` works (costs a little on
        every record).
    """

    def __init__(self, timing=True):
        self.timing = bool(timing)
        self._lib = libcuda()
        self.handle = ctypes.c_void_p()
        _check(self._lib.cuEventCreate(ctypes.byref(self.handle),
                                       0 if timing else _DISABLE_TIMING), "cuEventCreate")

    def record(self, stream_handle):
        """Mark the point after everything queued so far on ``stream_handle``."""
        _check(self._lib.cuEventRecord(self.handle, _stream(stream_handle)), "cuEventRecord")

    def query(self):
        """True when the work before the recorded point has finished."""
        result = self._lib.cuEventQuery(self.handle)
        if result == _NOT_READY:
            return False
        _check(result, "cuEventQuery")
        return True

    def synchronize(self):
        """Block the calling thread until the recorded point is reached."""
        _check(self._lib.cuEventSynchronize(self.handle), "cuEventSynchronize")

    def elapsed(self, end):
        """Milliseconds from this event to ``end`` (both recorded and reached)."""
        ms = ctypes.c_float()
        _check(self._lib.cuEventElapsedTime(ctypes.byref(ms), self.handle, end.handle),
               "cuEventElapsedTime")
        return ms.value

    def __del__(self):
        # an event still pending is released by the driver once it completes
        try:
            if self.handle.value:
                self._lib.cuEventDestroy_v2(self.handle)
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass


def wait(stream_handle, event):
    """Make later work on ``stream_handle`` wait (on the device) for ``event``."""
    _check(libcuda().cuStreamWaitEvent(_stream(stream_handle), event.handle, 0),
           "cuStreamWaitEvent")


def order_after(waiter_handle, producer_handles):
    """Make ``waiter_handle``'s later work wait for all work queued so far on
    each of ``producer_handles``."""
    for producer in producer_handles:
        event = EventHandle(timing=False)
        event.record(producer)
        wait(waiter_handle, event)
