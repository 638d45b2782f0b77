"""Lanes: independent tasks on separate streams, and the executor running on them.

The schedule is checked by replaying its order: a task is preceded by the
earlier tasks of its lane and by everything each event it waits for
follows; every dependency must be among them.  On the GPU the executor's
values with lanes (eager and inside a captured step) must equal the
values of one stream, replay after replay.
"""
import numpy as np
import pytest

from conftest import assert_no_new_allocations
from gpuarray import autodiff as ad
from gpuarray.core.lanes import schedule


def preceding(plan):
    """For each task, the set of tasks ordered before it by the schedule."""
    before, last_on = [], {}
    for i, lane in enumerate(plan.lane):
        known = set()
        if lane in last_on:
            known |= before[last_on[lane]] | {last_on[lane]}
        for d in plan.waits[i]:
            assert d in plan.records, f"task {i} waits for {d}, whose event is never recorded"
            known |= before[d] | {d}
        before.append(known)
        last_on[lane] = i
    return before


def assert_keeps_order(after, plan):
    for i, (deps, known) in enumerate(zip(after, preceding(plan))):
        assert set(deps) <= known, f"task {i} must follow {sorted(deps)}, ordered after {sorted(known)}"
    for lane in set(plan.lane) - {0}:
        assert plan.forks[plan.lane.index(lane)], f"lane {lane}'s first task does not fork"


def test_a_diamond_runs_its_two_sides_on_two_lanes():
    after = [[], [0], [0], [1, 2]]
    plan = schedule(after)
    assert_keeps_order(after, plan)
    assert plan.lane[1] != plan.lane[2] and plan.lanes == 2
    assert plan.waits == ((), (), (0,), (1,)) or plan.waits == ((), (), (0,), (2,))


def test_a_chain_stays_on_one_lane_without_events():
    after = [[]] + [[i] for i in range(9)]
    plan = schedule(after)
    assert set(plan.lane) == {0} and not plan.records and plan.lanes == 1


def test_one_lane_is_issue_order():
    after = [[], [], [0], [1], [2, 3]]
    plan = schedule(after, count=1)
    assert set(plan.lane) == {0} and not plan.records and not any(plan.forks)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("seed", range(5))
def test_random_dependencies_are_kept(count, seed):
    rng = np.random.default_rng(seed)
    after = [sorted(set(rng.integers(0, i, rng.integers(0, 4)).tolist())) if i else []
             for i in range(60)]
    plan = schedule(after, count)
    assert_keeps_order(after, plan)
    assert plan.lanes <= count


def test_independent_tasks_spread_over_the_lanes():
    plan = schedule([[]] * 6, count=3)
    assert plan.lanes == 3 and plan.lane == (0, 1, 2, 0, 1, 2)
    assert not any(plan.waits)


@pytest.mark.parametrize("after, count, match", [
    ([[]], 0, "at least 1"),
    ([[], [1]], 4, "earlier tasks only"),
    ([[], [2], []], 4, "earlier tasks only"),
    ([[-1]], 4, "earlier tasks only"),
])
def test_bad_schedules_raise(after, count, match):
    with pytest.raises(ValueError, match=match):
        schedule(after, count)


# -- the executor on lanes ----------------------------------------------------------


def mlp(widths=(256, 128, 64, 10)):
    """An MLP's training graph: placeholders, params, loss and gradients."""
    x, y_ = ad.Variable("x"), ad.Variable("y_")
    params, h = [], x
    for i in range(len(widths) - 1):
        W, b = ad.Variable(f"W{i}"), ad.Variable(f"b{i}")
        params += [W, b]
        z = ad.matmul(h, W)
        z = z + ad.broadcast_to(b, z)
        h = ad.relu(z) if i < len(widths) - 2 else z
    loss = ad.softmax_cross_entropy(h, y_)
    return x, y_, params, loss, ad.gradients(loss, params)


def mlp_values(rng, widths=(256, 128, 64, 10)):
    values = []
    for n_in, n_out in zip(widths, widths[1:]):
        values.append(rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_out)).astype(np.float32))
        values.append(rng.normal(0, 0.1, (n_out,)).astype(np.float32))
    return values


def batch(rng, n=200, features=256):
    return (rng.uniform(0, 1, (n, features)).astype(np.float32),
            np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)])


def test_the_mlp_step_has_independent_gradients(ng):
    x, y_, params, loss, grads = mlp()
    ex = ad.Executor([loss, *grads], backend=ng)
    rng = np.random.default_rng(0)
    xs, ys = batch(rng)
    ex.run({x: xs, y_: ys, **dict(zip(params, mlp_values(rng)))})
    # weight and data gradients of a layer, and the bias sums, do not wait for each other
    assert ex.plan.lanes.schedule.lanes >= 2
    assert_keeps_order(ex.plan.after, ex.plan.lanes.schedule)


def test_concurrent_runs_equal_one_stream(ng):
    x, y_, params, loss, grads = mlp()
    rng = np.random.default_rng(1)
    values = [ng.array(v) for v in mlp_values(rng)]
    serial = ad.Executor([loss, *grads], backend=ng, concurrent=False)
    concurrent = ad.Executor([loss, *grads], backend=ng, concurrent=True)
    for _ in range(3):
        xs, ys = batch(rng)
        feed = {x: ng.array(xs), y_: ng.array(ys), **dict(zip(params, values))}
        want = serial.run(feed, convert_to_numpy_ret_vals=True)
        got = concurrent.run(feed, convert_to_numpy_ret_vals=True)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)


# no_sanitizer: memory freed inside the capture returns late under compute-sanitizer
@pytest.mark.no_sanitizer
def test_a_captured_step_runs_its_lanes_as_branches(ng):
    x, y_, params, loss, grads = mlp()
    rng = np.random.default_rng(2)
    start = mlp_values(rng)
    ex = ad.Executor([loss, *grads], backend=ng)
    eager = ad.Executor([loss, *grads], backend=ng, concurrent=False)
    values, reference = [ng.array(v) for v in start], [ng.array(v) for v in start]
    X, Y = ng.empty((200, 256), np.float32), ng.empty((200, 10), np.float32)

    def step(X, Y, lr):
        out = ex.run({x: X, y_: Y, **dict(zip(params, values))})
        ad.sgd_update(values, out[1:], lr)
        return out[0]

    replay = ng.capture(step)  # its first call records
    losses, before = [], None
    for k in range(4):
        xs, ys = batch(rng)
        X[...], Y[...] = xs, ys
        lr = 0.1 * 0.8 ** k  # a float argument: the graph's update nodes take each value
        got = float(replay(X, Y, lr).get()[0])
        out = eager.run({x: ng.array(xs), y_: ng.array(ys), **dict(zip(params, reference))})
        want = float(out[0].get()[0])
        ad.sgd_update(reference, out[1:], lr)
        losses.append(got)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        for v, r in zip(values, reference):
            np.testing.assert_allclose(v.get(), r.get(), rtol=1e-6, atol=1e-7)
        if k == 1:
            before = ng.stats()
    assert losses[-1] < losses[0]
    assert len(getattr(replay, "graphs", [ng])) == 1  # the CPU's capture is the step itself
    assert_no_new_allocations(ng, before)


def test_a_task_raising_inside_a_capture_leaves_the_factory_usable(ng, monkeypatch):
    x, y_, params, loss, grads = mlp()
    rng = np.random.default_rng(3)
    values = [ng.array(v) for v in mlp_values(rng)]
    xs, ys = batch(rng)
    feed = {x: ng.array(xs), y_: ng.array(ys), **dict(zip(params, values))}
    ex = ad.Executor([loss, *grads], backend=ng, concurrent=True)
    want = ex.run(feed, convert_to_numpy_ret_vals=True)
    plan, calls = ex.plan, []
    tree = plan._tree

    def failing(node, values, force=False):
        calls.append(node)
        if len(calls) == 12:
            raise RuntimeError("task failed")
        return tree(node, values, force)

    monkeypatch.setattr(plan, "_tree", failing)
    with pytest.raises(RuntimeError, match="task failed"):
        ng.capture(lambda: ex.run(feed))()
    monkeypatch.setattr(plan, "_tree", tree)
    for got in (ex.run(feed, convert_to_numpy_ret_vals=True),
                [v.get() for v in ng.capture(lambda: ex.run(feed))()]):
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)


# -- inception branches on lanes ----------------------------------------------------


def inception(concurrent):
    from gpuarray import nn
    return [nn.Conv(8, 3, pad=1, relu=True),
            nn.Concat([[nn.Conv(8, 1, relu=True)], [nn.Conv(4, 1), nn.Conv(8, 3, pad=1, bias=False)],
                       [nn.Pool("avg", 3, stride=1, pad=1), nn.Conv(8, 1, relu=True)]],
                      concurrent=concurrent),
            nn.FullyConnected(10), nn.SoftmaxCrossEntropy()]


@pytest.mark.parametrize("how", ["captured", "eager"])
def test_concat_branches_on_lanes_equal_one_stream(ng, how):
    from gpuarray import nn
    shape, rng = (16, 1, 8, 8, 3), np.random.default_rng(4)
    lanes = nn.Model(ng, inception(None if how == "captured" else True), shape, np.float32, seed=5)
    one = nn.Model(ng, inception(False), shape, np.float32, seed=5)
    x, labels = ng.empty(shape, np.float32), ng.empty((16,), np.int32)

    def step():
        lanes.fprop(x)
        lanes.bprop(labels)
    run = ng.capture(step) if how == "captured" else step
    for _ in range(3):
        xs = rng.standard_normal(shape).astype(np.float32)
        ls = rng.integers(0, 10, 16).astype(np.int32)
        x[...], labels[...] = xs, ls
        run()
        want = one.fprop(ng.array(xs)).get()
        one.bprop(ng.array(ls))
        np.testing.assert_allclose(lanes.layers[-1].output.get(), want, rtol=1e-6, atol=1e-7)
        for p, q in zip(lanes.parameters(), one.parameters()):
            np.testing.assert_allclose(p.grad.get(), q.grad.get(), rtol=1e-5, atol=1e-6)
