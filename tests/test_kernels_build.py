"""Every hand-written kernel builds, and ptxas spills no registers in any of them.

Runs on machines without a GPU (CI included) wherever nvcc is installed:
``make kernels`` builds (or finds up to date) every ``kernels/*.cu`` for each
architecture it targets, keeping ptxas's verbose report beside each binary;
the report is read here.  A register spill or a stack frame in a GEMM main
loop costs a large part of its speed, so any spill fails the test, naming
the kernel and the architecture.  The kernels CUB instantiates in the
``*_host.cu`` libraries are NVIDIA's, tuned there, and exempt.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuarray.conv import implicit_plan
from gpuarray.gemm import tiles

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "kernels").glob("*.cu"))
# mangled names of CUB's and Thrust's kernels
_LIBRARY_PREFIXES = ("_ZN3cub", "_ZN6thrust")


def _binary(source):
    suffix = {"_sm90": ".cubin", "_host": ".so"}.get(source.stem[-5:], ".fatbin")
    return ROOT / "gpuarray" / "kernels" / (source.stem + suffix)


def _make(*targets):
    build = subprocess.run(["make", "-s", "-j2", *targets], cwd=ROOT, capture_output=True,
                           text=True)
    assert build.returncode == 0, f"make failed:\n{build.stdout[-3000:]}{build.stderr[-3000:]}"


def _report(log):
    """{(kernel, arch): (stack bytes, spill stores, spill loads)} from ptxas -v output."""
    kernels, current = {}, None
    for line in log.splitlines():
        entry = re.search(r"Compiling entry function '(\w+)' for '(\w+)'", line)
        if entry:
            current = entry.groups()
        usage = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                          line)
        if usage and current:
            kernels[current] = tuple(int(x) for x in usage.groups())
    return kernels


@pytest.fixture(scope="module")
def reports():
    if shutil.which("nvcc") is None or shutil.which("make") is None:
        pytest.skip("nvcc (or make) not found")
    _make("kernels")
    # binaries built before their reports were kept: build them again
    missing = [str(_binary(s).relative_to(ROOT)) for s in SOURCES
               if not Path(str(_binary(s)) + ".log").exists()]
    if missing:
        _make("-B", *missing)
    return {source.name: _report(Path(str(_binary(source)) + ".log").read_text())
            for source in SOURCES}


def test_every_kernel_file_builds_for_every_target(reports):
    for source in SOURCES:
        arches = {arch for _, arch in reports[source.name]}
        expected = {"sm_90a"} if source.stem.endswith("_sm90") else {"sm_80", "sm_90"}
        assert arches == expected, f"{source.name} built for {sorted(arches)}"


def test_no_register_spills(reports):
    for name, report in reports.items():
        for (kernel, arch), usage in report.items():
            if kernel.startswith(_LIBRARY_PREFIXES):
                continue
            stack, stores, loads = usage
            assert usage == (0, 0, 0), (
                f"{kernel} ({name}, {arch}): {stack} bytes stack frame, {stores} bytes spill "
                f"stores, {loads} bytes spill loads")


def test_catalogue_kernels_exist(reports):
    """Every kernel name the planner can ask for is in the built binaries."""
    built = {kernel for report in reports.values() for kernel, _ in report}
    assert "ga_gemm_splitk_reduce" in built
    for cfg in tiles.CONFIGS:
        for name in cfg.inputs:
            for layout in cfg.layouts:
                assert cfg.kernel_name(name, layout) in built


def test_conv_kernels_exist(reports):
    """Every implicit-GEMM convolution kernel the conv planner can ask for is
    built, and every tile it names has a cost model."""
    built = {kernel for report in reports.values() for kernel, _ in report}
    assert {(c.bm, c.bn) for c in implicit_plan._configs()} == set(implicit_plan.TILES)
    for bm, bn in implicit_plan.TILES:
        kinds = ("fprop", "bprop", "update") if bm <= 128 else ("fprop", "bprop")
        for dtype in ("f16", "bf16"):
            for kind in kinds:
                assert f"ga_conv_sm90_{bm}x{bn}x64_{dtype}_{kind}" in built
    for dtype in ("f16", "bf16"):  # the update's multicast pairs
        assert f"ga_conv_sm90_128x256x64_{dtype}_update_mc{implicit_plan.PAIR}" in built
    for dtype in ("f16", "bf16"):  # fprop transposed
        bm, bn = implicit_plan.TRANSPOSED_TILE
        assert f"ga_conv_sm90_{bm}x{bn}x64_{dtype}_fprop_t" in built
    for bm, bn in implicit_plan.PINGPONG_TILES:
        for dtype in ("f16", "bf16"):
            for kind in ("fprop", "bprop"):
                assert f"ga_conv_sm90_{bm}x{bn}x64_{dtype}_{kind}_pp" in built
