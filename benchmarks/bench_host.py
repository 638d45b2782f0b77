"""Host cost per call: gpuarray beside torch eager, CuPy and the raw launch entries.

    python3 benchmarks/bench_host.py [--quick] [--cases 1,2,...]

The cases of issue 10's "Performance" section, every implementation in one
process on an idle GPU; prints a table, writes benchmarks/results/host.json
and, if matplotlib imports, host.png (else: benchmarks/plot.py JSON).

  1. cached 10-op fused assignment, 1024 fp32:  <= 1.5x ONE torch eager op
  2. c[:] = a + b, 1024 fp32:                   <= torch.add(a, b, out=c)
  3. ng.dot(A, B, C) cached, 512^3 fp16:        <= torch.matmul(A, B, out=C)
  4. C[:] = relu(dot(A, B) + bias), 512^3 fp16: <= torch matmul + bias-add + relu
  5. batch-norm expression, 1024x8192 fp32, end to end: <= torch.compile
  6. a captured MLP training step (~20 kernels) replayed:  <= 20 us host,
     >= 10x below launching its kernels one by one (ng.capture)
  7. the same step with its learning rate passed in and changed on every
     call: the graph's kernel nodes updated, not recorded again (same
     targets as case 6; torch eager runs the step with the same schedule)

Host time (cases 1-4): each call timed alone with perf_counter_ns, the queue
drained between batches (so a full launch queue never blocks a call);
median and p90 over all calls.  In cases 1 and 2 ours and the eager peers
take their batches in turn (timing.interleaved_call_times): the GPU
machines' hosts drift in speed by a third over seconds, which decided the
verdicts when each implementation was timed in one stretch.  Beside it, the device time per call of the
same calls issued back to back (CUDA events, timing.device_timer) and the
kernel alone (host hidden behind a spin kernel): host-bound when the host
time is above the kernel time.  Case 5 is the end-to-end figure users see:
events around back-to-back calls, max(host, device).  The launch rows time
the kernel gpuarray compiled for the case, with the packed arguments it
recorded, through each launch entry (the choice of entry, docs/host.rst):
"launch entry" is ours (gpuarray.cuda.launch_entry, cuLaunchKernel called
from C; ctypes under GPUARRAY_PURE_PYTHON=1), the floor of our path;
"pycuda packed" is pycuda's _launch_kernel with the packed buffer, "pycuda
launch" its prepared_async_call (argument parsing per call), "ctypes
launch" cuLaunchKernel called through ctypes and "cuda.bindings" through
NVIDIA's cuda-bindings when it imports.
Each implementation is validated against numpy before it is timed; a
missing library reads "n/a"; no GPU: a clear message and exit status 2.

gpuarray runs its compiled hot path where it is built (gpuarray.compiled);
with GPUARRAY_PURE_PYTHON=1 the results go to host_pure_python.json/png
instead, for the comparison.
"""
import argparse
import re
import statistics
import struct
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_elementwise  # noqa: E402
import gpuarray  # noqa: E402
import host_steps  # noqa: E402
from common import (check_close, failed, free_memory, measure, new_row, print_table, put,  # noqa: E402
                    set_target, table_cells, write_results)
from timing import device_times, host_call_times, interleaved_call_times  # noqa: E402

LAUNCH_IMPLS = ("launch entry", "pycuda packed", "pycuda launch", "ctypes launch",
                "cuda.bindings")
IMPLS = ("gpuarray", "torch eager", "torch.compile", "cupy") + LAUNCH_IMPLS
N = 1024


class Ctx(bench_elementwise.Ctx):
    """What the cases share: libraries (loaded as bench_elementwise loads them),
    call and repeat counts, meta."""

    def __init__(self, quick):
        super().__init__(quick)
        self.calls, self.batches = (200, 3) if quick else (1000, 10)
        self.meta.update(calls_per_batch=self.calls, batches=self.batches)

    def sync(self):
        """Wait for every library's queued work."""
        for name, wait in (("ng", lambda m: m.synchronize()),
                           ("torch", lambda m: m.cuda.synchronize()),
                           ("cupy", lambda m: m.cuda.runtime.deviceSynchronize())):
            if name in self.libs:
                wait(self.libs[name])

    def host(self, fn, row, impl):
        """Host seconds per call (median); p90 and the device times go to ``row["extra"]``."""
        times = host_call_times(fn, self.sync, self.calls, self.batches, self.warmup)
        return self._summary(fn, row, impl, times)

    def host_interleaved(self, fns, row):
        """:meth:`host` of several implementations (``{impl: fn}``), their
        batches taken in turn (``timing.interleaved_call_times``); stores
        each median in ``row``."""
        times = interleaved_call_times(fns, self.sync, self.calls, self.batches, self.warmup)
        for impl, fn in fns.items():
            put(row, impl, self._summary(fn, row, impl, times[impl]))

    def _summary(self, fn, row, impl, times):
        """The median of ``times``; their p90 and ``fn``'s device times go to ``row["extra"]``."""
        extra = row["extra"]
        extra.setdefault("host_p90_us", {})[impl] = times[int(0.9 * len(times))] * 1e6
        try:
            device = device_times(fn, self.repeats, self.warmup, extra, impl, sync=self.sync)
            extra.setdefault("device_us", {})[impl] = device * 1e6
        except RuntimeError as e:  # no CUDA events without torch or CuPy
            extra.setdefault("device_us", {})[impl] = None
            extra["device_error"] = str(e)
        return statistics.median(times)


def _tensors(ctx, hosts, dtype=None):
    """The host arrays on each library: {"ng": [...], "torch": [...], "cupy": [...]}."""
    out = {}
    if "ng" in ctx.libs:
        out["ng"] = [ctx.libs["ng"].array(h, dtype=dtype or h.dtype) for h in hosts]
    if "torch" in ctx.libs:
        out["torch"] = [ctx.libs["torch"].from_numpy(h).cuda() for h in hosts]
    if "cupy" in ctx.libs:
        out["cupy"] = [ctx.libs["cupy"].asarray(h) for h in hosts]
    return out


def _launch_rows(ctx, row, run, out, check):
    """Time each launch entry on the kernel ``run`` replays (its last one)
    with the packed buffer gpuarray recorded for it."""
    ng = ctx.need("ng")
    run()
    launcher = list(ng._dispatcher.recipes.values())[-1].launchers[-1]
    kernel, grid, block, buffer = launcher.kernel, launcher.grid, launcher.block, launcher.packed
    entries = _launch_entries(ng, kernel, grid, block, buffer)
    for impl in LAUNCH_IMPLS:
        def timed(impl=impl):
            launch = entries[impl]()
            launch()
            ng.synchronize()
            check(out, impl)
            return ctx.host(launch, row, impl)
        measure(row, impl, timed)


def _launch_entries(ng, kernel, grid, block, buffer):
    """impl -> a builder of a no-argument launch of ``kernel``'s code with the
    packed ``buffer`` (pycuda and the raw entries load the cached cubin again)."""
    import ctypes

    from gpuarray.cuda import compiler, driver
    from gpuarray.fusion import generate

    lib = driver.libcuda()
    cubin = compiler.compile_source(kernel.source, ng.arch, generate.HEADERS)
    name = re.search(r"__global__ void .*\) (\w+)\($", kernel.source, re.M).group(1)
    function = driver.Kernel(driver.load_module_data(cubin), name).handle
    data = ctypes.create_string_buffer(bytes(buffer), len(buffer))
    size = ctypes.c_size_t(len(buffer))
    # CU_LAUNCH_PARAM_BUFFER_POINTER (1), BUFFER_SIZE (2), END (0)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(data), 2, ctypes.addressof(size), 0)
    keep = (data, size, extra)

    def ours():
        packed = bytearray(buffer)
        return lambda: kernel.launch_packed(grid, block, packed)

    def pycuda_function():
        f = ng._drv.module_from_buffer(cubin).get_function(name)
        f.prepare(kernel.arg_format)
        return f

    def pycuda_packed():
        f = pycuda_function()
        return lambda: f._launch_kernel(grid, block, buffer, 0, None)

    def pycuda_prepared():
        f, args = pycuda_function(), struct.unpack(kernel.arg_format, buffer)
        return lambda: f.prepared_async_call(grid, block, None, *args)

    def ctypes_launch():
        launch = lib.cuLaunchKernel

        def call():
            if launch(function, *grid, *block, 0, None, None, extra):
                raise RuntimeError("cuLaunchKernel failed")
        call.keep = keep
        return call

    def bindings_launch():
        from cuda.bindings import driver as cbd

        handle = cbd.CUfunction(function.value)
        address = ctypes.addressof(extra)
        launch = cbd.cuLaunchKernel

        def call():
            err, = launch(handle, *grid, *block, 0, 0, 0, address)
            if err != cbd.CUresult.CUDA_SUCCESS:
                raise RuntimeError(f"cuLaunchKernel: {err}")
        call.keep = keep
        return call

    return {"launch entry": ours, "pycuda packed": pycuda_packed,
            "pycuda launch": pycuda_prepared, "ctypes launch": ctypes_launch,
            "cuda.bindings": bindings_launch}


def _add_peers(ctx, row, t, a64, b64, calls):
    """torch.add and cupy.add with out= (one eager op), validated and put in
    ``calls`` to be timed with ours."""
    ref = a64 + b64
    for lib, impl in (("torch", "torch eager"), ("cupy", "cupy")):
        def peer(lib=lib, impl=impl):
            ctx.need(lib)
            x, y, z = t[lib]
            add = ctx.libs[lib].add
            add(x, y, out=z)
            check_close(z, ref, 1e-6, 1e-6, impl)
            return lambda: add(x, y, out=z)
        _validated(row, impl, peer, calls)


def _validated(row, impl, prepare, calls):
    """``calls[impl] = prepare()``, a validated callable timed later; where
    it fails, n/a and the reason in ``row`` (``common.failed``)."""
    try:
        calls[impl] = prepare()
    except Exception as e:
        failed(row, impl, e)


def case_elementwise(ctx, case, ten_ops):
    import numpy as np

    label = "cached 10-op assignment, 1024 fp32" if ten_ops else "c[:] = a + b, 1024 fp32"
    print(f"\n== case {case}: {label}" + (" (eager peers: ONE op)" if ten_ops else ""))
    rng = np.random.default_rng(case)
    hosts = [rng.standard_normal(N, dtype=np.float32) for _ in range(2)] + [np.zeros(N, np.float32)]
    a64, b64 = (h.astype(np.float64) for h in hosts[:2])
    ref = (np.maximum((a64 + b64) * 2 - a64 / 3 + np.sqrt(np.abs(b64)) * a64 - 1, 0)
           if ten_ops else a64 + b64)
    t = _tensors(ctx, hosts)
    row = new_row(str(case), label, IMPLS)

    def check(y, who):
        check_close(y, ref, 1e-5, 1e-5, f"{label}, {who}")

    def ours():
        ng = ctx.need("ng")
        A, B, C = t["ng"]

        def run():   # 10 ops: +, *, /, -, abs, sqrt, *, +, -, maximum
            if ten_ops:
                C[:] = ng.maximum((A + B) * 2 - A / 3 + ng.sqrt(ng.abs(B)) * A - 1, 0)
            else:
                C[:] = A + B
        run()
        ng.synchronize()
        check(C, "gpuarray")
        return run

    calls = {}
    _validated(row, "gpuarray", ours, calls)
    _add_peers(ctx, row, t, a64, b64, calls)
    # ours and the peers in alternating batches: the host's speed drifts
    ctx.host_interleaved(calls, row)
    if "gpuarray" in calls:
        try:
            _launch_rows(ctx, row, calls["gpuarray"], t["ng"][2], check)
        except Exception as e:  # the gpuarray cell stands without them
            traceback.print_exc()
            for impl in LAUNCH_IMPLS:
                row["errors"].setdefault(impl, f"{type(e).__name__}: {e}")
    eager = row["values"]["torch eager"]
    if ten_ops:
        set_target(row, None if eager is None else 1.5 * eager, "<= 1.5x one torch eager op")
    else:
        set_target(row, eager, "<= torch.add(out=)")
    return [row]


def case_gemm(ctx, case, epilogue):
    import numpy as np

    m = n = k = 512
    label = f"{'relu(dot + bias)' if epilogue else 'ng.dot(A, B, C)'} 512^3 fp16"
    print(f"\n== case {case}: {label}")
    rng = np.random.default_rng(case)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    bias = rng.standard_normal(n).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        ref = np.maximum(ref + bias, 0)
    t = _tensors(ctx, [a, b, np.zeros((m, n), np.float16), bias])
    row = new_row(str(case), label, IMPLS)
    tol = 2e-2 * float(np.abs(ref).max())

    def ours():
        ng = ctx.need("ng")
        A, B, C, D = t["ng"]

        def run():
            if epilogue:
                C[:] = ng.relu(ng.dot(A, B) + D)
            else:
                ng.dot(A, B, C)
        run()
        ng.synchronize()
        check_close(C, ref, 1e-2, tol, f"{label}, gpuarray")
        return ctx.host(run, row, "gpuarray")

    def peer(lib, impl):
        ctx.need(lib)
        x, y, z, d = t[lib]
        mod = ctx.libs[lib]

        def run():
            mod.matmul(x, y, out=z)
            if epilogue:   # the separate ops an eager framework runs
                if lib == "torch":
                    z.add_(d).relu_()
                else:
                    mod.maximum(mod.add(z, d, out=z), 0, out=z)
        run()
        check_close(z, ref, 1e-2, tol, f"{label}, {impl}")
        return ctx.host(run, row, impl)

    measure(row, "gpuarray", ours)
    measure(row, "torch eager", lambda: peer("torch", "torch eager"))
    measure(row, "cupy", lambda: peer("cupy", "cupy"))
    eager = row["values"]["torch eager"]
    set_target(row, eager, "<= torch matmul" + (" + bias-add + relu" if epilogue else "(out=)"))
    free_memory(ctx.libs)
    return [row]


def case_batchnorm(ctx):
    """bench_elementwise's batch-norm case: end to end, events around back-to-back calls."""
    import numpy as np

    rows = bench_elementwise.case_batchnorm(ctx, "5", (1024, 8192), np.float32, ref_us=54.6)
    for row in rows:
        row["label"] += ", end to end"
        for impl in IMPLS:
            row["values"].setdefault(impl, None)
            row["times_us"].setdefault(impl, None)
    return rows


RUNS = {1: lambda ctx: case_elementwise(ctx, 1, True),
        2: lambda ctx: case_elementwise(ctx, 2, False),
        3: lambda ctx: case_gemm(ctx, 3, False),
        4: lambda ctx: case_gemm(ctx, 4, True),
        5: case_batchnorm,
        6: lambda ctx: host_steps.case_captured_step(ctx, 6, IMPLS),
        7: lambda ctx: host_steps.case_changing_rate(ctx, 7, IMPLS)}


def _report(rows, meta):
    print()
    print_table([table_cells(r, IMPLS) for r in rows],
                columns=["case", "what", *IMPLS, "target", "met?"])
    print("\nHost µs per call (median above); p90, device time back to back, kernel alone:")
    detail = []
    for r in rows:
        for impl, value in r["values"].items():
            if value is None:
                continue
            extra = r["extra"]
            cells = [extra.get(key, {}).get(impl) for key in
                     ("host_p90_us", "device_us", "kernel_only_us")]
            detail.append([r["case"], impl, f"{value:.1f}",
                           *("n/a" if c is None else f"{c:.1f}" for c in cells)])
    print_table(detail, columns=["case", "impl", "median", "p90", "device", "kernel"])
    print("\nCase 5's cells are end to end: events around back-to-back calls (bench_elementwise's "
          "batch-norm case), max(host, device).")
    write_results("host" if meta["compiled"] else "host_pure_python", rows, meta)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--cases", default="1,2,3,4,5,6,7",
                        help="comma-separated case numbers (default: all)")
    args = parser.parse_args(argv)
    try:
        cases = sorted({int(c) for c in args.cases.split(",") if c.strip()})
    except ValueError:
        cases = []
    if not cases or not set(cases) <= set(RUNS):
        parser.error(f"--cases: give case numbers from 1 to {max(RUNS)}, not {args.cases!r}")
    ctx = Ctx(args.quick)
    if "ng" not in ctx.libs:
        print(f"bench_host.py needs a CUDA GPU: gpuarray.GPU() failed "
              f"({ctx.missing['ng']}). Nothing was measured.", file=sys.stderr)
        return 2
    ctx.meta["cases"] = cases
    ctx.meta["compiled_modules"] = gpuarray.compiled.status()
    ctx.meta["compiled"] = all(ctx.meta["compiled_modules"].values())
    rows = []
    for case in cases:
        try:
            rows += RUNS[case](ctx)
        except Exception as e:
            traceback.print_exc()
            rows.append(new_row(str(case), f"case {case} failed", IMPLS))
            rows[-1]["errors"] = dict.fromkeys(IMPLS, f"{type(e).__name__}: {e}")
    _report(rows, ctx.meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
