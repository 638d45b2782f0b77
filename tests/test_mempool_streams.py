"""The device-memory pool across streams, with fake streams and allocator (no GPU).

A block freed while work on one user stream may still use it is lent to
another user stream only after that stream was ordered after the first;
the default stream and a block's own stream need no ordering.
"""
import pytest

from gpuarray.cuda import mempool, stream

from test_mempool import FakeAllocator


class FakeStream:
    def __init__(self, name):
        self.name = name
        self.handle = id(self)  # a CUstream stand-in: stream.using keeps it

    def __repr__(self):
        return self.name


class Orders:
    """Records the ``order(waiter, producers)`` calls the pool makes."""

    def __init__(self):
        self.calls = []

    def __call__(self, waiter, producers):
        self.calls.append((waiter, tuple(producers)))


@pytest.fixture
def orders():
    return Orders()


@pytest.fixture
def pool(orders):
    return mempool.DeviceMemoryPool(alloc=FakeAllocator(), order=orders)


S1, S2 = FakeStream("s1"), FakeStream("s2")


def _on(s):
    return stream.using(s, s)


def test_a_buffer_remembers_its_allocation_stream(pool):
    with _on(S1):
        assert pool.allocate(100).stream is S1
    assert pool.allocate(100).stream is None


def test_reuse_on_the_same_stream_needs_no_ordering(pool, orders):
    with _on(S1):
        a = pool.allocate(1000)
        ptr = a.ptr
        a.free()
        assert pool.allocate(1000).ptr == ptr
    assert orders.calls == []


def test_reuse_on_another_user_stream_waits_for_the_first(pool, orders):
    with _on(S1):
        a = pool.allocate(1000)
        ptr = a.ptr
        a.free()
    with _on(S2):
        b = pool.allocate(1000)
    assert b.ptr == ptr
    assert orders.calls == [(S2, (S1,))]


def test_a_block_used_on_two_streams_waits_for_both(pool, orders):
    with _on(S1):
        a = pool.allocate(1000)
    with _on(S2):
        a.free()  # freed where its last use was queued
    s3 = FakeStream("s3")
    with _on(s3):
        pool.allocate(1000)
    assert orders.calls == [(s3, (S1, S2))]


def test_the_default_stream_needs_no_event(pool, orders):
    # user streams are blocking: the driver orders them with the legacy stream
    with _on(S1):
        a = pool.allocate(1000)
        ptr = a.ptr
        a.free()
    assert pool.allocate(1000).ptr == ptr
    b = pool.allocate(2000)
    ptr = b.ptr
    b.free()
    with _on(S1):
        assert pool.allocate(2000).ptr == ptr
    assert orders.calls == []


def test_capture_takes_fresh_memory_rather_than_an_outside_wait(pool, orders):
    with _on(S1):
        a = pool.allocate(1000)
        ptr = a.ptr
        a.free()
    with stream.capturing_on(S2, "a test step"):
        b = pool.allocate(1000)
    assert b.ptr != ptr and orders.calls == []
    with _on(S1):
        assert pool.allocate(1000).ptr == ptr  # the cached block is still there


def test_a_released_graph_block_is_busy_on_the_replay_stream(pool, orders):
    keeper = mempool.Keeper(pool)
    pool.keep_for(keeper)
    with stream.capturing_on(FakeStream("capture"), "a test step"):
        a = pool.allocate(1000)
        a.free()
    pool.stop_keeping()
    with _on(S1):
        keeper.release()  # the graph was replayed on s1
    with _on(S2):
        pool.allocate(1000)
    assert orders.calls[0][0] is S2 and S1 in orders.calls[0][1]


def test_streams_restore_when_blocks_nest(pool):
    with _on(S1):
        with _on(S2):
            assert stream.current() is S2
        assert stream.current() is S1
    assert stream.current() is None


def test_no_stream_switch_inside_a_capture():
    with stream.capturing_on(S1, "a test step"):
        with pytest.raises(RuntimeError, match="cannot switch streams inside a captured step"):
            with _on(S2):
                pass
