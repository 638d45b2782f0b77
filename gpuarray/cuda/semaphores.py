"""Semaphore memory: device blocks whose first bytes read zero whenever nobody
holds them.

In: byte counts.  Out: :class:`PooledBuffer` blocks from a
:class:`SemaphorePool`: the first :data:`COUNTER_BYTES` of a lent block are
zero, the rest is scratch.

Why a pool of its own: a kernel whose last block to finish does the final
work (``gpuarray.fusion``'s one-kernel reductions) counts finished blocks
in a device word, which must read zero when the kernel starts.  Zeroing it
on every call would cost a launch; instead a block's counters are zeroed
once, when the pool takes it from the driver, and every kernel that
borrows the block leaves them zero again (the last block resets its
counter).  The bytes after them are scratch the same call may use (the
kernels' partial results), so one allocation serves both; they never reach
the counters of the next borrower.  Blocks never mix with the main pool,
whose blocks hold arbitrary data.  Lending is the main pool's: cached per
size, and stream-aware, so a counter still in use on one stream is not
lent to a kernel on another.
"""
from . import stream as _stream
from .mempool import DeviceMemoryPool, _default_alloc

#: bytes of counters at the start of every block (64 4-byte counters)
COUNTER_BYTES = 256


class SemaphorePool(DeviceMemoryPool):
    """A :class:`DeviceMemoryPool` whose new blocks' counters are zeroed on the current stream.

    Parameters
    ----------
    alloc : callable, optional
        As :class:`DeviceMemoryPool`'s (default ``pycuda.driver.mem_alloc``).
    zero : callable, optional
        ``zero(ptr, nbytes, stream)``: queue the zeroing of a new block's
        counters on the pycuda ``stream`` (None: the default stream).  Default:
        ``pycuda.driver.memset_d8_async``.  Inside a capture that is a node
        of the graph, so each replay starts from zero as well.
    """

    def __init__(self, alloc=None, zero=None):
        self._zero = _default_zero if zero is None else zero
        super().__init__(alloc=self._zeroed(alloc))

    def _zeroed(self, alloc):
        def allocate(nbytes):
            raw = (_default_alloc if alloc is None else alloc)(nbytes)
            self._zero(int(raw), min(nbytes, COUNTER_BYTES), _stream.current())
            return raw
        return allocate


def _default_zero(ptr, nbytes, stream):
    import pycuda.driver

    pycuda.driver.memset_d8_async(ptr, 0, nbytes, stream)
