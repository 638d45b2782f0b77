"""The compiled hot path (gpuarray.compiled): which copy of a module loads.

setup.py compiles the modules of ``compiled.MODULES`` with Cython; the
Python sources stay the fallback.  These tests check the choice (built or
not, ``GPUARRAY_PURE_PYTHON``, a source edited since the build) and that
both copies compute the same thing.
"""
import importlib.machinery
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpuarray
from gpuarray import compiled

ROOT = Path(__file__).resolve().parent.parent


def _built(name):
    """True when an extension module was built for ``name`` beside its source."""
    stem = ROOT / name.replace(".", "/")
    return any(Path(str(stem) + suffix).exists()
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def _run(code, **env):
    """Run ``code`` in a fresh interpreter; returns its standard output."""
    environment = {k: v for k, v in os.environ.items() if k != compiled.PURE_PYTHON_VARIABLE}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


_STATUS = """
    import json, gpuarray
    import gpuarray.fusion.dispatch, gpuarray.gemm.replay, gpuarray.cuda.stream
    print(json.dumps(gpuarray.compiled.status()))
"""


#: for tests of what happens with the extensions built
needs_extensions = pytest.mark.skipif(
    not all(map(_built, compiled.MODULES)),
    reason="the hot-path extensions are not built here (no Cython or C compiler)")


@needs_extensions
def test_the_built_modules_load_compiled():
    status = json.loads(_run(_STATUS))
    # the launch entry appears too: the compiled dispatcher cimports it
    assert set(status) <= set(compiled.MODULES + compiled.EXTENSIONS)
    assert status == {name: True for name in status} and set(compiled.MODULES) <= set(status)


def test_pure_python_variable_loads_every_source():
    status = json.loads(_run(_STATUS, GPUARRAY_PURE_PYTHON="1"))
    assert status == {name: False for name in compiled.MODULES}


def test_status_names_the_imported_modules():
    status = compiled.status()
    assert set(status) <= set(compiled.MODULES + compiled.EXTENSIONS)
    assert "gpuarray.core.optree" in status
    assert all(isinstance(v, bool) for v in status.values())


def test_both_copies_compute_the_same():
    code = """
        import json, numpy as np, gpuarray
        ng = gpuarray.CPU(seed=3)
        a = ng.array(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
        b = ng.array(np.arange(4, dtype=np.int16))
        out = ng.empty((3, 4), np.float32)
        out[:] = ng.maximum((a + b) * 2 - a / 3 + ng.sqrt(ng.abs(b)) * a - 1, 0)
        s = (a * 3).sum(axis=1)
        try:
            ng.full((2,), 300, dtype=np.uint8)
        except OverflowError as err:
            message = str(err)
        print(json.dumps([out.get().tolist(), s.get().tolist(), str((a + b).dtype), message]))
    """
    assert _run(code) == _run(code, GPUARRAY_PURE_PYTHON="1")


def _files(tmp_path, source_age, extension_age):
    """A source and an extension file, modified ``age`` seconds ago (None: absent)."""
    source, extension = tmp_path / "mod.py", tmp_path / "mod.so"
    now = 1_800_000_000
    source.write_text("")
    os.utime(source, (now - source_age, now - source_age))
    if extension_age is not None:
        extension.write_bytes(b"")
        os.utime(extension, (now - extension_age, now - extension_age))
    return str(source), [str(extension)]


def test_choose_loads_the_source_when_nothing_is_built(tmp_path):
    source, extensions = _files(tmp_path, 100, None)
    assert compiled.choose(source, extensions) == (source, None)


def test_choose_loads_the_extension_built_after_its_source(tmp_path):
    source, extensions = _files(tmp_path, 100, 50)
    assert compiled.choose(source, extensions) == (extensions[0], None)


def test_choose_tolerates_an_installer_writing_the_source_last(tmp_path):
    source, extensions = _files(tmp_path, 50, 51)
    assert compiled.choose(source, extensions) == (extensions[0], None)


def test_choose_loads_a_source_edited_since_the_build(tmp_path):
    source, extensions = _files(tmp_path, 10, 100)
    path, why = compiled.choose(source, extensions)
    assert path == source and "newer than the compiled module" in why


def test_choose_loads_the_source_when_pure_python_is_asked(tmp_path):
    source, extensions = _files(tmp_path, 100, 50)
    path, why = compiled.choose(source, extensions, pure_python=True)
    assert path == source and compiled.PURE_PYTHON_VARIABLE in why


@pytest.mark.parametrize("value, expected", [("1", True), ("yes", True), ("0", False),
                                             ("", False)])
def test_pure_python_variable_values(monkeypatch, value, expected):
    monkeypatch.setenv(compiled.PURE_PYTHON_VARIABLE, value)
    assert compiled.pure_python_requested() is expected


def test_compiled_functions_keep_their_signatures_and_docstrings():
    import inspect
    assert gpuarray.CPU.sqrt.__doc__.startswith("Elementwise ``sqrt(a)``")
    assert list(inspect.signature(gpuarray.CPU.sqrt).parameters)[:2] == ["self", "args"]
    assert inspect.signature(gpuarray.core.optree.elementwise).parameters.keys() == {
        "backend", "name", "args"}
    assert gpuarray.core.optree.elementwise.__doc__.startswith("Build an elementwise node")


@needs_extensions
def test_one_edited_module_loads_every_one_from_source():
    # extension types derive from each other's: a compiled Tensor cannot
    # build on an Expression loaded from source, so all go to source together
    import warnings
    finder = compiled._Finder(False)
    finder.edited = "gpuarray.core.arraylike"
    folder = [str(Path(gpuarray.__file__).parent / "core")]
    with pytest.warns(RuntimeWarning, match="every compiled module runs from source"):
        first = finder.find_spec("gpuarray.core.optree", folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        second = finder.find_spec("gpuarray.core.array", folder)
    assert first.origin.endswith("optree.py") and second.origin.endswith("array.py")
