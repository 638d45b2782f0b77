"""Load and fault test of the GPU factory; run it on a machine with a GPU.

Three parts, each reported in a table and in ``benchmarks/results/stress.json``:

1. **load** -- ``--assignments`` (default 10**5) random assignments drawn
   from a fixed set of expression templates over random shapes and dtypes
   (fused elementwise, reductions, broadcasts of reductions, GEMM), one in
   ``--check-every`` validated against the CPU factory.  Per window of
   10**4 assignments: host time per assignment, pool bytes in use and
   cached, device allocations, recipes and compiled kernels.  It passes
   when every checked result matched, no memory stays in use between
   assignments (at most 16 MiB at a window's end), the recipe cache is at
   its bound or below, the pool's cache and the compiled kernels grow by
   at most 5% and 2 kernels in the last window (new size and layout
   classes still appear, ever more rarely), and the last window is no
   slower than 1.5 times the fastest.
2. **oom** -- allocates 1 GiB tensors until ``MemoryError``; passes when
   the error names the size, a tensor made before keeps its values, and
   the factory computes correctly once the tensors are dropped.
3. **fault** -- in a child process, launches a kernel that writes far out
   of bounds, then uses the factory again.  CUDA cannot recover a context
   after such a fault; this passes when the child ends within a minute
   with a Python exception (no hang, no crash) and the parent's own
   factory still works.

Usage: ``python3 benchmarks/stress.py [--assignments N]``.
"""
import argparse
import gc
import json
import subprocess
import sys
import textwrap
import time

import numpy as np

import common

WINDOW = 10_000
DTYPES = [np.float32, np.float16, np.float64, np.int32]
#: name -> (output shape from the operands' (m, n), expression builder, float only)
TEMPLATES = {
    "axpy": (lambda m, n: (m, n), lambda ng, a, b: a + b * 2, False),
    "max-where": (lambda m, n: (m, n), lambda ng, a, b: ng.where(a > b, a, b - 1), False),
    "exp-sub": (lambda m, n: (m, n), lambda ng, a, b: ng.exp(a * 0.01) - b, True),
    "row-sum": (lambda m, n: (m, 1), lambda ng, a, b: ng.sum(a * b, axis=1, keepdims=True), False),
    "col-max": (lambda m, n: (1, n), lambda ng, a, b: ng.max(a - b, axis=0, keepdims=True), False),
    "normalize": (lambda m, n: (m, n),
                  lambda ng, a, b: (a - ng.mean(a, axis=1, keepdims=True))
                  / (ng.std(a, axis=1, keepdims=True) + 1), True),
    "softmax": (lambda m, n: (m, n),
                lambda ng, a, b: ng.exp(a - ng.max(a, axis=1, keepdims=True))
                / ng.sum(ng.exp(a - ng.max(a, axis=1, keepdims=True)), axis=1, keepdims=True), True),
    "gemm": (lambda m, n: (m, m), lambda ng, a, b: ng.dot(a, b.T), True),
}


def _inputs(rng, dtype, m, n):
    scale = 4 if np.dtype(dtype).kind == "f" else 100
    return [(rng.standard_normal((m, n)) * scale).astype(dtype) for _ in range(2)]


def _one(ng, cpu, rng, check):
    """Run one random assignment; with ``check``, compare it with the CPU factory."""
    name = rng.choice(list(TEMPLATES))
    shape_of, build, float_only = TEMPLATES[name]
    dtypes = [d for d in DTYPES if not float_only or np.dtype(d).kind == "f"]
    if name == "gemm":
        dtypes = [np.float16, np.float32]
    dtype = dtypes[rng.integers(len(dtypes))]
    m, n = (int(x) for x in rng.integers(1, 300, size=2))
    hosts = _inputs(rng, dtype, m, n)
    a, b = (ng.array(h) for h in hosts)
    out = ng.empty(shape_of(m, n), dtype)
    out[:] = build(ng, a, b)
    if not check:
        return True
    ref = cpu.empty(out.shape, dtype)
    ref[:] = build(cpu, *(cpu.array(h) for h in hosts))
    tol = 2e-2 if dtype == np.float16 or name == "gemm" else 1e-4
    return np.allclose(out.get().astype(np.float64), ref.get().astype(np.float64),
                       rtol=tol, atol=tol, equal_nan=True)


def _snapshot(ng):
    gc.collect()
    ng.synchronize()
    stats = ng.stats()
    return {"bytes_in_use": stats["bytes_in_use"], "bytes_cached": stats["bytes_cached"],
            "device_allocations": stats["device_allocations"],
            "kernels_compiled": stats["kernels_compiled"],
            "recipes": len(ng._dispatcher.recipes)}


def load(ng, cpu, count, check_every):
    """Part 1: random assignments in windows; see the module docstring."""
    rng = np.random.default_rng(0)
    windows, failures = [], 0
    for start in range(0, count, WINDOW):
        size = min(WINDOW, count - start)
        t0 = time.perf_counter()
        for i in range(size):
            if not _one(ng, cpu, rng, (start + i) % check_every == 0):
                failures += 1
        ng.synchronize()
        window = _snapshot(ng)
        window["us_per_assignment"] = (time.perf_counter() - t0) / size * 1e6
        windows.append(window)
        print(f"  window {len(windows)}: {window}", flush=True)
    return {"ok": _bounded(windows) and failures == 0, "assignments": count,
            "mismatches": failures, "first": windows[0], "last": windows[-1],
            "windows": windows}


def _bounded(windows):
    """No leak, caches bounded, no slowdown: see the module docstring."""
    from gpuarray.fusion.dispatch import MAX_RECIPES

    steady = windows[1:] or windows
    last, before = steady[-1], steady[-2] if len(steady) > 1 else steady[-1]
    no_leak = max(w["bytes_in_use"] for w in windows) <= 16 << 20
    # new size classes and rare layout classes still appear late, ever more rarely
    settling = (last["bytes_cached"] - before["bytes_cached"] <= 0.05 * last["bytes_cached"]
                and last["kernels_compiled"] - before["kernels_compiled"] <= 2)
    fastest = min(w["us_per_assignment"] for w in steady)
    return (no_leak and settling and last["recipes"] <= MAX_RECIPES
            and last["us_per_assignment"] <= 1.5 * fastest)


def oom(ng):
    """Part 2: allocate until out of memory, then check nothing was lost."""
    keep = ng.array(np.arange(1024, dtype=np.float32))
    hog, message = [], None
    try:
        while len(hog) < 4096:
            hog.append(ng.empty((1 << 28,), np.float32))  # 1 GiB each
    except MemoryError as err:
        message = str(err)
    held = len(hog)
    del hog
    gc.collect()
    out = ng.empty_like(keep)
    out[:] = keep * 2 + 1
    works = bool(np.array_equal(out.get(), np.arange(1024, dtype=np.float32) * 2 + 1))
    kept = bool(np.array_equal(keep.get(), np.arange(1024, dtype=np.float32)))
    names_size = message is not None and str(1 << 30) in message.replace(",", "")
    return {"ok": bool(message) and names_size and works and kept, "gib_allocated": held,
            "message": message, "earlier_tensor_intact": kept, "works_after": works}


_FAULT_CHILD = textwrap.dedent("""
    import numpy as np, gpuarray
    from gpuarray.cuda import compiler
    ng = gpuarray.GPU()
    x = ng.ones((16,), np.float32)
    src = 'extern "C" __global__ void poke(float* p) { p[1ull << 40] = 1.0f; }'
    kernel = ng._drv.module_from_buffer(compiler.compile_source(src, ng.arch)).get_function("poke")
    kernel(np.uintp(x.ptr), block=(1, 1, 1), grid=(1, 1))
    for what, step in (("first use", lambda: (x + 1).get()), ("second use", lambda: ng.ones((4,)).get())):
        try:
            step()
            print(what, "-> no error")
        except Exception as err:
            print(what, "->", type(err).__name__ + ":", str(err).splitlines()[0])
""")


def fault(ng):
    """Part 3: a faulting kernel in a child process; the parent keeps working."""
    try:
        child = subprocess.run([sys.executable, "-c", _FAULT_CHILD], capture_output=True,
                               text=True, timeout=60)
        report, code = (child.stdout + child.stderr).strip().splitlines(), child.returncode
    except subprocess.TimeoutExpired:
        report, code = ["child hung for 60 s"], None
    out = ng.empty((4,), np.float32)
    out[:] = ng.ones((4,), np.float32) * 3
    parent_ok = bool(np.all(out.get() == 3))
    outcomes = [line for line in report if "->" in line]
    raised = [line for line in outcomes if "no error" not in line]
    return {"ok": code is not None and len(raised) == 2 and parent_ok, "child_exit": code,
            "child_outcomes": outcomes or report[-6:], "parent_works_after": parent_ok}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignments", type=int, default=100_000)
    parser.add_argument("--check-every", type=int, default=97)
    args = parser.parse_args()
    import gpuarray

    ng, cpu = gpuarray.GPU(), gpuarray.CPU()
    results = {}
    for name, part in (("load", lambda: load(ng, cpu, args.assignments, args.check_every)),
                       ("oom", lambda: oom(ng)), ("fault", lambda: fault(ng))):
        print(f"{name} ...", flush=True)
        results[name] = part()
    rows = [[name, "pass" if r["ok"] else "FAIL",
             json.dumps({k: v for k, v in r.items() if k not in ("ok", "windows")})[:400]]
            for name, r in results.items()]
    common.print_table(rows, ["part", "result", "details"])
    _write(results)
    return 0 if all(r["ok"] for r in results.values()) else 1


def _write(results):
    """results/stress.json, and a chart of the load windows where matplotlib imports."""
    common.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = common.RESULTS_DIR / "stress.json"
    path.write_text(json.dumps({"name": "stress", **common.device_info(), "results": results},
                               indent=2, default=str) + "\n")
    print(f"wrote {path}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    windows = results["load"]["windows"]
    x = [(i + 1) * WINDOW for i in range(len(windows))]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.plot(x, [w["us_per_assignment"] for w in windows], marker="o")
    left.set(xlabel="assignments", ylabel="µs per assignment (host, checks included)",
             ylim=(0, None), title="time per window")
    for key in ("bytes_in_use", "bytes_cached"):
        right.plot(x, [w[key] / 2**20 for w in windows], marker="o", label=key)
    right.set(xlabel="assignments", ylabel="MiB", title="memory pool", ylim=(0, None))
    right.legend()
    fig.tight_layout()
    fig.savefig(path.with_suffix(".png"), dpi=100)
    print(f"wrote {path.with_suffix('.png')}")


if __name__ == "__main__":
    sys.exit(main())
