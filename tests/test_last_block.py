"""Long reductions to one value run as one kernel: the partial kernel's last
block to finish combines the partials (gpuarray.fusion.plan, generate).

The recording tests run everywhere (the driver replaced by a recorder);
the GPU tests check values, the block counter's reset and capture.
"""
import types

import numpy as np
import pytest

from conftest import assert_matches
from gpuarray.cuda import semaphores, stream
from gpuarray.fusion import generate, launch, plan
from gpuarray.fusion.layout import LastBlock
from test_dispatch import RecordingGPU, _Raw

LONG = 1 << 20  # split: gpuarray.fusion.split.MIN_LENGTH is 2**18


def _plan(ng, out, tree):
    return plan.plan(ng, out, tree)[0]


def test_a_whole_array_reduction_is_one_partial_step_with_a_finish():
    ng = RecordingGPU()
    x, out = ng.empty((LONG,), np.float32), ng.empty((), np.float32)
    steps = _plan(ng, out, ng.mean(ng.exp(-x * x) * 3 + 0.5 * x))
    assert [s.program.mode for s in steps] == ["partial"]
    assert steps[0].finish.program.mode == "reduce" and steps[0].finish.rows == 1


@pytest.mark.parametrize("case", ["rows", "random", "stochastic rounding"])
def test_what_is_not_finished_by_the_last_block(case):
    ng = RecordingGPU()
    x = ng.empty((LONG,), np.float16)
    if case == "rows":  # 64 rows: more than one block does in two passes
        rows = ng.empty((64, LONG), np.float32)
        out, tree = ng.empty((64, 1), np.float32), ng.sum(rows, axis=1, keepdims=True)
    elif case == "random":  # its draws would change
        out, tree = ng.empty((1,), np.float32), ng.sum(x, keepdims=True) + ng.rand()
    else:
        out, tree = ng.empty((1,), np.float16), ng.sum(x, keepdims=True)
        out.rounding = True
    steps = _plan(ng, out, tree)
    assert len(steps) == 2 and all(s.finish is None for s in steps)


@pytest.mark.parametrize("rows, threads", [(3, 64), (16, 32)])
def test_a_few_rows_are_finished_by_the_last_block_a_warp_or_more_each(rows, threads):
    ng = RecordingGPU()
    x, out = ng.empty((rows, LONG), np.float16), ng.empty((rows, 1), np.float16)
    (step,) = _plan(ng, out, ng.max(x, axis=1, keepdims=True) * 2)
    assert step.finish.rows == rows
    spec = launch.prepare(step, ng.sms, ng.seed, 0, ng.clusters)
    assert spec.finish.args[-1] == threads  # threads a row: tpr ends the arguments


def test_a_value_broadcast_back_is_finished_then_read_by_the_next_kernel():
    ng = RecordingGPU()
    x = ng.empty((LONG,), np.float16)
    steps = _plan(ng, ng.empty((LONG,), np.float16), x - ng.mean(x, keepdims=True))
    assert [s.program.mode for s in steps] == ["partial", "ew"]
    assert steps[0].finish.out.buffer is steps[1].leaves[1].buffer


def test_the_launch_carries_both_argument_lists_and_the_counter_last():
    ng = RecordingGPU()
    x, out = ng.empty((LONG,), np.float32), ng.empty((), np.float32)
    (step,) = _plan(ng, out, ng.sum(x * 2.5))
    spec = launch.prepare(step, ng.sms, ng.seed, 7, ng.clusters)
    assert isinstance(spec.layout, LastBlock)
    assert spec.finish.grid == (1, 1, 1) and spec.grid[0] == step.chunks > 1
    assert spec.args[spec.call_index] == 7
    assert spec.args[spec.finish_offset + spec.finish.call_index] == 7
    assert len(spec.args) == spec.finish_offset + len(spec.finish.args) + 1
    source = generate.generate(step.program, spec.layout)
    assert len(source.arg_format) == len(spec.args)
    assert "ga_finish(" in source.text and "atomicAdd(ga_blocks_done" in source.text


def test_replays_fill_both_halves_and_take_a_counter_from_the_semaphores():
    ng = RecordingGPU()
    x, out = ng.empty((LONG,), np.float32), ng.empty((), np.float32)
    out[...] = ng.sum(x * 2.5)  # records
    x2, out2 = ng.empty((LONG,), np.float32), ng.empty((), np.float32)
    ng.launches.clear()
    out2[...] = ng.sum(x2 * 0.75)
    ((grid, _, args),) = ng.launches
    (step,) = _plan(ng, out2, ng.sum(x2 * 0.75))
    spec = launch.prepare(step, ng.sms, ng.seed, 0, ng.clusters)
    assert grid == spec.grid
    # the finishing half reads the partials, a temporary: compare the rest
    finish = spec.finish_offset
    assert args[0] not in (x2.ptr, out2.ptr) and args[finish + 1] == args[0]
    assert args[1] == x2.ptr and args[finish] == out2.ptr
    assert 0.75 in args[spec.first_scalar:spec.call_index]
    assert args[spec.call_index] == args[finish + spec.finish.call_index] > 0
    counters = ng.semaphores.stats()
    assert counters["blocks_in_use"] == 0 and counters["device_allocations"] == 1


def test_new_semaphore_blocks_are_zeroed_once_on_the_current_stream():
    zeroed = []
    addresses = iter(range(1 << 20, 1 << 40, 1 << 20))
    pool = semaphores.SemaphorePool(alloc=lambda n: _Raw(next(addresses)),
                                    zero=lambda ptr, n, s: zeroed.append((ptr, n, s)))
    first = pool.allocate(4)
    assert zeroed == [(first.ptr, semaphores.COUNTER_BYTES, None)]  # the counters only
    ptr = first.ptr
    first.free()
    again = pool.allocate(4)
    assert again.ptr == ptr and len(zeroed) == 1  # reused: already zero
    queue = types.SimpleNamespace(handle=0x5)  # a pycuda stream stand-in
    with stream.using(queue, None):
        second = pool.allocate(4)
    assert zeroed[-1] == (second.ptr, semaphores.COUNTER_BYTES, queue)


# -- on the GPU -------------------------------------------------------------

@pytest.mark.parametrize("name, dtype", [("sum", np.float32), ("mean", np.float16),
                                         ("max", np.float64), ("min", np.int32),
                                         ("any", np.bool_)])
def test_repeated_reductions_reset_the_counter(gpu_ng, name, dtype):
    ng = gpu_ng
    rng = np.random.default_rng(1)
    x = ng.empty((LONG,), dtype)
    out = ng.empty((), dtype if name != "mean" else np.float16)
    for k in range(6):
        host = (rng.random(LONG) * 2 ** (k % 3)).astype(dtype)
        if dtype == np.bool_:
            host = rng.random(LONG) < 1e-6 * k
        x[...] = ng.array(host)
        out[...] = getattr(ng, name)(x)
        want = getattr(np, name)(host.astype(np.float64) if dtype != np.bool_ else host)
        assert_matches(out.get(), np.asarray(want).astype(out.dtype), out.dtype,
                       scale=np.abs(host.astype(np.float64)).sum() / LONG * 8)
    assert ng.semaphores.stats()["blocks_in_use"] == 0


@pytest.mark.parametrize("shape, axis", [((3, LONG), 1), ((16, LONG // 4), 1), ((LONG, 10), 0)])
@pytest.mark.parametrize("name", ["sum", "max", "var"])
def test_a_few_rows_finished_by_the_last_block(gpu_ng, shape, axis, name):
    """Rows along the contiguous axis and along a strided one (columns)."""
    ng = gpu_ng
    host = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x = ng.array(host)
    for _ in range(3):  # the counter is back at zero for the next call
        got = getattr(ng, name)(x, axis=axis, keepdims=True).get()
        want = getattr(np, name)(host.astype(np.float64), axis=axis, keepdims=True)
        assert_matches(got, want.astype(np.float32), np.float32, scale=shape[axis])


def test_one_kernel_per_call_and_the_same_bits_every_time(gpu_ng):
    ng = gpu_ng
    x = ng.array(np.random.default_rng(2).standard_normal(3 * LONG + 5).astype(np.float32))
    first = float(ng.sum(ng.exp(-x * x) * ng.sin(3 * x) + 0.5 * x))
    before = ng.stats()["kernels_launched"]
    again = [float(ng.sum(ng.exp(-x * x) * ng.sin(3 * x) + 0.5 * x)) for _ in range(20)]
    assert ng.stats()["kernels_launched"] - before == 20
    assert again == [first] * 20
    want = np.sum(np.exp(-x.get().astype(np.float64) ** 2) * np.sin(3 * x.get().astype(np.float64))
                  + 0.5 * x.get())
    assert abs(first - want) <= 1e-5 * np.abs(x.get()).sum()


def test_two_reductions_in_one_expression(gpu_ng):
    ng = gpu_ng
    rng = np.random.default_rng(3)
    a, b = rng.random(LONG).astype(np.float32), rng.random(2 * LONG).astype(np.float32)
    out = ng.empty((), np.float32)
    out[...] = ng.sum(ng.array(a)) / ng.max(ng.array(b)) - 1
    assert_matches(out.get(), np.float32(a.astype(np.float64).sum() / b.max() - 1), np.float32,
                   scale=LONG)


def test_a_captured_reduction_replays_with_new_data(gpu_ng):
    ng = gpu_ng
    rng = np.random.default_rng(4)
    x, out = ng.empty((LONG,), np.float32), ng.empty((), np.float32)

    def step():
        out[...] = ng.sum(x * x)
    replay = ng.capture(step)
    for _ in range(4):
        host = rng.standard_normal(LONG).astype(np.float32)
        x[...] = ng.array(host)
        replay()
        assert_matches(out.get(), np.float32((host.astype(np.float64) ** 2).sum()), np.float32,
                       scale=LONG)
