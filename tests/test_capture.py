"""Captured steps (``ng.capture`` / ``@ng.jit``): CUDA graphs replaying a step.

On the GPU: a captured training step (products, fused assignments, an
in-place update) equals the same step run eagerly over several replays
with changing input data; other ints or shapes record another graph
(or raise with strict=True), where floats update it
(test_capture_numbers.py); temporaries of the graph are never lent to
anyone else; random numbers (rand(), stochastic rounding) are fresh on
every replay and reproducible from the seed; what cannot be replayed (host
reads, uploads, synchronize) raises at recording time, and the factory
keeps working.
Without a GPU: the bookkeeping (the pool's keeper, the capture flag) and
the CPU factory, which runs steps eagerly.
"""
import numpy as np
import pytest

import gpuarray
from conftest import new_factory
from gpuarray.cuda import mempool, stream

F32 = np.float32


def _mlp_step(ng, X, Y, W1, W2, lr):
    """Forward, backward and SGD of a two-layer MLP with a squared loss: 9 launches."""
    H = ng.empty((X.shape[0], W1.shape[1]), F32)
    H[:] = ng.relu(ng.dot(X, W1))
    out = ng.dot(H, W2)
    G = ng.empty(out.shape, F32)
    G[:] = out - Y
    GH = ng.empty(H.shape, F32)
    GH[:] = ng.dot(G, W2.T) * (H > 0)
    W2[:] = W2 - lr * ng.dot(H.T, G)
    W1[:] = W1 - lr * ng.dot(X.T, GH)
    return G


def _problem(ng, rng):
    X = ng.array(rng.standard_normal((64, 32)).astype(F32))
    Y = ng.array(rng.standard_normal((64, 8)).astype(F32))
    W1 = ng.array(rng.standard_normal((32, 48)).astype(F32) * 0.1)
    W2 = ng.array(rng.standard_normal((48, 8)).astype(F32) * 0.1)
    return X, Y, W1, W2


def test_captured_training_step_matches_eager(gpu_ng):
    ng, rng = gpu_ng, np.random.default_rng(0)
    X, Y, W1, W2 = _problem(ng, rng)
    eager = [ng.array(t.get()) for t in (X, Y, W1, W2)]
    step = ng.capture(lambda *t: _mlp_step(ng, *t))
    for i in range(4):
        data = rng.standard_normal((64, 32)).astype(F32)
        X[:] = data  # new contents of the same tensors: the graph reads them
        eager[0][:] = data
        G = step(X, Y, W1, W2, 0.01)
        G_eager = _mlp_step(ng, *eager, 0.01)
        np.testing.assert_allclose(G.get(), G_eager.get(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(W1.get(), eager[2].get(), rtol=1e-4, atol=1e-6)
    assert len(step.graphs) == 1 and ng.stats()["graphs_launched"] >= 4


def test_other_ints_or_shapes_record_another_graph(gpu_ng):
    ng = gpu_ng
    A = ng.array(np.arange(6, dtype=F32))
    B = ng.empty((6,), F32)

    def scale(a, b, s):
        b[:] = a * s

    step = ng.capture(scale)
    for s in (2, 3, 2):  # ints key the graphs (floats: tests/test_capture_numbers.py)
        step(A, B, s)
        np.testing.assert_array_equal(B.get(), np.arange(6, dtype=F32) * s)
    assert len(step.graphs) == 2
    strict = ng.capture(scale, strict=True)
    strict(A, B, 2.0)
    with pytest.raises(ValueError, match="strict=True"):
        strict(A[:3], B[:3], 2.0)


def test_graph_temporaries_are_not_lent_to_others(gpu_ng):
    ng = gpu_ng
    A = ng.array(np.ones((256, 256), F32))
    out = ng.empty((256, 256), F32)

    def step(a, o):
        t = ng.empty(a.shape, F32)  # a temporary the graph writes on every replay
        t[:] = a * 2
        o[:] = t + 1

    captured = ng.capture(step)
    captured(A, out)
    others = [ng.full((256, 256), 7.0, F32) for _ in range(8)]  # may reuse freed memory
    captured(A, out)
    ng.synchronize()
    for other in others:
        assert float(other.get().min()) == 7.0 == float(other.get().max())
    np.testing.assert_array_equal(out.get(), 3.0)


@pytest.mark.parametrize("body, error, match", [
    (lambda ng, a: a.get(), RuntimeError, "host"),
    (lambda ng, a: float(a[0]), RuntimeError, "host"),
    (lambda ng, a: ng.array(np.ones(4, F32)), RuntimeError, "copying host data"),
    (lambda ng, a: ng.synchronize(), RuntimeError, "synchronize"),
])
def test_what_cannot_be_captured_raises_and_the_factory_recovers(gpu_ng, body, error, match):
    ng = gpu_ng
    A = ng.array(np.arange(4, dtype=F32))
    step = ng.capture(lambda a: body(ng, a))
    with pytest.raises(error, match=match):
        step(A)
    assert stream.capturing() is None
    A[:] = A + 1  # the factory works afterwards
    np.testing.assert_array_equal(A.get(), np.arange(4, dtype=F32) + 1)


def _replayed_draws(ng, replays=4):
    """What a captured step drawing rand() and rounding stochastically gives per call."""
    X = ng.empty((4096,), F32)
    third = ng.full((4096,), 1 / 3, F32)
    H = ng.empty((4096,), np.float16)
    H.rounding = True

    @ng.jit
    def step(x, h, t):
        x[:] = ng.rand()
        h[:] = t * 1.0

    draws = []
    for _ in range(replays):
        step(X, H, third)
        draws.append((X.get(), H.get()))
    return draws


def test_random_numbers_are_fresh_on_every_replay(gpu_ng):
    ng = gpu_ng
    launched = ng.stats().get("graphs_launched", 0)
    draws = _replayed_draws(ng)
    assert ng.stats()["graphs_launched"] - launched == len(draws)
    for k, (x, h) in enumerate(draws):
        assert 0.0 <= x.min() and x.max() < 1.0 and abs(x.mean() - 0.5) < 0.02
        # stochastic rounding of 1/3: the two neighbours, unbiased on average
        assert len(np.unique(h)) == 2 and abs(h.astype(np.float64).mean() - 1 / 3) < 1e-3
        for earlier, rounded in draws[:k]:
            assert not np.array_equal(x, earlier) and not np.array_equal(h, rounded)
    X = ng.empty((4096,), F32)
    X[:] = ng.rand()  # an eager draw after the replays repeats none of them
    assert not any(np.array_equal(X.get(), x) for x, _ in draws)


def test_replayed_random_numbers_follow_the_seed():
    first = _replayed_draws(new_factory("gpu", seed=5), replays=3)
    again = _replayed_draws(new_factory("gpu", seed=5), replays=3)
    other = _replayed_draws(new_factory("gpu", seed=6), replays=3)
    for (x, h), (y, g), (z, _) in zip(first, again, other):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(h, g)
        assert not np.array_equal(x, z)


def test_tensors_of_another_factory_are_refused(gpu_ng):
    step = gpu_ng.capture(lambda a: None)
    with pytest.raises(TypeError, match="own factory"):
        step(gpuarray.CPU().zeros((2,)))
    with pytest.raises(TypeError, match="not list"):
        step([1, 2])


# -- without a GPU ------------------------------------------------------------

def test_cpu_factory_runs_steps_eagerly():
    ng = gpuarray.CPU()
    A = ng.zeros((3,))

    @ng.jit
    def step(a, s):
        a[:] = a + s

    step(A, 1.0)
    step(A, 2.0)
    np.testing.assert_array_equal(A.get(), [3.0, 3.0, 3.0])
    assert ng.jit(strict=True)(len)("ab") == 2
    with pytest.raises(TypeError, match="callable"):
        ng.capture(3)


def test_refusals_name_the_operation_and_the_step():
    with stream.capturing_on(None, "step 'train'"):
        with pytest.raises(RuntimeError, match=r"synchronize\(\) inside a captured step \(step 'train'\)"):
            stream.refuse_in_capture("synchronize()")
        with pytest.raises(RuntimeError, match="inside the capture of"):
            with stream.capturing_on(None, "another"):
                pass
    stream.refuse_in_capture("synchronize()")  # no capture: nothing to refuse


class _Raw:
    def __init__(self, ptr):
        self.ptr = ptr

    def __int__(self):
        return self.ptr

    def free(self):
        pass


def test_the_pool_keeps_a_graphs_memory_until_released():
    addresses = iter(range(1 << 20, 1 << 40, 1 << 20))
    pool = mempool.DeviceMemoryPool(alloc=lambda n: _Raw(next(addresses)))
    keeper = mempool.Keeper(pool)
    pool.keep_for(keeper)
    kept = pool.allocate(1000)
    pool.stop_keeping()
    kept_ptr = kept.ptr
    kept.free()  # freed inside the step: still the graph's
    assert pool.allocate(1000).ptr != kept_ptr
    keeper.release()
    assert pool.allocate(1000).ptr == kept_ptr


def test_a_dropped_step_gives_its_graphs_memory_back(gpu_ng):
    """The graph of a step nobody holds any more returns its temporaries and its
    reduction's semaphore block to the pools (no release() called)."""
    import gc
    ng = gpu_ng
    x, out = ng.empty((1 << 20,), F32), ng.empty((), F32)  # a reduction split over blocks

    def step():
        out[...] = ng.sum(x * x)
    lent = ng.semaphores.stats()["blocks_in_use"]
    replay = ng.capture(step)
    replay()
    assert ng.semaphores.stats()["blocks_in_use"] == lent + 1
    del replay
    gc.collect()
    assert ng.semaphores.stats()["blocks_in_use"] == lent
