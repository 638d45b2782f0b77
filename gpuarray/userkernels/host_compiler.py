"""The host C++ compiler: C++ source -> a loaded shared library's kernel.

In: C++ source text defining ``extern "C" void ga_host_kernel(const long
long* meta, void* const* pointers)`` (:mod:`.host_source` writes it).
Out: that function, loaded with ctypes.  Nothing here knows what the
source computes.

Compiles with ``$CXX``, else ``c++``, ``g++`` or ``clang++`` from PATH,
``-O2 -shared -fPIC -std=c++17``.  Libraries are kept on disk beside the
GPU's cubins (:func:`gpuarray.cuda.compiler.cache_dir`, under ``host/``),
named by a hash of the source, the compiler and its flags, so a new
process compiles nothing it compiled before; loaded kernels are kept in
memory by the same hash.  No pycuda: the CPU factory runs it.
"""
import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from ..cuda.compiler import CompileError, cache_dir, save_failed_source

_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c++17")
#: the kernel every library exports
SYMBOL = "ga_host_kernel"
#: ``compiled``: compiler runs in this process; ``loaded``: libraries loaded
COUNTS = Counter()
#: hash of source and compiler -> the loaded kernel (its library stays loaded)
_LOADED = {}


def kernel(text):
    """The loaded ``ga_host_kernel`` of ``text``: from memory, else from the
    disk cache, else compiled.

    Returns
    -------
    (function, bool)
        The ctypes function (``meta`` and ``pointers`` addresses) and
        whether it was loaded by this call (not found in memory).

    Raises
    ------
    CompileError
        No C++ compiler, or the source does not compile (the compiler's
        message; the source is saved beside the cache).
    """
    cxx = compiler_command()
    digest = _hash(text, cxx)
    found = _LOADED.get(digest)
    if found is not None:
        return found, False
    path = cache_dir() / "host" / f"{digest}.so"
    try:
        function = _load(path) if path.exists() else None
    except OSError:  # damaged, or not loadable here: built again
        function = None
    if function is None:
        function = _compile(text, cxx, path, digest)
    COUNTS["loaded"] += 1
    _LOADED[digest] = function
    return function, True


@functools.cache
def compiler_command():
    """The host C++ compiler: (its command's words, its version line -- part
    of the libraries' names, so that another compiler builds them again).

    Raises
    ------
    CompileError
        None is installed.
    """
    words = shlex.split(os.environ.get("CXX", ""))
    if not words:
        found = next(filter(None, map(shutil.which, ("c++", "g++", "clang++"))), None)
        if found is None:
            raise CompileError(
                "user kernels on the CPU factory compile C++ with the host compiler, and none "
                "was found (c++, g++ or clang++ on PATH, or $CXX): install one, e.g. "
                "'apt-get install g++' or 'conda install gxx', or use the GPU factory")
        words = [found]
    try:
        version = subprocess.run([*words, "--version"], capture_output=True, text=True).stdout
    except OSError as err:
        raise CompileError(f"the host C++ compiler {words[0]!r} does not run: {err}") from None
    return tuple(words), version.split("\n", 1)[0]


def _hash(text, cxx):
    """The library's name: the source, the compiler, its flags and the machine."""
    h = hashlib.sha256()
    for part in (text, *cxx[0], cxx[1], *_FLAGS, platform.machine()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _compile(text, cxx, path, digest):
    """Compile ``text``, keep the library at ``path`` (atomically: it is built
    beside it, then renamed) and load it; a cache that cannot be written
    only costs compiles in later processes."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=path.parent))
    except OSError:
        tmp = Path(tempfile.mkdtemp(prefix="gpuarray-host-"))
    try:
        src, lib = tmp / "kernel.cpp", tmp / "kernel.so"
        src.write_text(text)
        result = subprocess.run([*cxx[0], *_FLAGS, "-o", str(lib), str(src)],
                                capture_output=True, text=True)
        COUNTS["compiled"] += 1
        if result.returncode:
            saved = save_failed_source(text, f"{digest}.cpp")
            raise CompileError(f"user kernel failed to compile for the host ({cxx[0][0]}); "
                               f"source saved at {saved}\n{result.stderr}")
        try:
            os.replace(lib, path)
        except OSError:
            return _load(lib)
        return _load(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load(path):
    function = getattr(ctypes.CDLL(str(path)), SYMBOL)
    function.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    function.restype = None
    return function
