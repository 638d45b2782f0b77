"""Compilation and caching: CUDA C source -> cubin bytes.

In: CUDA C source text, the headers it includes (name -> text; the fusion
compiler passes its prelude) and a target architecture (``sm_90``).
Out: cubin bytes, ready for :func:`gpuarray.cuda.driver.load_module_data`
(or pycuda's ``module_from_buffer``).  Nothing here knows what the source
computes.

Compiles with NVRTC (the ``cuda-bindings`` package) when it is importable
-- tens of milliseconds per kernel -- and otherwise with ``nvcc -cubin``.
Cubins are kept on disk under ``$GPUARRAY_CACHE_DIR`` (default
``~/.cache/gpuarray``), named by a hash of the source, the headers and
the architecture, so a new process compiles nothing it compiled before.
The in-memory cache of loaded kernels, keyed by program structure and
layout class, lives with the factory (:mod:`gpuarray.gpu`).
"""
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_OPTIONS = ("-std=c++17", "-default-device")


class CompileError(RuntimeError):
    """A generated kernel failed to compile; the message names its saved source."""


def cache_dir():
    """Directory of the on-disk cubin cache."""
    root = os.environ.get("GPUARRAY_CACHE_DIR") or Path.home() / ".cache" / "gpuarray"
    return Path(root)


def source_hash(text, arch, headers=None):
    """Hash naming a cubin: the source, its headers and the target."""
    h = hashlib.sha256()
    named = [f"{name}\0{body}" for name, body in sorted((headers or {}).items())]
    for part in (text, *named, arch, " ".join(_OPTIONS)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def compile_source(text, arch="sm_90", headers=None):
    """Return cubin bytes for ``text``, from the disk cache when possible.

    Parameters
    ----------
    text : str
        CUDA C source.
    arch : str
        Target, e.g. ``"sm_90"``.
    headers : dict of str to str, optional
        Files the source includes by name (``#include "name"``).

    Raises
    ------
    CompileError
        With the compiler's log and the path where the source was saved.
    """
    headers = headers or {}
    path = cache_dir() / f"{source_hash(text, arch, headers)}.cubin"
    try:
        return path.read_bytes()
    except OSError:
        pass
    cubin = _compile(text, arch, headers)
    _write_atomic(path, cubin)
    return cubin


def _compile(text, arch, headers):
    nvrtc = _nvrtc()
    if nvrtc is not None:
        return _compile_nvrtc(nvrtc, text, arch, headers)
    return _compile_nvcc(text, arch, headers)


def _nvrtc():
    """The NVRTC bindings, or None when the library is missing."""
    try:
        from cuda.bindings import nvrtc
        err, _, _ = nvrtc.nvrtcVersion()
        return nvrtc if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None
    except Exception:  # ImportError, or the shared library is not installed
        return None


def _compile_nvrtc(nvrtc, text, arch, headers):
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    names = sorted(headers)
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), b"kernel.cu", len(names),
                                         [headers[n].encode() for n in names],
                                         [n.encode() for n in names])
    try:
        opts = [f"--gpu-architecture={arch}".encode()] + [o.encode() for o in _OPTIONS]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != ok:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            _fail(text, arch, headers, log.decode(errors="replace"))
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_nvcc(text, arch, headers):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(text)
        for name, body in headers.items():
            (Path(tmp) / name).write_text(body)
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", "-o", str(out), str(src)]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError:
            raise CompileError("neither NVRTC (cuda-bindings) nor nvcc is available") from None
        if result.returncode:
            _fail(text, arch, headers, result.stderr)
        return out.read_bytes()


def _fail(text, arch, headers, log):
    saved = save_failed_source(text, f"{source_hash(text, arch, headers)}.cu")
    raise CompileError(f"generated kernel failed to compile for {arch}; "
                       f"source saved at {saved}\n{log}")


def save_failed_source(text, filename):
    """Keep the source of a failed compile as ``failed/filename`` in the
    cache, for the user to read; returns its path, or a phrase saying
    that the cache cannot be written."""
    path = cache_dir() / "failed" / filename
    if _write_atomic(path, text.encode()):
        return path
    return "nowhere (the cache directory cannot be written)"


def _write_atomic(path, data):
    """Write so that concurrent processes never see a partial file; False
    where the cache cannot be written (which only costs recompiles)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        return False
