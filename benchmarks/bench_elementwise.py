"""Fused elementwise/reduction benchmark: gpuarray against torch eager, torch.compile and CuPy.

    python3 benchmarks/bench_elementwise.py [--quick] [--cases 1,2,...]

The six cases of the spec's "Performance" section, all implementations side by
side in one process; prints a table, writes benchmarks/results/elementwise.json
and, if matplotlib imports, elementwise.png (else: benchmarks/plot.py JSON).

  1. batch norm  out[:] = ng.reciprocal(ng.sqrt(ng.var(A, axis=1, keepdims=True) + eps))
                           * (A - ng.mean(A, axis=1, keepdims=True))
     on 8192x8192 fp32 and fp16: no slower than torch.compile in the same run
  2. the same on 128x32768 fp32 (few long rows): <= 15 us
  3. the same on 1024x8192 fp32: <= 25 us
  4. C[:] = A + B on 1e8 fp32: >= 4.0 TB/s, counting 3 * 4e8 bytes
  5. host time to dispatch an already-compiled 10-op expression (1024 floats):
     <= 8 us (peers: one eager op per call; torch.compile: the same 10 ops)
  6. first use of 10 new expressions, compile included (fresh GPUARRAY_CACHE_DIR):
     <= 100 ms; then the disk-cache hit of the same expressions in a new process

Each implementation is checked against a float64 numpy reference before it is
timed. Device times (1-4): medians of per-call CUDA event pairs on the default
stream, calls back to back (timing.device_timer); gpuarray shares torch's
primary context and is timed as users write it, `out[:] = expr` with the
expression rebuilt on each call. Host times (5): perf_counter medians over
batches, no sync inside. First use (6): perf_counter around one assignment and
ng.synchronize(). Missing libraries read "n/a"; a failing case prints its
traceback and the rest still run."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (Unavailable, check_close, fmt, free_memory, load_peers, measure, new_row,  # noqa: E402
                    print_table, put, set_target, stat, table_cells, time_gpuarray, write_results)
from timing import device_times, host_timer  # noqa: E402

IMPLS = ("gpuarray", "torch eager", "torch.compile", "cupy")
EPS = 1e-5
ADD_N = 100_000_000
CHILD_MARK = "CASE6_RESULT "


class Ctx:
    """What the cases share: the libraries that loaded, repeat counts, meta."""

    def __init__(self, quick):
        self.repeats, self.warmup, self.host_n = (20, 3, 200) if quick else (200, 20, 2000)
        self.libs, self.missing = load_peers()
        try:
            import gpuarray

            self.libs["ng"] = gpuarray.GPU(stochastic_round=False, seed=0)
        except Exception as e:
            self.missing["ng"] = f"{type(e).__name__}: {e}"
        for name, why in self.missing.items():
            print(f"warning: {name} unavailable ({why}); its cells read n/a")
        self.meta = {"quick": quick, "repeats": self.repeats, "warmup": self.warmup,
                     "host_calls": self.host_n, "eps": EPS, "unavailable": self.missing,
                     "torch_compile_first_call_s": {}}

    def need(self, name):
        if name not in self.libs:
            raise Unavailable(self.missing.get(name, f"{name} not loaded"))
        return self.libs[name]

    def device_time(self, fn, row, impl):
        return device_times(fn, self.repeats, self.warmup, row["extra"], impl)

    def time_ours(self, run, out, check, row):
        return time_gpuarray(self.libs["ng"], run, out, check, row["extra"],
                             self.repeats, self.warmup)


# cases 1-3: batch norm
def bn_torch(x):
    return (x - x.mean(1, keepdim=True)) * (x.var(1, keepdim=True, unbiased=False) + EPS).rsqrt()


def case_batchnorm(ctx, case, shape, dtype, target_us=None, ref_us=None):
    label = f"batch-norm {shape[0]}x{shape[1]} {'fp16' if dtype == np.float16 else 'fp32'}"
    print(f"\n== case {case}: {label}")
    host = (np.random.default_rng(0).standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
    x64 = host.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + EPS)
    del x64
    tol = 1e-2 if dtype == np.float16 else 1e-4
    atol = tol * float(np.abs(ref).max())     # relative to the output's scale

    def check(y, who):
        check_close(y, ref, tol, atol, f"{label}, {who}")

    row = new_row(case, label, IMPLS)

    def ours():
        ng = ctx.need("ng")
        A, out = ng.array(host, dtype=dtype), ng.empty(shape, dtype)

        def run():
            out[:] = (ng.reciprocal(ng.sqrt(ng.var(A, axis=1, keepdims=True) + EPS))
                      * (A - ng.mean(A, axis=1, keepdims=True)))
        return ctx.time_ours(run, out, check, row)

    def torch_impl(compiled):
        torch = ctx.need("torch")
        x, fn = torch.from_numpy(host).cuda(), bn_torch
        if compiled:
            torch._dynamo.reset()
            fn = torch.compile(bn_torch, dynamic=False)
            t0 = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            ctx.meta["torch_compile_first_call_s"][label] = time.perf_counter() - t0
        impl = "torch.compile" if compiled else "torch eager"
        check(fn(x), impl)
        return ctx.device_time(lambda: fn(x), row, impl)

    def cupy_impl():
        cp = ctx.need("cupy")
        x = cp.asarray(host)

        def run():
            return (x - x.mean(1, keepdims=True)) * cp.reciprocal(cp.sqrt(x.var(1, keepdims=True) + EPS))
        check(run(), "cupy")
        return ctx.device_time(run, row, "cupy")

    measure(row, "gpuarray", ours)
    measure(row, "torch eager", lambda: torch_impl(False))
    measure(row, "torch.compile", lambda: torch_impl(True))
    measure(row, "cupy", cupy_impl)
    compiled_us = row["values"]["torch.compile"]
    if target_us is not None:
        set_target(row, target_us, f"<= {target_us} µs")
    elif compiled_us is not None:
        set_target(row, compiled_us, f"<= torch.compile ({fmt(compiled_us, 'us')})")
    else:
        set_target(row, ref_us, f"<= {ref_us} µs (torch.compile ref)")
    free_memory(ctx.libs)
    return [row]


# cases 4 and 5: C = A + B bandwidth; host dispatch of a compiled 10-op expression
def peer_add(ctx, lib, a, b, timer):
    """Validate torch's or CuPy's ``add(a, b, out=c)``; return ``timer(call, sync, impl)``."""
    if lib == "torch":
        torch = ctx.need("torch")
        x, y, add = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), torch.add
        sync = torch.cuda.synchronize
    else:
        cp = ctx.need("cupy")
        x, y, add, sync = cp.asarray(a), cp.asarray(b), cp.add, cp.cuda.runtime.deviceSynchronize
    z = add(x, y)
    check_close(z, a + b, 1e-6, 0.0, f"{lib} add")
    return timer(lambda: add(x, y, out=z), sync, "torch eager" if lib == "torch" else "cupy")


def case_add(ctx):
    n, nbytes = ADD_N, 3 * 4 * ADD_N
    label = f"C = A + B, {n:.0e} fp32"
    print(f"\n== case 4: {label}")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    row = new_row("4", label, IMPLS, unit="TB/s", higher_is_better=True)
    row["extra"]["bytes_per_call"] = nbytes

    def ours():
        ng = ctx.need("ng")
        A, B = ng.array(a, dtype=np.float32), ng.array(b, dtype=np.float32)
        C = ng.empty((n,), np.float32)

        def run():
            C[:] = A + B
        return ctx.time_ours(run, C, lambda y, who: check_close(y, a + b, 1e-6, 0.0, who), row)

    def timer(fn, sync, impl):
        return ctx.device_time(fn, row, impl)

    def tbs(seconds):
        return nbytes / seconds / 1e12

    measure(row, "gpuarray", ours, tbs)
    measure(row, "torch eager", lambda: peer_add(ctx, "torch", a, b, timer), tbs)
    measure(row, "cupy", lambda: peer_add(ctx, "cupy", a, b, timer), tbs)
    set_target(row, 4.0, ">= 4.0 TB/s", target_us=nbytes / 4.0e12 * 1e6)
    free_memory(ctx.libs)
    return [row]


def case_dispatch(ctx):
    label = "host dispatch, 10-op expr, 1024 fp32"
    print(f"\n== case 5: {label} (eager peers: one op)")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(1024, dtype=np.float32), rng.standard_normal(1024, dtype=np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = np.maximum((a64 + b64) * 2 - a64 / 3 + np.sqrt(np.abs(b64)) * a64 - 1, 0)
    row = new_row("5", label, IMPLS)
    row["extra"]["peers"] = ("torch eager and cupy: one add(a, b, out=c) per call; "
                             "torch.compile: the same 10-op expression")
    n = ctx.host_n

    def ours():
        ng = ctx.need("ng")
        A, B = ng.array(a, dtype=np.float32), ng.array(b, dtype=np.float32)
        C = ng.empty((1024,), np.float32)

        def run():   # 10 ops: +, *, /, -, abs, sqrt, *, +, -, maximum
            C[:] = ng.maximum((A + B) * 2 - A / 3 + ng.sqrt(ng.abs(B)) * A - 1, 0)
        run()
        ng.synchronize()
        check_close(C, ref, 1e-5, 1e-5, f"{label}, gpuarray")
        seconds = host_timer(run, n=n, sync=ng.synchronize)
        before = stat(ng, "kernels_launched")
        for _ in range(n):
            run()
        ng.synchronize()
        delta = None if before is None else stat(ng, "kernels_launched") - before
        row["extra"].update(calls=n, kernels_launched_delta=delta, one_kernel_per_call=delta == n)
        return seconds

    def torch_compiled():
        torch = ctx.need("torch")
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        fn = torch.compile(lambda x, y: ((x + y) * 2 - x / 3 + y.abs().sqrt() * x - 1).clamp_min(0),
                           dynamic=False)
        check_close(fn(ta, tb), ref, 1e-5, 1e-5, f"{label}, torch.compile")
        return host_timer(lambda: fn(ta, tb), n=n, sync=torch.cuda.synchronize)

    def timer(fn, sync, impl):
        return host_timer(fn, n=n, sync=sync)

    measure(row, "gpuarray", ours)
    measure(row, "torch eager", lambda: peer_add(ctx, "torch", a, b, timer))
    measure(row, "torch.compile", torch_compiled)
    measure(row, "cupy", lambda: peer_add(ctx, "cupy", a, b, timer))
    set_target(row, 8.0, "<= 8 µs")
    return [row]


# case 6: first use of a new expression (compile included), then a disk-cache hit
WARMUP_EXPR = ("A * B + A", lambda ng, A, B: A * B + A)
NEW_EXPRS = [
    ("exp(A) + B", lambda ng, A, B: ng.exp(A) + B),
    ("log1p(|A|) * B", lambda ng, A, B: ng.log1p(ng.abs(A)) * B),
    ("tanh(A - B) / 3", lambda ng, A, B: ng.tanh(A - B) / 3),
    ("maximum(A, B) - sin(A)", lambda ng, A, B: ng.maximum(A, B) - ng.sin(A)),
    ("sigmoid(A * B) + 1", lambda ng, A, B: ng.sigmoid(A * B) + 1),
    ("sqrt(A^2 + B^2)", lambda ng, A, B: ng.sqrt(ng.square(A) + ng.square(B))),
    ("where(A > B, A, 2 B)", lambda ng, A, B: ng.where(A > B, A, B * 2)),
    ("cos(A) * erf(B)", lambda ng, A, B: ng.cos(A) * ng.erf(B)),
    ("A - max(A, axis=1)", lambda ng, A, B: A - ng.max(A, axis=1, keepdims=True)),
    ("softmax(A, axis=1)", lambda ng, A, B: ng.exp(A - ng.max(A, axis=1, keepdims=True))
        / ng.sum(ng.exp(A - ng.max(A, axis=1, keepdims=True)), axis=1, keepdims=True)),
]


def first_use_times(ng):
    """Milliseconds of the first `out[:] = expr` + synchronize of each expression.

    A warm-up expression goes first (reported apart): it pays the process's
    one-time costs, such as loading the compiler library.
    """
    rng = np.random.default_rng(3)
    A = ng.array(rng.standard_normal((256, 1024), dtype=np.float32), dtype=np.float32)
    B = ng.array(rng.standard_normal((256, 1024), dtype=np.float32), dtype=np.float32)
    out = ng.empty((256, 1024), np.float32)
    ng.synchronize()
    result = {"times_ms": {}, "kernels_compiled": {}, "errors": {}}
    for name, build in [WARMUP_EXPR] + NEW_EXPRS:
        try:
            before = stat(ng, "kernels_compiled")
            t0 = time.perf_counter()
            out[:] = build(ng, A, B)
            ng.synchronize()
            ms = (time.perf_counter() - t0) * 1e3
        except Exception as e:
            traceback.print_exc()
            result["errors"][name] = f"{type(e).__name__}: {e}"
            continue
        if name == WARMUP_EXPR[0]:
            result["warmup_ms"] = ms
        else:
            result["times_ms"][name] = ms
            result["kernels_compiled"][name] = (
                None if before is None else stat(ng, "kernels_compiled") - before)
    return result


def case_first_use(ctx):
    print(f"\n== case 6: first use of {len(NEW_EXPRS)} new expressions "
          f"(GPUARRAY_CACHE_DIR={os.environ.get('GPUARRAY_CACHE_DIR')})")
    cold = first_use_times(ctx.need("ng"))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--case6-child"],
                          capture_output=True, text=True, timeout=600)
    marked = [ln for ln in proc.stdout.splitlines() if ln.startswith(CHILD_MARK)]
    warm = json.loads(marked[-1][len(CHILD_MARK):]) if marked else None
    if warm is None:
        print(f"  the disk-cache child failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    compile_s = list(ctx.meta["torch_compile_first_call_s"].values())
    rows = []
    for case, label, runs, pick in [
            ("6a", "first use, compile (median of 10)", cold, statistics.median),
            ("6b", "first use, compile (max of 10)", cold, max),
            ("6c", "disk-cache hit, new process (median)", warm, statistics.median)]:
        row = new_row(case, label, IMPLS, unit="ms")
        times = list((runs or {}).get("times_ms", {}).values())
        if times:
            put(row, "gpuarray", pick(times) / 1e3, pick(times))
        else:
            row["errors"]["gpuarray"] = "no expression ran"
        if case == "6c":
            set_target(row, None, "(ref 0.2 ms)")
        else:
            if compile_s:   # torch.compile's first call of the batch-norm function
                put(row, "torch.compile", pick(compile_s), pick(compile_s) * 1e3)
            set_target(row, 100.0, "<= 100 ms")
        rows.append(row)
    rows[0]["extra"] = {"cold": cold, "disk_cache_hit": warm,
                        "torch.compile": "first call of the batch-norm function in cases 1-3"}
    return rows


RUNS = [
    (1, lambda ctx: case_batchnorm(ctx, "1", (8192, 8192), np.float32, ref_us=130)),
    (1, lambda ctx: case_batchnorm(ctx, "1", (8192, 8192), np.float16, ref_us=67)),
    (2, lambda ctx: case_batchnorm(ctx, "2", (128, 32768), np.float32, target_us=15)),
    (3, lambda ctx: case_batchnorm(ctx, "3", (1024, 8192), np.float32, target_us=25)),
    (4, case_add),
    (5, case_dispatch),
    (6, case_first_use),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--cases", default="1,2,3,4,5,6",
                        help="comma-separated case numbers (default: all)")
    parser.add_argument("--case6-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case6_child:   # case 6's child: the same expressions, disk cache filled
        import gpuarray

        print(CHILD_MARK + json.dumps(first_use_times(gpuarray.GPU(stochastic_round=False, seed=0))))
        return 0
    cases = {c.strip() for c in args.cases.split(",") if c.strip()}
    if not cases or not cases <= set("123456"):
        parser.error(f"--cases: give case numbers from 1 to 6, not {args.cases!r}")
    args.cases = sorted(int(c) for c in cases)

    cache_dir = None
    if 6 in args.cases:   # before gpuarray is imported: its disk cache lives there
        cache_dir = tempfile.mkdtemp(prefix="gpuarray-bench-cache-")
        os.environ["GPUARRAY_CACHE_DIR"] = cache_dir
    ctx = Ctx(args.quick)
    ctx.meta["cases"] = args.cases
    rows = []
    try:
        for case, run in RUNS:
            if case not in args.cases:
                continue
            try:
                rows += run(ctx)
            except Exception as e:
                print(f"  case {case} skipped: {e}" if isinstance(e, Unavailable)
                      else traceback.format_exc())
                rows.append(new_row(str(case), f"case {case} failed", IMPLS))
                rows[-1]["errors"] = dict.fromkeys(IMPLS, f"{type(e).__name__}: {e}")
    finally:
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)

    print()
    print_table([table_cells(r, IMPLS) for r in rows],
                columns=["case", "what", *IMPLS, "target", "met?"])
    print("\nn/a: unavailable or failed (reason in the JSON); -: not measured. Case 5's eager "
          "peers run one op per call; case 6's torch.compile is its first call in cases 1-3.")
    kernel_rows = [{"case": r["case"], "what": r["label"],
                    **{i: fmt(k[i], "us") if i in k else "-" for i in IMPLS}}
                   for r in rows if (k := r["extra"].get("kernel_only_us"))]
    print("\nKernel time alone (host dispatch hidden behind a spin kernel; not the targets' measure):")
    print_table(kernel_rows, columns=["case", "what", *IMPLS])
    ctx.meta["kernel_only_us"] = "extra.kernel_only_us: device_timer(hide_host=True), see timing.py"
    write_results("elementwise", rows, ctx.meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
