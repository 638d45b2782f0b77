"""Python floats passed to a captured step: parameters of its graph.

On the GPU: a float used only as a scalar operand of fused assignments
changes between calls without recording again (one graph, its kernel nodes
given the new value; nothing compiled, nothing allocated), in elementwise
kernels, reductions split in two kernels, recipes recorded before the
capture or during it, positional, keyword and tuple arguments alike, and
as a product's alpha or beta (applied after the product while recording);
a float used on the host (a branch, arithmetic with other numbers, a
math function) keys the graphs on its value, as ``trace_numbers=False``
does for all of them; a step that raises with the stand-ins is recorded
again with plain floats, with a warning; ``strict=True`` raises only
where another graph would be recorded.  Every call is checked against numpy.
Without a GPU: the stand-in itself -- what it gives, when it marks itself
escaped, that it is a scalar operand of tensors and expressions -- and the
bookkeeping: the stand-ins follow the key's order of floats through nested
and named tuples and keyword arguments, escaped positions stay plain, and
the graph key holds the escaped floats' values.
"""
import collections
import math
import numbers
import warnings

import numpy as np
import pytest

import gpuarray
from gpuarray.core.step_numbers import StepNumber
from gpuarray.cuda import capture
from test_capture import _mlp_step, _problem

F32 = np.float32
VALUES = (2.0, 3.0, 0.5, -1.25, 2.0)


def _host(n=64, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(F32)


def test_a_changing_float_updates_the_graph(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B = ng.array(a), ng.empty(a.shape, F32)

    @ng.jit
    def step(x, y, s):
        y[:] = x * s + s

    step(A, B, 1.0)
    compiled, allocations = ng.stats()["kernels_compiled"], ng.stats()["device_allocations"]
    for s in VALUES:
        step(A, B, s)
        np.testing.assert_allclose(B.get(), a * F32(s) + F32(s), rtol=1e-5, atol=1e-6)
    assert len(step.graphs) == 1
    assert ng.stats()["kernels_compiled"] == compiled
    assert ng.stats()["device_allocations"] == allocations


def test_sgd_with_a_decaying_learning_rate_is_one_graph(gpu_ng):
    ng, rng = gpu_ng, np.random.default_rng(1)
    w, v = rng.standard_normal(1000).astype(F32), np.zeros(1000, F32)
    W, V, G = ng.array(w), ng.array(v), ng.empty((1000,), F32)

    @ng.jit
    def update(weights, velocity, grad, lr, momentum):
        velocity[:] = velocity * momentum - grad * lr
        weights[:] = weights + velocity

    for k in range(6):
        g = rng.standard_normal(1000).astype(F32)
        G[:] = ng.array(g)
        lr = 0.1 * 0.5 ** k
        update(W, V, G, lr, 0.9)
        v = v * F32(0.9) - g * F32(lr)
        w = w + v
        np.testing.assert_allclose(W.get(), w, rtol=1e-5, atol=1e-6)
    assert len(update.graphs) == 1


def test_a_training_step_with_a_learning_rate_schedule(gpu_ng):
    ng, rng = gpu_ng, np.random.default_rng(4)
    captured = _problem(ng, rng)
    eager = [ng.array(t.get()) for t in captured]
    step = ng.capture(lambda *t: _mlp_step(ng, *t))
    for k in range(4):
        lr = 0.02 * 0.5 ** k
        G, G_eager = step(*captured, lr), _mlp_step(ng, *eager, lr)
        np.testing.assert_allclose(G.get(), G_eager.get(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(captured[2].get(), eager[2].get(), rtol=1e-4, atol=1e-6)
    # the SGD updates ``W - lr * dot(...)`` are fused assignments of the products' results
    assert len(step.graphs) == 1


def test_reductions_and_recipes_recorded_before_the_capture(gpu_ng):
    ng, a = gpu_ng, _host(4096, seed=2).reshape(64, 64)
    A, out, total = ng.array(a), ng.empty((64, 64), F32), ng.empty((1,), F32)
    out[:] = A - ng.max(A, axis=1, keepdims=True) * 3.0  # its recipe exists before

    @ng.jit
    def step(x, o, t, s):
        o[:] = x - ng.max(x, axis=1, keepdims=True) * s
        t[:] = ng.sum(x * s)

    for s in VALUES:
        step(A, out, total, s)
        np.testing.assert_allclose(out.get(), a - a.max(axis=1, keepdims=True) * F32(s),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(total.get()[0], (a * F32(s)).sum(dtype=np.float64),
                                   rtol=1e-4, atol=1e-3)
    assert len(step.graphs) == 1


def test_keyword_and_tuple_floats(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B = ng.array(a), ng.empty(a.shape, F32)

    @ng.jit
    def step(x, y, pair, scale=1.0):
        y[:] = (x + pair[0]) * pair[1] * scale

    for k, s in enumerate(VALUES):
        step(A, B, (s, s + 1), scale=0.5 * k)
        np.testing.assert_allclose(B.get(), (a + F32(s)) * F32(s + 1) * F32(0.5 * k),
                                   rtol=1e-5, atol=1e-6)
    assert len(step.graphs) == 1


def test_floats_used_on_the_host_key_the_graphs(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B, C = ng.array(a), ng.empty(a.shape, F32), ng.empty(a.shape, F32)

    @ng.jit
    def step(x, y, z, s, t):
        y[:] = x * s if s > 1 else x - s   # s decides on the host
        z[:] = x * t + math.exp(t)         # so does t, through math.exp

    for s, t in ((2.0, 0.5), (0.5, 0.5), (3.0, -1.0), (2.0, 0.5)):
        step(A, B, C, s, t)
        np.testing.assert_allclose(B.get(), a * F32(s) if s > 1 else a - F32(s), rtol=1e-6)
        np.testing.assert_allclose(C.get(), a * F32(t) + F32(math.exp(t)), rtol=1e-5)
    assert len(step.graphs) == 3


def test_a_float_used_both_ways_keys_the_graphs(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B = ng.array(a), ng.empty(a.shape, F32)

    @ng.jit
    def step(x, y, s):
        y[:] = x * s           # a kernel argument...
        y[:] = y + s * 2       # ...and host arithmetic: its value keys the graph

    for s in (1.0, 2.0, 1.0):
        step(A, B, s)
        np.testing.assert_allclose(B.get(), a * F32(s) + F32(2 * s), rtol=1e-6)
    assert len(step.graphs) == 2


def test_a_products_alpha_and_beta_stay_graph_parameters(gpu_ng):
    ng, rng = gpu_ng, np.random.default_rng(3)
    x, w = rng.standard_normal((32, 16)).astype(F32), rng.standard_normal((16, 8)).astype(F32)
    bias, c = rng.standard_normal(8).astype(F32), rng.standard_normal((32, 8)).astype(F32)
    X, W, BIAS = ng.array(x), ng.array(w), ng.array(bias)
    Y, Z, R = (ng.empty((32, 8), F32) for _ in range(3))

    @ng.jit
    def step(s, t):
        Y[:] = s * ng.dot(X, W)
        ng.dot(X, W, Z, alpha=s, beta=t)
        R[:] = ng.relu(ng.dot(X, W) * s + BIAS)

    product = x.astype(np.float64) @ w
    for s, t in ((0.5, 1.0), (2.0, -0.5), (-1.0, 0.25)):
        Z[:] = ng.array(c)  # beta's C, outside the step
        step(s, t)
        np.testing.assert_allclose(Y.get(), s * product, rtol=1e-2, atol=1e-2)
        np.testing.assert_allclose(Z.get(), s * product + t * c, rtol=1e-2, atol=1e-2)
        np.testing.assert_allclose(R.get(), np.maximum(s * product + bias, 0), rtol=1e-2,
                                   atol=1e-2)
    # inside the recording the products run first and a fused kernel applies
    # s and t, whose nodes the later calls update
    assert len(step.graphs) == 1


def test_a_step_insisting_on_floats_is_recorded_with_plain_ones(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B = ng.array(a), ng.empty(a.shape, F32)

    @ng.jit
    def step(x, y, s, t):
        if not isinstance(s, float):
            raise TypeError("s must be a float")
        y[:] = x * ng.full(x.shape, s, F32) + t

    with pytest.warns(RuntimeWarning, match="s must be a float.*recorded again"):
        step(A, B, 2.0, 1.0)
    np.testing.assert_allclose(B.get(), a * 2 + 1, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # known now: no stand-ins, no second warning
        for s in (3.0, 2.0):
            step(A, B, s, 1.0)
            np.testing.assert_allclose(B.get(), a * F32(s) + 1, rtol=1e-6)
    assert len(step.graphs) == 2


def test_a_step_failing_either_way_raises_its_own_error(gpu_ng):
    ng = gpu_ng
    A = ng.array(np.arange(4, dtype=F32))

    @ng.jit
    def step(a, s):
        return ng.evaluate(a * s).get()  # a host read: never capturable

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about a second recording
        with pytest.raises(RuntimeError, match="host"):
            step(A, 2.0)
    assert not step.graphs


def test_without_tracing_and_strict(gpu_ng):
    ng, a = gpu_ng, _host()
    A, B = ng.array(a), ng.empty(a.shape, F32)

    def scale(x, y, s):
        y[:] = x * s

    keyed = ng.capture(scale, trace_numbers=False)
    for s in (2.0, 3.0, 2.0):
        keyed(A, B, s)
        np.testing.assert_allclose(B.get(), a * F32(s), rtol=1e-6)
    assert len(keyed.graphs) == 2
    strict = ng.jit(strict=True)(scale)
    strict(A, B, 2.0)
    strict(A, B, 5.0)  # the same graph, updated: nothing to refuse
    np.testing.assert_allclose(B.get(), a * F32(5.0), rtol=1e-6)
    with pytest.raises(ValueError, match="strict=True"):
        strict(A[:3], B[:3], 2.0)
    branching = ng.jit(strict=True)(lambda x, y, s: scale(x, y, s if s > 0 else 0.0))
    branching(A, B, 1.0)
    with pytest.raises(ValueError, match="strict=True"):
        branching(A, B, 2.0)


# -- without a GPU ------------------------------------------------------------

class _Recording:
    def __init__(self):
        self.active, self.escaped = True, set()


def test_a_stand_in_gives_what_its_float_gives_and_says_so():
    recording = _Recording()
    x = StepNumber(2.5, 3, recording)
    assert isinstance(x, numbers.Real) and not isinstance(x, float)
    assert not recording.escaped
    assert (x + 1, 1 - x, x * x, x / 2, 7 // x, x % 2, x ** 2, divmod(x, 2)) == (
        3.5, -1.5, 6.25, 1.25, 2.0, 0.5, 6.25, (1.0, 0.5))
    assert recording.escaped == {3}
    for use in (float, int, bool, str, repr, hash, round, math.floor, abs, np.asarray,
                lambda v: v > 1, lambda v: v == 2.5, lambda v: f"{v:.1f}", lambda v: -v,
                lambda v: v.is_integer(), math.exp):
        recording.escaped.clear()
        use(x)
        assert recording.escaped == {3}
    assert float(x) == 2.5 and f"{x:.1f}" == "2.5" and np.asarray(x).dtype == np.float64
    with pytest.raises(AttributeError, match="no attribute 'backend'"):
        x.backend
    recording.active, recording.escaped = False, set()
    assert x * 2 == 5.0 and not recording.escaped  # a finished recording notes nothing


def test_a_stand_in_is_a_scalar_operand_of_expressions():
    ng, recording = gpuarray.CPU(), _Recording()
    x = StepNumber(0.5, 0, recording)
    T = ng.array(np.arange(4, dtype=F32))
    trees = [T * x, x * T, T - x, x - T, ng.multiply(T, x), ng.maximum(x, T), x < T]
    assert not recording.escaped  # building trees uses no value
    assert all(tree.dtype == (np.bool_ if k == 6 else F32) for k, tree in enumerate(trees))
    np.testing.assert_array_equal(ng.evaluate(trees[3]).get(), 0.5 - np.arange(4, dtype=F32))


class _Pair(collections.namedtuple("_Pair", "lr momentum")):
    pass


class _Frozen(tuple):
    """A tuple subclass that cannot be rebuilt from its items."""

    def __new__(cls, items, tag):
        self = super().__new__(cls, items)
        self.tag = tag
        return self


def _stand_ins_in_order(values):
    """Every stand-in among ``values`` (nested tuples walked), in order."""
    found = []
    for value in values:
        if isinstance(value, StepNumber):
            found.append(value)
        elif isinstance(value, tuple):
            found += _stand_ins_in_order(value)
    return found


def test_stand_ins_follow_the_keys_order_of_floats():
    args = (1.0, (2.0, "s", (3.0, 4)), None, _Pair(5.0, 6.0), _Frozen((7.0,), "x"), True)
    kwargs = {"z": 8.0, "a": (9.0,)}
    floats = []
    structure = (capture._key(None, args, floats),
                 capture._key(None, tuple(sorted(kwargs.items())), floats))
    # floats key by their type; ints, bools and strings by their value
    assert capture._key(None, (1.5, "s"), []) == capture._key(None, (2.5, "s"), [])
    assert capture._key(None, (1,), []) != capture._key(None, (2,), [])
    assert capture._key(None, (1.5,), None) != capture._key(None, (2.5,), None)  # not traced
    assert floats == [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 8.0]
    tracer = capture._Tracer(floats, escaped=(1,))
    replaced = tracer.stand_ins(args)
    named = tracer.stand_ins(tuple(kwargs[name] for name in sorted(kwargs)))
    assert type(replaced[3]) is _Pair and replaced[4] is args[4] and replaced[5] is True
    numbers_found = _stand_ins_in_order(replaced + named)
    # position 1 was escaped before (passed as it is), and the floats of a
    # tuple subclass that cannot be rebuilt (position 5) become escaped
    assert [n.index for n in numbers_found] == [0, 2, 3, 4, 6, 7]
    assert [n.value for n in numbers_found] == [floats[n.index] for n in numbers_found]
    assert replaced[1][0] == 2.0 and tracer.escaped == {1, 5}
    assert capture._graph_key(structure, (1, 5), floats) == (structure, (2.0, 7.0))
