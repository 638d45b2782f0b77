"""The package's import graph runs one way, with no cycles.

The graph is read from every module's source, imports inside functions
included, by the same code that draws it in the docs
(``docs/_ext/package_graph.py``).  Each subpackage may import only the
subpackages named for it in ``ALLOWED``; the factories and ``__init__`` at
the top may import anything, and nothing below imports them.  A new
subpackage must be added to ``ALLOWED`` with the layers it builds on.
"""
import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import package_graph  # noqa: E402  (lives with the docs it draws)

#: subpackage -> the subpackages its modules may import (itself included)
ALLOWED = {
    "core": {"core"},
    "cuda": {"core", "cuda"},
    "fusion": {"core", "cuda", "fusion"},
    "gemm": {"core", "cuda", "gemm"},
    "conv": {"core", "cuda", "gemm", "conv"},
    "autodiff": {"core", "autodiff"},
    "nn": {"core", "nn"},
    "rnn": {"core", "cuda", "rnn"},
    "algorithms": {"core", "cuda", "algorithms"},
    "datasets": {"datasets"},
    "userkernels": {"core", "cuda", "fusion", "userkernels"},
    "fft": {"core", "cuda", "fft"},
    "linalg": {"core", "cuda", "linalg"},
}


@lru_cache(maxsize=None)
def _graph():
    return package_graph.import_graph()


def _layer(module):
    """The subpackage ``module`` lives in, or None for the top."""
    box = package_graph.unit(module)
    return box[:-1] if box and box.endswith("/") else None


def test_every_subpackage_has_a_rule():
    subpackages = {p.parent.name for p in package_graph.PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(ALLOWED), "add the new subpackage to ALLOWED with its layers"


@pytest.mark.parametrize("module", sorted(_graph()))
def test_imports_run_one_way(module):
    layer = _layer(module)
    if layer is None:
        return  # the top: the factories and the package's public names
    bad = sorted(m for m in _graph()[module] if _layer(m) not in ALLOWED[layer])
    assert not bad, f"{module} ({layer}/) may import only {sorted(ALLOWED[layer])}, imports {bad}"


def test_no_import_cycles():
    graph = _graph()
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(dep):] + [dep]))
            if dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_the_graph_is_read():
    graph = _graph()
    assert "gpuarray.core.dtypes" in graph["gpuarray.core.optree"]
    assert "gpuarray.fusion.plan" in graph["gpuarray.fusion.dispatch"]
    assert "gpuarray.cuda.tensor_maps" in graph["gpuarray.gemm.replay"]
    assert "gpuarray.gemm.functions" in graph["gpuarray.cpu"]
