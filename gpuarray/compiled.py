"""The compiled hot path: which modules Cython compiles, and which copy loads.

In: the names in :data:`MODULES` (setup.py compiles each, unchanged, into
an extension module beside its source when Cython and a C compiler are
there) and the environment variable ``GPUARRAY_PURE_PYTHON``.  Out: an
import hook choosing, per module, the compiled extension or the Python
source, and :func:`status`, saying which was loaded (also for the
:data:`EXTENSIONS`, compiled code with no Python source).

Why whole modules, compiled as they are: the hot path of ``out[:] = expr``
is op-tree building, signatures and dispatch -- many small Python
functions calling each other.  Compiling them (no rewrite, no second
implementation to keep in step) removes the interpreter's frame and
bytecode overhead from every call between them; the Python source stays
the one definition and the fallback wherever the extension is not built.

The Python source is loaded instead of the extension when

* ``GPUARRAY_PURE_PYTHON=1`` is set (to compare, or to debug with pdb), or
* any module's source is newer than its extension: an edited module in a
  development checkout runs as edited, with a warning to rebuild
  (``make python``), never as the stale compiled copy -- and then every
  module of the list does, since their extension types derive from each
  other's (``Tensor`` from ``Expression`` from ``ArrayLike`` from
  ``Operand``) and a compiled subclass of a class loaded from source does
  not work.

It sits at the top of the package, not in a subpackage, because it
covers modules of every subpackage and must act before any of them is
imported: ``gpuarray/__init__.py`` calls :func:`install` first.  It
imports nothing from the package, and importing it changes nothing:
setup.py reads :data:`MODULES` from it before the package is installed.
"""
import importlib.machinery
import importlib.util
import os
import sys
import warnings

#: modules on the host path of every call, compiled by setup.py
MODULES = (
    "gpuarray.core.operand",
    "gpuarray.core.signatures",
    "gpuarray.core.arraylike",
    "gpuarray.core.optree",
    "gpuarray.core.scalars",
    "gpuarray.core.array",
    "gpuarray.core.backend",
    "gpuarray.core.functions",
    "gpuarray.core.dtypes",
    "gpuarray.core.shapes",
    "gpuarray.fusion.slots",
    "gpuarray.fusion.dispatch",
    "gpuarray.gpu",
    "gpuarray.gemm.functions",
    "gpuarray.gemm.call",
    "gpuarray.gemm.fuse",
    "gpuarray.gemm.replay",
    "gpuarray.conv.fuse",
    "gpuarray.conv.functions",
    "gpuarray.conv.call",
    "gpuarray.conv.convolution",
    "gpuarray.conv.implicit",
    "gpuarray.conv.small_c",
    "gpuarray.conv.pooling",
    "gpuarray.cuda.driver",
    "gpuarray.cuda.tensor_maps",
    "gpuarray.cuda.context",
    "gpuarray.cuda.stream",
    "gpuarray.cuda.mempool",
)

#: compiled modules with no Python source, built by setup.py beside the
#: others: C-level entry points whose callers take another route where they
#: are not built (the kernel launch entry: gpuarray.cuda.driver launches
#: through ctypes without it).  GPUARRAY_PURE_PYTHON leaves them in use, as
#: it leaves pycuda's compiled code: it selects the hot path's Python sources.
EXTENSIONS = ("gpuarray.cuda.launch_entry",)

#: set to 1 to load every module of MODULES from its Python source
PURE_PYTHON_VARIABLE = "GPUARRAY_PURE_PYTHON"

# wheel installers write the source and the extension moments apart, in
# either order: a source newer by less than this is not an edit
_EDIT_MARGIN_S = 2.0


def pure_python_requested():
    """True when ``GPUARRAY_PURE_PYTHON`` asks for the Python sources."""
    return os.environ.get(PURE_PYTHON_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def choose(source, extensions, pure_python=False):
    """The file to load a compiled module from: its extension or its source.

    Parameters
    ----------
    source : str
        Path of the module's ``.py`` file.
    extensions : list of str
        Paths of extension files built from it (the first existing one wins).
    pure_python : bool
        Load the source whatever is built.

    Returns
    -------
    (str, str or None)
        The path to load, and why it is the source although an extension
        exists (None when the extension is loaded or none exists).
    """
    built = [path for path in extensions if os.path.exists(path)]
    if not built:
        return source, None
    if pure_python:
        return source, f"{PURE_PYTHON_VARIABLE} is set"
    if os.path.getmtime(source) > os.path.getmtime(built[0]) + _EDIT_MARGIN_S:
        return source, "its source is newer than the compiled module (rebuild: make python)"
    return built[0], None


def _paths(name):
    """(source, candidate extensions) of a module of :data:`MODULES`."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stem = os.path.join(root, *name.split("."))
    return stem + ".py", [stem + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES]


def edited_module():
    """The first module of :data:`MODULES` edited since its build, or None."""
    for name in MODULES:
        source, extensions = _paths(name)
        if os.path.exists(source) and choose(source, extensions)[1] is not None:
            return name
    return None


class _Finder:
    """Meta-path finder for :data:`MODULES` applying :func:`choose`."""

    def __init__(self, pure_python):
        self.pure_python = pure_python
        self.edited = None if pure_python else edited_module()
        self.warned = False

    def find_spec(self, name, path=None, target=None):
        if name not in MODULES or not path:
            return None
        source, extensions = _paths(name)
        if not os.path.exists(source):
            return None  # an installation without sources: the default import
        chosen, why = choose(source, extensions, self.pure_python or self.edited is not None)
        if self.edited is not None and why is not None:
            why = None if self.warned else (
                f"{self.edited}'s source is newer than its compiled module, so every "
                "compiled module runs from source (rebuild: make python)")
            self.warned = True  # said once, for the first of them imported
        if why is not None and not self.pure_python:
            warnings.warn(f"{name}: running the Python source: {why}", RuntimeWarning,
                          stacklevel=2)
        if chosen == source:
            loader = importlib.machinery.SourceFileLoader(name, source)
        else:
            loader = importlib.machinery.ExtensionFileLoader(name, chosen)
        return importlib.util.spec_from_file_location(name, chosen, loader=loader)


def install():
    """Put the import hook in front of Python's own finders (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder(pure_python_requested()))


def status():
    """Which hot-path modules run compiled.

    Returns
    -------
    dict
        Module name -> True (the compiled extension was loaded) or False
        (the Python source: not built, ``GPUARRAY_PURE_PYTHON`` set, or
        the source edited since the build), for the modules imported so
        far; an entry of :data:`EXTENSIONS` appears when it was loaded.
    """
    return {name: not sys.modules[name].__file__.endswith(".py")
            for name in MODULES + EXTENSIONS if name in sys.modules}
