"""Finding the CUDA math libraries (cuFFT, cuSOLVER) that pip or a toolkit installed.

In: a library's stem (``"cufft"``), the sonames to fall back on, and the
pip package that provides it.  Out: the loaded ``ctypes.CDLL``, or
:class:`LibraryUnavailable` naming the package to install.

Searched in order: the ``nvidia-*`` wheels on ``sys.path`` (what PyTorch
and CuPy install: ``nvidia/<stem>/lib``, ``nvidia/cu13/lib``,
``nvidia/cu12/lib``), ``CUDA_HOME``/``CUDA_PATH`` and ``/usr/local/cuda``,
then the loader's own path.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

_loaded = {}


class LibraryUnavailable(RuntimeError):
    """A CUDA library was not found; the message says how to install it."""


def _candidates(stem, sonames):
    paths = []
    pattern = f"lib{stem}.so*"
    for entry in sys.path:
        for sub in (f"nvidia/{stem}/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            paths += sorted(glob.glob(os.path.join(entry, sub, pattern)), reverse=True)
    for root in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                              "/usr/local/cuda")):
        paths += sorted(glob.glob(os.path.join(root, "lib64", pattern)), reverse=True)
    found = ctypes.util.find_library(stem)
    return paths + ([found] if found else []) + list(sonames)


def load(stem, sonames, package):
    """The CUDA library ``lib<stem>``, loaded once.

    Raises
    ------
    LibraryUnavailable
        Nowhere to be found; the message names the pip ``package``.
    """
    if stem not in _loaded:
        for candidate in _candidates(stem, sonames):
            try:
                _loaded[stem] = ctypes.CDLL(candidate)
                break
            except OSError:
                continue
        else:
            raise LibraryUnavailable(
                f"the CUDA library lib{stem} was not found: install it with `pip install "
                f"{package}` (CUDA 13) or set CUDA_HOME to a CUDA toolkit")
    return _loaded[stem]
