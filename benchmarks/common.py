"""Helpers shared by the benchmarks: peers, validation, tables and result files (timers: timing.py).

Only the standard library is imported at module level; numpy, torch, CuPy and
matplotlib are imported where they are used, so ``--help`` works anywhere.
"""
import datetime
import gc
import json
import platform
import sys
import traceback
from pathlib import Path

from timing import device_times, host_timer

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
