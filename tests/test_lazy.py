"""Lazy arrays: the results of elementwise functions and reductions are
op-trees that run when a value is needed, once, and keep the value.

Both factories, numpy as the oracle: numpy-style code (no ``out[:] =``)
runs as one fused kernel per value needed; a second use of the value runs
nothing; what needs values (indexing, printing, host conversions, views,
iteration, in-place writes, sorting) sees the kept value; trees built on
an evaluated array read its value rather than running its tree again, so
writing to an input afterwards does not change it; ``ng.evaluate`` and
``copy`` give new tensors.
"""
import numpy as np
import pytest

from conftest import to_host


def _launched(ng):
    return ng.stats()["kernels_launched"]


def test_numpy_style_code_fuses_on_its_own(ng):
    host = np.linspace(-2, 2, 10_000).astype(np.float32)
    x = ng.asarray(host)
    before = _launched(ng)
    y = ng.exp(-x * x) * ng.sin(3 * x) + 0.5 * x
    total = float(ng.sum(y))
    assert _launched(ng) - before <= 2
    want = np.sum(np.exp(-host * host) * np.sin(3 * host) + 0.5 * host, dtype=np.float64)
    assert total == pytest.approx(want, abs=1e-3)


def test_a_value_needed_twice_runs_once(ng):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = ng.sqrt(ng.asarray(host)) + 1
    want = np.sqrt(host) + 1
    before = _launched(ng)
    np.testing.assert_allclose(y.get(), want, rtol=1e-6)
    first = _launched(ng) - before
    assert first == 1
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    np.testing.assert_allclose(to_host(y[1]), want[1], rtol=1e-6)
    assert len(y) == 3 and y.shape == (3, 4)
    assert [row.shape for row in y] == [(4,)] * 3
    assert y.tolist()[2][3] == pytest.approx(want[2, 3])
    assert y.item(5) == pytest.approx(want.flat[5])
    assert str(y) == str(y.get())
    assert repr(y).endswith(", dtype=float32, lazy=True)")
    np.testing.assert_allclose(to_host(y.reshape(4, 3)), want.reshape(4, 3), rtol=1e-6)
    np.testing.assert_allclose(to_host(y.ravel()), want.ravel(), rtol=1e-6)
    assert _launched(ng) - before == first  # views and reads of the kept value run nothing


def test_scalar_conversions_of_a_lazy_reduction(ng):
    host = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    x = ng.asarray(host)
    assert float(ng.sum(x)) == 6.0
    assert int(ng.max(x)) == 4
    assert bool(ng.all(x > -5)) and not bool(ng.any(x > 5))
    assert ng.argmax(x).item() == 3
    with pytest.raises(TypeError, match="only 0-dimensional arrays"):
        float(ng.sum(x, axis=0))


def test_trees_built_later_read_the_kept_value(ng):
    host = np.arange(6, dtype=np.float32)
    a = ng.asarray(host)
    y = a * 2
    y.get()
    a[:] = 100  # an input written after y was evaluated: y keeps its value, as numpy's would
    np.testing.assert_array_equal(to_host(y + 1), host * 2 + 1)
    out = ng.empty(6, np.float32)
    out[:] = y
    np.testing.assert_array_equal(to_host(out), host * 2)
    z = a * 2  # not evaluated yet: runs on what a holds when it is needed
    a[:] = 1
    np.testing.assert_array_equal(to_host(z), np.full(6, 2, np.float32))


def test_writes_go_to_the_kept_value_and_copies_are_new(ng):
    host = np.array([3.0, 1.0, 2.0], np.float32)
    y = ng.asarray(host) * 1
    y[0] = 9
    np.testing.assert_array_equal(to_host(y), [9, 1, 2])
    fresh = ng.evaluate(y)
    copied = y.copy()
    fresh[:] = 0
    copied[:] = 0
    np.testing.assert_array_equal(to_host(y), [9, 1, 2])
    y.sort()
    np.testing.assert_array_equal(to_host(y), [1, 2, 9])
    assert y.fill(4) is y
    np.testing.assert_array_equal(to_host(y), [4, 4, 4])


def test_describe_shows_the_tree_and_evaluates_nothing(ng):
    x = ng.ones((2, 3), np.float32)
    y = ng.exp(x) + ng.sum(x, axis=1, keepdims=True)
    before = _launched(ng)
    text = y.describe()
    assert text.startswith("add(exp(") and "sum(" in text
    assert _launched(ng) == before
    assert y.__array_namespace__() is ng and y.itemsize == 4 and y.nbytes == 24
