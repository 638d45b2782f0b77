"""Helpers shared by the benchmarks: timers, validation, tables and result files.

Only the standard library is imported at module level; numpy, torch, CuPy and
matplotlib are imported where they are used, so ``--help`` works anywhere.
"""
import datetime
import gc
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"


# --------------------------------------------------------------------------
# peers
# --------------------------------------------------------------------------
def load_peers():
    """Import torch (first: it makes the primary CUDA context current) and CuPy.

    Returns ``(libs, missing)``: name -> module for those that work, name ->
    reason for those that do not.
    """
    libs, missing = {}, {}
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch.empty(1, device="cuda")
        libs["torch"] = torch
    except Exception as e:
        missing["torch"] = f"{type(e).__name__}: {e}"
    try:
        import cupy

        cupy.empty(1)
        libs["cupy"] = cupy
    except Exception as e:
        missing["cupy"] = f"{type(e).__name__}: {e}"
    return libs, missing


def torch_and_gpu(script):
    """``(torch, ng)`` for a benchmark against torch on the GPU, or None after
    printing why it cannot run (no torch, pycuda or GPU).  TF32 is turned off
    in cuDNN and cuBLAS, so fp32 is exact on both sides."""
    try:
        import torch

        import gpuarray
        ng = gpuarray.GPU()
    except Exception as e:  # nothing to compare
        print(f"{script} needs torch and a GPU: {e}")
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch, ng


def torch_cupy_and_gpu(script):
    """``(torch, cupy, ng)`` for a benchmark against both peers on the GPU,
    or None after printing why it cannot run."""
    libs, missing = load_peers()
    if "torch" not in libs or "cupy" not in libs:
        print(f"{script} needs torch and CuPy: {missing}")
        return None
    import gpuarray

    if not gpuarray.gpu_available():
        print(f"{script} needs a GPU")
        return None
    return libs["torch"], libs["cupy"], gpuarray.GPU()


def free_memory(libs):
    """Return the cached blocks of torch's and CuPy's memory pools to the device."""
    gc.collect()
    if "torch" in libs:
        libs["torch"].cuda.empty_cache()
    if "cupy" in libs:
        libs["cupy"].get_default_memory_pool().free_all_blocks()


# --------------------------------------------------------------------------
# timers
# --------------------------------------------------------------------------
def _event_backend():
    """Return (make_event, elapsed_ms, synchronize, spin) from torch, else CuPy.

    ``spin(cycles)`` enqueues a kernel that busy-waits (torch only, else None).
    """
    try:
        import torch

        if torch.cuda.is_available():
            return (lambda: torch.cuda.Event(enable_timing=True),
                    lambda start, end: start.elapsed_time(end),
                    torch.cuda.synchronize, getattr(torch.cuda, "_sleep", None))
    except ImportError:
        pass
    try:
        import cupy

        return (cupy.cuda.Event, cupy.cuda.get_elapsed_time,
                cupy.cuda.runtime.deviceSynchronize, None)
    except ImportError:
        raise RuntimeError("device_timer needs torch (with CUDA) or CuPy for CUDA events")


def device_timer(fn, repeats=100, warmup=10, sync=None, hide_host=False, spin_cycles=1_000_000):
    """Median device time of one ``fn()`` call, in seconds.

    Each call is bracketed by a pair of CUDA events recorded on the current
    (default) stream; the calls are issued back to back with no host sync in
    between, so the figure is the steady-state time per call of a loop: the
    kernel time when the host keeps ahead of the GPU, the host dispatch time
    when it does not. With ``hide_host`` a spin kernel of ``spin_cycles``
    clock cycles (default about 0.5 ms at 2 GHz; longer for calls whose host
    work takes longer) runs before each call, so that its launches are
    queued before the start event fires: the kernel time alone (needs
    torch). ``sync`` (e.g. ``ng.synchronize``)
    runs after the warm-up and after the timed calls.
    """
    make_event, elapsed_ms, synchronize, spin = _event_backend()
    if hide_host and spin is None:
        raise RuntimeError("hide_host needs torch.cuda._sleep")
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    synchronize()
    starts = [make_event() for _ in range(repeats)]
    ends = [make_event() for _ in range(repeats)]
    for start, end in zip(starts, ends):
        if hide_host:
            spin(spin_cycles)
        start.record()
        fn()
        end.record()
    if sync is not None:
        sync()
    synchronize()
    return statistics.median(elapsed_ms(s, e) for s, e in zip(starts, ends)) / 1e3


def chain_timer(fn, calls=40, repeats=9, warmup=3, spin_cycles=60_000_000):
    """Median device time per call of ``calls`` calls of ``fn()`` queued back to
    back, in seconds: one pair of CUDA events around the whole chain, a spin
    kernel of ``spin_cycles`` clock cycles first (about 30 ms) so that every
    launch is queued before the chain starts.  This is the time a call costs
    inside a model's stream of kernels: what a kernel's start and end cost
    beside its neighbours (launch latency, set-up overlapped with the kernel
    before it) counts, the host's time does not.  Needs torch.
    """
    make_event, elapsed_ms, synchronize, spin = _event_backend()
    if spin is None:
        raise RuntimeError("chain_timer needs torch.cuda._sleep")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        spin(spin_cycles)
        start, end = make_event(), make_event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        synchronize()
        times.append(elapsed_ms(start, end) / calls)
    return statistics.median(times) / 1e3


def device_times(fn, repeats, warmup, extra, impl, sync=None):
    """device_timer(fn) in seconds; also stores its kernel-only time (hide_host) in
    ``extra["kernel_only_us"][impl]``, None where it cannot be measured."""
    seconds = device_timer(fn, repeats, warmup, sync=sync)
    try:
        kernel = device_timer(fn, repeats, 0, sync=sync, hide_host=True) * 1e6
    except RuntimeError:
        kernel = None
    extra.setdefault("kernel_only_us", {})[impl] = kernel
    return seconds


def host_timer(fn, n=2000, batches=5, warmup=100, sync=None, include_sync=False):
    """Median host time of one ``fn()`` call, in seconds (perf_counter).

    Times ``batches`` batches of ``n`` calls and returns the median batch time
    divided by ``n``. ``sync`` runs after the warm-up and after every batch;
    outside the timed region unless ``include_sync`` (then the figure is the
    wall-clock time per call including the device work).
    """
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if include_sync and sync is not None:
            sync()
        per_call.append((time.perf_counter() - t0) / n)
        if not include_sync and sync is not None:
            sync()
    return statistics.median(per_call)


def host_call_times(fn, sync, calls=50, batches=3, warmup=3):
    """Host seconds of each of ``batches * calls`` calls of ``fn()``, sorted,
    each call timed alone (perf_counter_ns), the queue drained by ``sync``
    before every batch so that a full launch queue never blocks a call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(batches):
        sync()
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - t0)
    sync()
    return sorted(t / 1e9 for t in times)


def interleaved_call_times(fns, sync, calls=50, batches=3, warmup=3):
    """:func:`host_call_times` of several implementations (``{name: fn}``),
    their batches taken in turn: a host whose speed drifts over seconds
    (the GPU machines' does, by a third) then moves every implementation's
    figure alike, where timing one after the other would favour whichever
    ran in a fast spell.  Returns ``{name: sorted seconds}``."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(batches):
        for name, fn in fns.items():
            sync()
            for _ in range(calls):
                t0 = time.perf_counter_ns()
                fn()
                times[name].append(time.perf_counter_ns() - t0)
    sync()
    return {name: sorted(t / 1e9 for t in ts) for name, ts in times.items()}


def host_per_call(fn, sync, calls=50, batches=3, warmup=3):
    """Median of :func:`host_call_times`: host seconds of one ``fn()`` call."""
    return statistics.median(host_call_times(fn, sync, calls, batches, warmup))


def stat(ng, key):
    """``ng.stats()[key]`` of a gpuarray factory, or None where it is not given."""
    try:
        return ng.stats()[key]
    except Exception:
        return None


def time_gpuarray(ng, run, out, check, extra, repeats=100, warmup=10):
    """Validate ``run`` (it writes ``out``) with ``check(out, "gpuarray")``, then time it.

    Records the kernels launched per call and a wall-clock cross-check in
    ``extra``; returns the device_timer median in seconds.
    """
    run()
    ng.synchronize()
    check(out, "gpuarray")
    before = stat(ng, "kernels_launched")
    run()
    ng.synchronize()
    after = stat(ng, "kernels_launched")
    extra["gpuarray_kernels_per_call"] = None if None in (before, after) else after - before
    seconds = device_times(run, repeats, warmup, extra, "gpuarray", sync=ng.synchronize)
    # Events on the default stream would miss kernels launched on another stream.
    wall = host_timer(run, n=repeats, batches=3, warmup=0, sync=ng.synchronize, include_sync=True)
    extra["gpuarray_wall_us"] = wall * 1e6
    if seconds < 0.5 * wall:
        print(f"  warning: events say {seconds * 1e6:.1f} µs, the wall clock "
              f"{wall * 1e6:.1f} µs per call: does gpuarray launch on another stream?")
    return seconds


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def to_host(x):
    """numpy array from a numpy, torch, CuPy or gpuarray array."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        return (x.float() if x.dtype.is_floating_point and x.element_size() == 2 else x).numpy()
    if hasattr(x, "get"):          # CuPy and gpuarray tensors
        return np.asarray(x.get())
    return np.asarray(x)


def check_close(ours, ref, rtol, atol, what):
    """Raise AssertionError unless |ours - ref| <= atol + rtol * |ref| everywhere.

    ``ours`` may live on the device (torch, CuPy, gpuarray); it is copied to
    the host and compared in float64. Returns the max absolute error.
    """
    import numpy as np

    got = np.asarray(to_host(ours), dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise AssertionError(f"{what}: shape {got.shape} != reference shape {ref.shape}")
    err = np.abs(got - ref)
    err[np.isnan(got) != np.isnan(ref)] = np.inf
    err[np.isnan(got) & np.isnan(ref)] = 0.0
    bad = err > atol + rtol * np.abs(ref)
    max_err = float(err.max()) if err.size else 0.0
    if bad.any():
        idx = np.unravel_index(int(np.argmax(err)), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} elements outside "
            f"atol={atol:.3g} rtol={rtol:.3g}; max abs error {max_err:.4g} at {idx} "
            f"(got {got[idx]!r}, expected {ref[idx]!r})")
    return max_err


# --------------------------------------------------------------------------
# result rows: one dict per case, one value per implementation
# --------------------------------------------------------------------------
class Unavailable(Exception):
    """A library is not importable here: its cell reads n/a, with no traceback."""


def new_row(case, label, impls, unit="us", higher_is_better=False):
    """A result row. ``values`` are in ``unit`` (us, ms or TB/s); ``times_us`` feed the chart."""
    return {"case": case, "label": label, "unit": unit, "higher_is_better": higher_is_better,
            "values": dict.fromkeys(impls), "times_us": dict.fromkeys(impls), "errors": {},
            "target": None, "target_us": None, "target_text": "", "met": None, "extra": {}}


def fmt(value, unit):
    if value is None:
        return "n/a"
    if unit == "TB/s":
        return f"{value:.2f} TB/s"
    if unit == "ms":
        return f"{value:.2f} ms"
    return f"{value:.1f} µs"


def put(row, impl, seconds, value=None):
    """Store a time (and its value in the row's unit, default µs) and print it."""
    row["times_us"][impl] = seconds * 1e6
    row["values"][impl] = seconds * 1e6 if value is None else value
    print(f"  {impl:<14} {fmt(row['values'][impl], row['unit'])}")


def measure(row, impl, fn, to_value=None):
    """Store ``fn()`` (seconds per call) in ``row``; on failure n/a and the reason."""
    try:
        seconds = fn()
    except Exception as e:
        failed(row, impl, e)
        return
    put(row, impl, seconds, to_value(seconds) if to_value else None)


def failed(row, impl, e):
    """Record in ``row`` that ``impl`` is n/a because of ``e`` (call it in
    the ``except`` clause: a failure, not a missing library, prints its
    traceback)."""
    if isinstance(e, Unavailable):
        row["errors"][impl] = f"unavailable: {e}"
        print(f"  {impl:<14} n/a ({e})")
        return
    traceback.print_exc()
    row["errors"][impl] = f"{type(e).__name__}: {e}"
    print(f"  {impl:<14} n/a (failed: {type(e).__name__})")


def set_target(row, value, text, target_us=None, ours="gpuarray"):
    """Record the target and whether ``ours`` met it (None where either is missing)."""
    if target_us is None and value is not None:
        target_us = value * {"us": 1.0, "ms": 1e3}.get(row["unit"], float("nan"))
    row.update(target=value, target_text=text, target_us=target_us)
    got = row["values"][ours]
    if got is not None and value is not None:
        row["met"] = bool(got >= value if row["higher_is_better"] else got <= value)


# --------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------
def table_cells(row, impls):
    """One row of the printed table: n/a = unavailable or failed, - = not measured."""
    cells = {"case": row["case"], "what": row["label"]}
    for impl in impls:
        value = row["values"][impl]
        cells[impl] = fmt(value, row["unit"]) if value is not None or impl in row["errors"] else "-"
    cells["target"] = row["target_text"]
    cells["met?"] = {True: "yes", False: "NO"}.get(row["met"], "-")
    return cells


def print_table(rows, columns=None, left=2, file=None):
    """Print dicts (or sequences, given ``columns``) as a table; ``left`` columns flush left."""
    if not rows:
        print("(no rows)", file=file)
        return
    if columns is None:
        columns = list(rows[0])
    cells = [[str(c) for c in columns]]
    for row in rows:
        values = [row.get(c, "") for c in columns] if isinstance(row, dict) else list(row)
        cells.append(["" if v is None else str(v) for v in values])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]

    def line(r):
        return "  ".join(v.ljust(w) if i < left else v.rjust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    print(line(cells[0]), file=file)
    print("  ".join("-" * w for w in widths), file=file)
    for r in cells[1:]:
        print(line(r), file=file)


def device_info():
    """Name of CUDA device 0 and library versions, as far as they import."""
    info = {"device": "unknown", "python": platform.python_version()}
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name(0)
    except ImportError:
        info["torch"] = None
    try:
        import cupy

        info["cupy"] = cupy.__version__
        if info["device"] == "unknown":
            name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
            info["device"] = name.decode() if isinstance(name, bytes) else name
    except Exception:
        info.setdefault("cupy", None)
    return info


def write_results(name, rows, meta):
    """Write results/<name>.json and, if matplotlib imports, results/<name>.png."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    data = {"name": name,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **device_info(),
            "meta": meta,
            "rows": rows}
    json_path = RESULTS_DIR / f"{name}.json"
    json_path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"wrote {json_path}")
    png_path = json_path.with_suffix(".png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"matplotlib is not installed: make the chart elsewhere with\n"
              f"    python3 benchmarks/plot.py {json_path}")
        return json_path
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import plot

    plot.render(data, png_path)
    print(f"wrote {png_path}")
    return json_path
