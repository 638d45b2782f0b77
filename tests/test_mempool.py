"""Tests of the caching device-memory pool with a fake, CPU-only allocator."""
import gc

import pytest

from gpuarray.cuda import mempool


class FakeAllocation:
    def __init__(self, owner, ptr, nbytes):
        self.owner, self.ptr, self.nbytes = owner, ptr, nbytes
        self.freed = False

    def __int__(self):
        return self.ptr

    def free(self):
        assert not self.freed, "double free"
        self.freed = True
        self.owner.live.discard(self.ptr)


class FakeAllocator:
    """Hands out increasing pointers; can be told to fail the next calls."""

    def __init__(self, capacity=None):
        self.next_ptr = 0x10000
        self.calls = []
        self.live = set()
        self.fail_next = 0
        self.capacity = capacity

    def __call__(self, nbytes):
        self.calls.append(nbytes)
        if self.fail_next:
            self.fail_next -= 1
            raise MemoryError("fake out of memory")
        if self.capacity is not None and nbytes > self.capacity:
            raise MemoryError("fake out of memory")
        ptr = self.next_ptr
        self.next_ptr += nbytes + 0x1000
        self.live.add(ptr)
        return FakeAllocation(self, ptr, nbytes)


class PycudaLikeMemoryError(Exception):
    """Stands in for pycuda._driver.MemoryError (not a builtin subclass)."""


PycudaLikeMemoryError.__name__ = "MemoryError"
PycudaLikeMemoryError.__module__ = "pycuda._driver"


@pytest.fixture
def fake():
    return FakeAllocator()


@pytest.fixture
def pool(fake):
    return mempool.DeviceMemoryPool(alloc=fake)


def test_reuse_after_free_makes_no_new_device_allocation(pool, fake):
    a = pool.allocate(1000)
    ptr = a.ptr
    a.free()
    b = pool.allocate(1000)
    assert b.ptr == ptr
    assert len(fake.calls) == 1
    assert pool.stats()["device_allocations"] == 1


def test_free_is_idempotent(pool):
    a = pool.allocate(100)
    a.free()
    a.free()
    assert pool.stats()["blocks_cached"] == 1
    assert pool.stats()["bytes_in_use"] == 0


def test_garbage_collected_buffer_returns_to_pool(pool, fake):
    a = pool.allocate(4096)
    ptr = a.ptr
    del a
    gc.collect()
    assert pool.stats()["blocks_cached"] == 1
    assert pool.allocate(4096).ptr == ptr
    assert len(fake.calls) == 1


def test_buffer_in_reference_cycle_returns_after_gc(pool):
    a = pool.allocate(4096)
    holder = [a]
    holder.append(holder)
    del a, holder
    gc.collect()
    assert pool.stats()["bytes_in_use"] == 0


def test_buffer_attributes(pool):
    a = pool.allocate(1000)
    assert isinstance(a.ptr, int) and int(a) == a.ptr
    assert a.nbytes == 1000
    assert a.capacity == 1024


def test_distinct_live_buffers_have_distinct_pointers(pool):
    bufs = [pool.allocate(256) for _ in range(10)]
    assert len({b.ptr for b in bufs}) == 10


@pytest.mark.parametrize("nbytes, capacity", [
    (1, 512), (512, 512), (513, 1024), (1000, 1024),
    (1 << 20, 1 << 20),
    ((1 << 20) + 1, (1 << 20) + (1 << 17)),
    (3 << 20, 3 << 20),
    ((1 << 30) - 1, 1 << 30),
    ((1 << 30) + 1, (1 << 30) + (1 << 27)),
])
def test_round_size_bins(nbytes, capacity):
    assert mempool.round_size(nbytes) == capacity


def test_round_size_waste_is_bounded():
    for n in range(mempool.LARGE_THRESHOLD + 1, 1 << 26, 99_991):
        r = mempool.round_size(n)
        assert n <= r <= n * 1.125 + 1


def test_requests_in_one_bin_share_a_block(pool, fake):
    a = pool.allocate(600)
    ptr = a.ptr
    a.free()
    b = pool.allocate(1024)
    assert b.ptr == ptr and b.nbytes == 1024 and b.capacity == 1024
    assert fake.calls == [1024]


def test_requests_in_other_bins_do_not_share(pool, fake):
    pool.allocate(600).free()
    pool.allocate(1025)
    assert fake.calls == [1024, 1536]


def test_zero_bytes_gives_null_buffer_without_device_call(pool, fake):
    a = pool.allocate(0)
    assert a.ptr == 0 and int(a) == 0 and a.nbytes == 0 and a.capacity == 0
    a.free()
    del a
    gc.collect()
    assert fake.calls == []
    assert pool.stats()["bytes_in_use"] == 0


def test_out_of_memory_frees_cache_and_retries(pool, fake):
    cached = [pool.allocate(n) for n in (512, 2048)]
    for b in cached:
        b.free()
    fake.fail_next = 1
    b = pool.allocate(8192)
    assert b.capacity == 8192
    assert fake.calls == [512, 2048, 8192, 8192]
    assert fake.live == {b.ptr}
    s = pool.stats()
    assert s["blocks_cached"] == 0 and s["bytes_cached"] == 0
    assert s["device_frees"] == 2 and s["device_allocations"] == 3
    assert s["oom_recoveries"] == 1


def test_out_of_memory_reclaims_buffers_lost_in_cycles(pool, fake):
    a = pool.allocate(2048)
    ptr = a.ptr
    holder = [a]
    holder.append(holder)
    del a, holder
    gc.disable()
    try:
        fake.fail_next = 1
        b = pool.allocate(8192)
    finally:
        gc.enable()
    assert ptr not in fake.live
    assert pool.stats()["bytes_in_use"] == b.capacity == 8192


def test_concurrent_allocate_and_free_keep_counts_consistent(pool):
    import threading

    def work():
        for i in range(2000):
            b = pool.allocate(512 * (i % 7 + 1))
            if i % 2:
                b.free()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    s = pool.stats()
    assert s["bytes_in_use"] == 0 and s["blocks_in_use"] == 0
    assert s["blocks_cached"] == s["device_allocations"] - s["device_frees"]


def test_pycuda_memory_error_is_treated_as_out_of_memory(fake):
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        if len(calls) == 1:
            raise PycudaLikeMemoryError("cuMemAlloc failed: out of memory")
        return fake(nbytes)

    pool = mempool.DeviceMemoryPool(alloc=alloc)
    assert pool.allocate(100).capacity == 512
    assert calls == [512, 512]


def test_out_of_memory_twice_raises_memory_error_naming_request(pool, fake):
    keep = pool.allocate(1000)
    pool.allocate(3000).free()
    fake.fail_next = 2
    with pytest.raises(MemoryError) as info:
        pool.allocate(123456)
    message = str(info.value)
    assert "123456" in message
    assert "1024 bytes in use" in message
    assert "0 bytes cached" in message
    assert "1 live device allocations" in message
    assert keep.ptr in fake.live


def test_other_allocator_errors_propagate_without_retry():
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        raise RuntimeError("invalid context")

    pool = mempool.DeviceMemoryPool(alloc=alloc)
    with pytest.raises(RuntimeError, match="invalid context"):
        pool.allocate(10)
    assert calls == [512]


def test_stats_values(pool, fake):
    assert pool.stats() == {
        "device_allocations": 0, "device_frees": 0, "oom_recoveries": 0,
        "bytes_in_use": 0, "blocks_in_use": 0, "bytes_cached": 0, "blocks_cached": 0}
    a = pool.allocate(100)
    b = pool.allocate(5000)
    pool.allocate(100)  # dropped at once: goes back to the cache
    s = pool.stats()
    assert s["device_allocations"] == 3
    assert s["bytes_in_use"] == 512 + 5120 and s["blocks_in_use"] == 2
    assert s["bytes_cached"] == 512 and s["blocks_cached"] == 1
    a.free()
    b.free()
    assert pool.free_cached() == 2 * 512 + 5120
    s = pool.stats()
    assert s["device_frees"] == 3 and s["device_allocations"] == 3
    assert s["bytes_cached"] == 0 and s["blocks_cached"] == 0
    assert s["bytes_in_use"] == 0 and s["blocks_in_use"] == 0
    assert fake.live == set()


def test_free_cached_leaves_buffers_in_use_alone(pool, fake):
    a = pool.allocate(100)
    pool.allocate(200).free()
    pool.free_cached()
    assert fake.live == {a.ptr}


def test_buffer_outliving_its_pool_is_harmless(fake):
    pool = mempool.DeviceMemoryPool(alloc=fake)
    a = pool.allocate(100)
    del pool
    gc.collect()
    a.free()
    del a
    gc.collect()


def test_pool_is_a_pycuda_style_allocator(pool):
    assert pool(100).capacity == 512


@pytest.mark.parametrize("bad", [1.0, 2.5, "8", None, True])
def test_non_integer_nbytes_raise_type_error(pool, bad):
    with pytest.raises(TypeError, match="nbytes"):
        pool.allocate(bad)


def test_negative_nbytes_raise_value_error(pool):
    with pytest.raises(ValueError, match="-1"):
        pool.allocate(-1)


def test_numpy_integer_nbytes_accepted(pool):
    np = pytest.importorskip("numpy")
    assert pool.allocate(np.int64(700)).capacity == 1024


def test_default_allocator_imports_pycuda_lazily():
    # Constructing the pool must not import pycuda.
    mempool.DeviceMemoryPool()


# -- use after free ------------------------------------------------------------

@pytest.mark.parametrize("take", [lambda b: b.ptr, int, lambda b: [0][b:]],
                         ids=["ptr", "int", "index"])
def test_freed_buffer_pointer_raises(pool, take):
    a = pool.allocate(1000)
    a.free()
    with pytest.raises(ValueError, match="device memory was freed"):
        take(a)


def test_freed_block_lent_again_leaves_the_old_buffer_dead(pool):
    a = pool.allocate(1000)
    a.free()
    b = pool.allocate(1000)
    assert b.ptr  # the same block, live in its new buffer
    with pytest.raises(ValueError, match="freed"):
        a.ptr
    a.free()  # a second free neither raises nor gives b's block back
    assert pool.stats()["blocks_in_use"] == 1
    assert a.freed and not b.freed and "freed" in repr(a) and "freed" not in repr(b)


def test_zero_byte_buffer_is_also_dead_after_free(pool):
    a = pool.allocate(0)
    a.free()
    with pytest.raises(ValueError, match="freed"):
        a.ptr


# -- running out of memory -----------------------------------------------------

class BudgetAllocator(FakeAllocator):
    """A device of ``budget`` bytes: fails when the live blocks would exceed it."""

    def __init__(self, budget):
        super().__init__()
        self.budget, self.sizes = budget, {}

    def __call__(self, nbytes):
        if sum(self.sizes[p] for p in self.live) + nbytes > self.budget:
            self.calls.append(nbytes)
            raise PycudaLikeMemoryError("cuMemAlloc failed: out of memory")
        allocation = super().__call__(nbytes)
        self.sizes[allocation.ptr] = nbytes
        return allocation


def test_allocating_until_out_of_memory_then_recovering():
    fake = BudgetAllocator(10 * 4096)
    pool = mempool.DeviceMemoryPool(alloc=fake)
    keep = pool.allocate(4096)
    chunks = []
    with pytest.raises(MemoryError) as info:
        for _ in range(100):
            chunks.append(pool.allocate(4096))
    assert len(chunks) == 9
    message = str(info.value)
    assert "allocating 4096 bytes" in message and f"{10 * 4096} bytes in use" in message
    # nothing lent out was lost, and freed memory serves the next requests,
    # even of another size (the cache is released on the next failure)
    assert keep.ptr in fake.live and all(c.ptr in fake.live for c in chunks)
    for c in chunks:
        c.free()
    big = pool.allocate(8 * 4096)
    assert big.capacity == 8 * 4096 and keep.ptr in fake.live
    assert pool.stats()["bytes_cached"] == 0


def test_request_beyond_the_address_space_raises_memory_error(pool, fake):
    with pytest.raises(MemoryError, match=str(1 << 70)):
        pool.allocate(1 << 70)
    assert fake.calls == []


def test_request_beyond_a_c_integer_reaches_the_allocator(fake):
    """2**63 bytes and more (below 2**64) is the driver's to refuse: out of
    memory, as any request too large for the device."""
    fake.capacity = 1 << 40
    pool = mempool.DeviceMemoryPool(alloc=fake)
    for nbytes in (1 << 63, (1 << 64) - 1):
        with pytest.raises(MemoryError, match=str(nbytes)):
            pool.allocate(nbytes)
    assert pool.stats()["bytes_in_use"] == 0
