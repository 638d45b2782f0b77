"""Every hand-written kernel builds, and ptxas spills no registers in any of them.

Runs on machines without a GPU (CI included) wherever nvcc is installed:
each ``kernels/*.cu`` is compiled for each architecture the Makefile
targets, with ptxas's verbose report, in parallel.  A register spill or a
stack frame in a GEMM main loop costs a large part of its speed, so any
spill fails the test, naming the kernel.
"""
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "kernels").glob("*.cu"))
NVCC = shutil.which("nvcc")


def _arches(source):
    """The -gencode targets the Makefile builds ``source`` for."""
    if source.stem.endswith("_sm90"):
        return ["compute_90a,code=sm_90a"]
    return ["compute_80,code=sm_80", "compute_90,code=sm_90"]


def _build(source, arch, tmp):
    out = tmp / f"{source.stem}.{arch.split('=')[-1]}.cubin"
    result = subprocess.run(
        ["nvcc", "-cubin", "-O3", "-std=c++17", f"-gencode=arch={arch}", "-Xptxas", "-v",
         "-o", str(out), str(source)], capture_output=True, text=True, cwd=ROOT)
    return source, arch, result


def _report(log):
    """{kernel: (stack bytes, spill stores, spill loads)} from ptxas -v output."""
    kernels, current = {}, None
    for line in log.splitlines():
        entry = re.search(r"Compiling entry function '(\w+)'", line)
        if entry:
            current = entry.group(1)
        usage = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                          line)
        if usage and current:
            kernels[current] = tuple(int(x) for x in usage.groups())
    return kernels


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    if NVCC is None:
        pytest.skip("nvcc not found")
    tmp = tmp_path_factory.mktemp("cubins")
    jobs = [(s, a) for s in SOURCES for a in _arches(s)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda job: _build(*job, tmp), jobs))


def test_every_kernel_file_builds(builds):
    for source, arch, result in builds:
        assert result.returncode == 0, f"{source.name} ({arch}) failed:\n{result.stderr[-3000:]}"


def test_no_register_spills(builds):
    seen = 0
    for source, arch, result in builds:
        report = _report(result.stdout + result.stderr)
        for kernel, (stack, stores, loads) in report.items():
            assert (stack, stores, loads) == (0, 0, 0), (
                f"{kernel} ({arch}): {stack} bytes stack frame, {stores} bytes spill stores, "
                f"{loads} bytes spill loads")
        seen += len(report)
    assert seen > 0


def test_catalogue_kernels_exist(builds):
    """Every kernel name the planner can ask for is in the built cubins."""
    from gpuarray import gemm_tiles

    built = set()
    for _, _, result in builds:
        built |= set(_report(result.stdout + result.stderr))
    for cfg in gemm_tiles.CONFIGS:
        for name in cfg.inputs:
            for layout in cfg.layouts:
                assert cfg.kernel_name(name, layout) in built
