"""Page-locked host memory: the staging pool of asynchronous uploads, the block
small downloads bounce through, and the test that tells whether a host
array is already page-locked.

In: byte counts, and the event after which a lent staging block is free
again.  Out: page-locked ``uint8`` arrays, and small downloads as new numpy
arrays.  The copy engine reads
page-locked memory directly while the host goes on; from pageable memory
the driver copies through its own staging first, and the call waits for
that.  ``cuMemHostAlloc`` costs far more than a copy of a few kilobytes, so
blocks are kept per rounded size (the device pool's bins) and lent again
once the copy that read them has finished.
"""
import ctypes
import threading

import numpy as np

from .driver import libcuda
from .mempool import round_size

#: CU_POINTER_ATTRIBUTE_MEMORY_TYPE, and its answer for page-locked host memory
_MEMORY_TYPE = 2
_MEMORYTYPE_HOST = 1


def is_page_locked(array):
    """True when ``array``'s memory is page-locked host memory the driver knows."""
    if array.nbytes == 0:
        return False
    kind = ctypes.c_uint()
    result = libcuda().cuPointerGetAttribute(ctypes.byref(kind), _MEMORY_TYPE,
                                             ctypes.c_void_p(array.ctypes.data))
    # pageable memory is unknown to the driver: the call fails
    return result == 0 and kind.value == _MEMORYTYPE_HOST


class StagingPool:
    """Page-locked blocks for staging asynchronous uploads, reused per rounded size.

    Parameters
    ----------
    allocate : callable
        ``allocate(nbytes)`` returning a page-locked ``uint8`` array
        (``pycuda.driver.pagelocked_empty``).
    max_cached : int
        Bytes of idle blocks kept; beyond that, blocks coming back are freed.
    """

    def __init__(self, allocate, max_cached=256 << 20):
        self._allocate, self.max_cached = allocate, max_cached
        self._idle = {}  # capacity -> [block]
        self._busy = []  # (event, block): lent to a copy that may still run
        self._cached = 0
        self._lock = threading.Lock()

    def lend(self, nbytes):
        """A page-locked block of at least ``nbytes`` bytes."""
        capacity = round_size(max(nbytes, 1))
        with self._lock:
            self._collect()
            blocks = self._idle.get(capacity)
            if blocks:
                self._cached -= capacity
                return blocks.pop()
        return self._allocate(capacity)

    def give_back_after(self, block, event):
        """Lend ``block`` again once ``event`` (recorded after its copy) has completed."""
        with self._lock:
            self._busy.append((event, block))

    def _collect(self):
        still_busy = []
        for event, block in self._busy:
            if not event.query():
                still_busy.append((event, block))
            elif self._cached + block.nbytes <= self.max_cached:
                self._idle.setdefault(block.nbytes, []).append(block)
                self._cached += block.nbytes
        self._busy = still_busy

    def stats(self):
        """Bytes of idle blocks and the number of blocks still in flight."""
        with self._lock:
            self._collect()
            return {"pinned_bytes_cached": self._cached, "pinned_blocks_busy": len(self._busy)}


#: downloads of at most this many bytes bounce through one page-locked block
BOUNCE_BYTES = 64 << 10


class Bounce:
    """The page-locked block that small downloads (``float(t)``, ``t.get()`` of
    a few values) go through, made on first use and lent to one call at a time.

    Why: into pageable memory the driver can only start the copy once the
    host has asked for it after the kernels finished, and then waits for
    its own staged copy -- two waits.  Into page-locked memory the copy is
    queued behind the kernels before the host waits, so the host wakes
    once, with the values there (an H100's timeline of ``float(ng.sum(...))``:
    the copy began 11.6 us after the last kernel ended, now 3.8).

    Parameters
    ----------
    allocate : callable
        ``allocate(nbytes)`` returning a page-locked ``uint8`` array.
    """

    def __init__(self, allocate):
        self._allocate = allocate
        self._block = None
        self._address = 0
        self._lock = threading.Lock()

    def download(self, shape, dtype, nbytes, copy, wait):
        """A new numpy array of ``shape`` and ``dtype`` (``nbytes`` <=
        :data:`BOUNCE_BYTES`): ``copy(address)`` queues the device-to-host
        copy into the page-locked block at host ``address``, ``wait()``
        waits until it is done."""
        with self._lock:
            if self._block is None:
                self._block = self._allocate(BOUNCE_BYTES)
                self._address = self._block.ctypes.data
            copy(self._address)
            wait()
            return self._block[:nbytes].view(dtype).reshape(shape).copy()


def as_bytes(array):
    """A C-contiguous array's memory as a flat ``uint8`` view."""
    return array.reshape(-1).view(np.uint8)
