"""The caching device-memory pool: where every tensor and temporary gets its bytes.

In: a byte count.  Out: a :class:`PooledBuffer` whose ``int()`` is a device
pointer.  Freed buffers (explicitly, or when garbage-collected) go back to a
per-size cache instead of to the driver, so a program that allocates the same
temporaries on every step calls ``cuMemAlloc`` only on the first one.

Sizes are rounded into bins so that near-equal requests share blocks: small
requests round up to 512-byte granules, large ones to one eighth of the power
of two at or below them (at most 12.5% waste).  On out-of-memory the pool
collects garbage, releases its whole cache to the driver and retries once,
then raises ``MemoryError`` naming the request and the pool's state.

Streams: a buffer remembers the stream it was allocated on and the stream
current when it was freed -- the streams whose queued work may still use
it.  A block is handed to a request on another user stream only after
that stream was made to wait (an event, on the device) for those streams'
work.  The default (legacy) stream needs no event either way: user streams
are blocking streams, which the driver orders with it.

pycuda is imported only when the default allocator is first used, so this
module imports (and is testable) on machines without CUDA.
"""
import collections
import gc
import operator
import threading

from . import stream as _stream
from .stream import current as current_stream

__all__ = ["DeviceMemoryPool", "Keeper", "PooledBuffer", "round_size"]

#: Small requests round up to a multiple of this many bytes.
GRANULE = 512
#: Requests above this many bytes use the 8-bins-per-octave rounding.
LARGE_THRESHOLD = 1 << 20
#: Number of bins between two consecutive powers of two for large requests.
BINS_PER_OCTAVE = 8
#: Largest request passed to the driver (its size argument is a 64-bit size_t).
MAX_REQUEST = (1 << 64) - 1


def round_size(nbytes):
    """Return the cache-bin capacity that a request of ``nbytes`` receives.

    Parameters
    ----------
    nbytes : int
        Requested size in bytes, ``>= 0``.

    Returns
    -------
    int
        0 for 0; a multiple of :data:`GRANULE` up to :data:`LARGE_THRESHOLD`;
        above it, a multiple of ``2**floor(log2(nbytes - 1)) / 8``.
    """
    if nbytes <= LARGE_THRESHOLD:
        return -(-nbytes // GRANULE) * GRANULE
    # Largest power of two strictly below nbytes; an exact power of two
    # is therefore its own bin rather than spilling into the next octave.
    step = (1 << ((nbytes - 1).bit_length() - 1)) // BINS_PER_OCTAVE
    return -(-nbytes // step) * step


def _is_out_of_memory(exc):
    """True for Python's MemoryError and for pycuda's driver MemoryError.

    pycuda's class (``pycuda._driver.MemoryError``) is matched by name and
    module so that this check never has to import pycuda.
    """
    for cls in type(exc).__mro__:
        if cls is MemoryError:
            return True
        if cls.__name__ == "MemoryError" and cls.__module__.startswith("pycuda"):
            return True
    return False


def _default_alloc(nbytes):
    """Allocate with ``pycuda.driver.mem_alloc`` (imported on first use)."""
    import pycuda.driver

    return pycuda.driver.mem_alloc(nbytes)


def _default_order(waiter, producers):
    """Make pycuda stream ``waiter`` wait for the work queued on ``producers``."""
    from . import events

    events.order_after(waiter.handle, [p.handle for p in producers])


def _streams_of(allocated_on, freed_on):
    """The user streams (not None, the default stream) a freed block may be busy on."""
    if freed_on is allocated_on or freed_on is None:
        return () if allocated_on is None else (allocated_on,)
    return (freed_on,) if allocated_on is None else (allocated_on, freed_on)


class PooledBuffer:
    """Device memory lent by a :class:`DeviceMemoryPool`.

    Attributes
    ----------
    address : int
        Device pointer (0 for a zero-byte buffer), kept after ``free()``
        for reports; code that uses the memory reads ``ptr``.
    nbytes : int
        The size that was requested.
    capacity : int
        The size of the underlying block (the request's rounded bin).
    stream : pycuda.driver.Stream or None
        The stream current when it was allocated (None: the default stream).
    freed : bool
        True once ``free()`` was called.

    Notes
    -----
    ``free()`` (or garbage collection) hands the block back to the pool's
    cache.  Returning only appends to a deque (atomic, no lock), so it is
    safe from ``__del__``, from any thread and during interpreter shutdown.
    After ``free()``, ``ptr`` raises: the block may already be lent to
    another tensor, so a use after free must fail rather than read or write
    someone else's data.  Compiled (``gpuarray/compiled.py``), the class is
    an extension type: made, read (:meth:`pointer`, a C call for compiled
    callers such as the dispatcher) and finalized without Python frames --
    every tensor and every replay's temporaries pay for it.
    """

    __slots__ = ("address", "nbytes", "capacity", "stream", "freed", "_raw", "_returns",
                 "__weakref__")

    def __init__(self, raw, ptr, nbytes, capacity, returns, stream=None):
        self._raw = raw
        self.address = ptr
        self.nbytes = nbytes
        self.capacity = capacity
        self.stream = stream
        self.freed = False
        self._returns = returns

    def pointer(self):
        """The device pointer; ``ValueError`` once the buffer is freed."""
        if self.freed:
            raise ValueError("tensor's device memory was freed (its buffer's free() was "
                             "called); it can no longer be read, written or computed with")
        return self.address

    @property
    def ptr(self):
        """The device pointer (0 for a zero-byte buffer); ``ValueError`` once
        the buffer is freed (:meth:`pointer`)."""
        return self.pointer()

    def __int__(self):
        return self.pointer()

    def __index__(self):
        return self.pointer()

    def free(self):
        """Return the block to the pool's cache; later calls do nothing.

        Afterwards ``ptr`` and ``int()`` raise ``ValueError``.
        """
        self._give_back()
        self.freed = True

    def _give_back(self):
        raw, self._raw = self._raw, None
        if raw is not None:
            busy_on = _streams_of(self.stream, current_stream())
            self._returns.append((self.capacity, raw, busy_on))

    def __del__(self):
        # Only the return: nobody can see the object any more.  Guard
        # against a half-constructed object or torn-down globals.
        try:
            self._give_back()
        except Exception:  # noqa: BLE001 - a finalizer must never raise
            pass

    def __repr__(self):
        state = " freed" if self.freed else ""
        return (f"<PooledBuffer ptr=0x{self.address:x} nbytes={self.nbytes} "
                f"capacity={self.capacity}{state}>")


class DeviceMemoryPool:
    """A caching allocator of device memory.

    Parameters
    ----------
    alloc : callable, optional
        ``alloc(nbytes)`` returning an object ``a`` with ``int(a)`` the device
        pointer and ``a.free()`` releasing it -- exactly what
        ``pycuda.driver.mem_alloc`` returns.  Defaults to that function,
        imported on first use.
    order : callable, optional
        ``order(waiter, producers)``: make stream ``waiter`` wait for the
        work queued so far on the streams ``producers`` (default: an event
        per producer and ``cuStreamWaitEvent``).

    Notes
    -----
    Blocks are cached per rounded size (see :func:`round_size`) and reused
    only by requests of the same bin.  A zero-byte request never touches the
    device: it returns a buffer whose pointer is 0 (NULL), which a kernel of
    zero elements never dereferences.  The pool is also a valid pycuda
    ``allocator=`` callable (``pool(nbytes)``).
    """

    def __init__(self, alloc=None, order=None):
        self._alloc = _default_alloc if alloc is None else alloc
        self._order = _default_order if order is None else order
        # capacity -> list of (raw allocation, streams it may be busy on), LIFO
        self._cache = {}
        # Buffers returned by free()/GC land here first; the pool moves them
        # into the cache under its lock, so finalizers never take the lock.
        self._returns = collections.deque()
        # Reentrant: gc.collect() on the out-of-memory path runs arbitrary
        # finalizers inside the lock, and one may allocate.
        self._lock = threading.RLock()
        self._local = _Keeping()
        self._device_allocations = 0
        self._device_frees = 0
        self._oom_recoveries = 0
        self._bytes_in_use = 0
        self._blocks_in_use = 0
        self._bytes_cached = 0
        self._blocks_cached = 0

    def allocate(self, nbytes):
        """Lend a buffer of at least ``nbytes`` bytes.

        Parameters
        ----------
        nbytes : int
            Requested size in bytes.

        Returns
        -------
        PooledBuffer

        Raises
        ------
        TypeError
            If ``nbytes`` is not an integer.
        ValueError
            If ``nbytes`` is negative.
        MemoryError
            If the device is out of memory even after the cache was freed.
        """
        if type(nbytes) is not int or nbytes < 0:  # a plain int passes as it is
            nbytes = _check_nbytes(nbytes)
        if nbytes == 0:
            return PooledBuffer(None, 0, 0, 0, self._returns)
        capacity = round_size(nbytes)
        if capacity > MAX_REQUEST:
            # the driver's size argument would overflow: no device holds this
            raise MemoryError(f"out of device memory allocating {nbytes} bytes: "
                              f"more than any device holds")
        current = current_stream()
        with self._lock:
            self._drain_returns()
            raw = self._reuse(capacity, current)
            if raw is None:
                raw = self._alloc_with_retry(nbytes, capacity)
            self._bytes_in_use += capacity
            self._blocks_in_use += 1
        keeper = self._local.keeper
        return PooledBuffer(raw, int(raw), nbytes, capacity,
                            self._returns if keeper is None else keeper, current)

    def __call__(self, nbytes):
        """:meth:`allocate`: the pool as pycuda's ``allocator=`` callable."""
        return self.allocate(nbytes)

    def keep_for(self, keeper):
        """Until :meth:`stop_keeping`, buffers this thread allocates return to ``keeper``.

        A CUDA graph bakes in the addresses of the temporaries its capture
        allocated: their memory must not be lent to anyone else while the
        graph can still be replayed.  ``keeper`` is a :class:`Keeper`.
        """
        self._local.keeper = keeper

    def stop_keeping(self):
        self._local.keeper = None

    def free_cached(self):
        """Release every cached block to the device.

        Returns
        -------
        int
            The number of bytes released.
        """
        with self._lock:
            self._drain_returns()
            return self._release_cache()

    def stats(self):
        """Return the pool's counters.

        Returns
        -------
        dict
            ``device_allocations`` and ``device_frees`` (cumulative successful
            calls to the device allocator and to ``free()``),
            ``oom_recoveries`` (times the device ran out of memory and the
            pool released its cache to retry), ``bytes_in_use``
            and ``blocks_in_use`` (lent out, counted by capacity),
            ``bytes_cached`` and ``blocks_cached`` (held for reuse).
        """
        with self._lock:
            self._drain_returns()
            return {
                "device_allocations": self._device_allocations,
                "device_frees": self._device_frees,
                "oom_recoveries": self._oom_recoveries,
                "bytes_in_use": self._bytes_in_use,
                "blocks_in_use": self._blocks_in_use,
                "bytes_cached": self._bytes_cached,
                "blocks_cached": self._blocks_cached,
            }

    # -- internals; all are called with self._lock held -------------------

    def _reuse(self, capacity, current):
        """A cached block of ``capacity`` made safe to use on stream
        ``current``, or None when there is none."""
        blocks = self._cache.get(capacity)
        if not blocks:
            return None
        raw, busy_on = blocks[-1]
        others = [s for s in busy_on if s is not current] if busy_on else busy_on
        if others and current is not None:
            if _stream.capturing() is not None:
                # a wait on an event recorded outside would tie the graph
                # to this moment's streams: take fresh memory instead
                return None
            self._order(current, others)
        # on the default stream the driver orders user (blocking) streams' work first
        blocks.pop()
        self._bytes_cached -= capacity
        self._blocks_cached -= 1
        return raw

    def _drain_returns(self):
        """Move buffers given back since the last call into the cache."""
        returns = self._returns
        while returns:
            capacity, raw, busy_on = returns.popleft()
            self._cache.setdefault(capacity, []).append((raw, busy_on))
            self._bytes_in_use -= capacity
            self._blocks_in_use -= 1
            self._bytes_cached += capacity
            self._blocks_cached += 1

    def _release_cache(self):
        # Empty the cache first: if a free() raises, the blocks not yet
        # freed are dropped and their own finalizers release them.
        cache, self._cache = self._cache, {}
        released, self._bytes_cached, self._blocks_cached = self._bytes_cached, 0, 0
        for blocks in cache.values():
            for raw, _ in blocks:
                raw.free()
                self._device_frees += 1
        return released

    def _alloc_with_retry(self, nbytes, capacity):
        try:
            raw = self._alloc(capacity)
        except Exception as exc:  # noqa: BLE001 - filtered just below
            if not _is_out_of_memory(exc):
                raise
            # Unreachable buffers in reference cycles and cached blocks of
            # other sizes may be what fills the device: reclaim both.
            self._oom_recoveries += 1
            gc.collect()
            self._drain_returns()
            self._release_cache()
            try:
                raw = self._alloc(capacity)
            except Exception as exc2:  # noqa: BLE001 - filtered just below
                if not _is_out_of_memory(exc2):
                    raise
                raise MemoryError(self._oom_message(nbytes, capacity)) from exc2
        self._device_allocations += 1
        return raw

    def _oom_message(self, nbytes, capacity):
        return (f"out of device memory allocating {nbytes} bytes "
                f"(rounded to {capacity}) after freeing the pool's cache; "
                f"pool state: {self._bytes_in_use} bytes in use in "
                f"{self._blocks_in_use} blocks, {self._bytes_cached} bytes "
                f"cached, {self._device_allocations - self._device_frees} "
                f"live device allocations ({self._device_allocations} made, "
                f"{self._device_frees} freed)")

    def __repr__(self):
        s = self.stats()
        return (f"<DeviceMemoryPool in_use={s['bytes_in_use']} "
                f"cached={s['bytes_cached']}>")


def _check_nbytes(nbytes):
    """Validate a byte count: an integer (not bool), not negative."""
    if isinstance(nbytes, bool):
        raise TypeError("nbytes must be an integer, not bool")
    try:
        nbytes = operator.index(nbytes)
    except TypeError:
        raise TypeError(
            f"nbytes must be an integer, not {type(nbytes).__name__}") from None
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    return nbytes


class _Keeping(threading.local):
    """The keeper a thread's allocations return to (None: the pool itself)."""

    keeper = None


class Keeper:
    """Holds the freed buffers of a captured graph until :meth:`release`.

    Buffers allocated while a pool keeps for this keeper return here
    instead of to the pool; after :meth:`release` (the graph is gone)
    everything held, and everything freed later, goes back to the pool,
    marked busy on the stream current at release as well: the graph's
    replays ran there, not on its capture stream.
    """

    def __init__(self, pool):
        self._returns = pool._returns
        self._held = []
        self._released = False

    def append(self, item):
        if self._released:
            self._returns.append(item)
        else:
            self._held.append(item)

    def release(self):
        self._released = True
        replayed_on = current_stream()
        while self._held:
            capacity, raw, busy_on = self._held.pop()
            if replayed_on is not None and replayed_on not in busy_on:
                busy_on += (replayed_on,)
            self._returns.append((capacity, raw, busy_on))
