"""The numpy surface's data-dependent functions: ours beside CuPy and torch, same run.

    python3 benchmarks/bench_numpy.py [--quick]

Issue 15's cases: sort and argsort of 1e8 random float32 keys, a batch of
1e4 rows of 1e4 sorted along the last axis, cumsum of 1e8 float32, a
boolean-mask get of 1e8 float32 (half true), an integer gather of 1e7
random positions out of 1e8, unique of 1e7 int32 drawn from 1e5 values,
a histogram of the 1e8 keys in 100 bins, searchsorted of 1e7 needles
in 1e6 sorted keys, and the lazy chain ``float(sum(exp(-x * x) * sin(3 * x)
+ 0.5 * x))`` over 1e7 and 1e8 of the keys -- numpy-style code, the same
source for every library, no ``out[:]`` (``--quick``: sizes / 10).  The
chain also runs under ``torch.compile``.  Each case is validated against
CuPy's result first (exactly: these functions have one right answer; the
running sum within 1e-5 of its largest value), then timed with CUDA events
as the user calls it (host work and the result's allocation included; the
mask get and unique read a count back, on every side): the median of 10
calls, of 100 for the chain, whose calls take ~0.1 ms on a noisy host.  The sorts and the
scan also report their effective bandwidth (their input read and their
result written once, over the time) as a fraction of a device-to-device
copy's (torch ``copy_`` into a buffer made beforehand) in the same run.

Targets (issue 15): sort and scan at least CuPy's speed (CUB); the lazy
chain at least 3x CuPy's speed (it runs a kernel per operation) and at
least torch.compile's; the rest reported as measured.

Writes benchmarks/results/numpy.json and .png.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_peers, new_row, print_table, set_target  # noqa: E402
from timing import device_timer  # noqa: E402
from common import table_cells, write_results  # noqa: E402

IMPLS = ("gpuarray", "cupy", "torch", "torch.compile")


def inputs(cp, n):
    rng = cp.random.default_rng(0)
    side = int(n ** 0.5)
    keys = rng.random(n, dtype=cp.float32)
    return {"keys": keys, "mask": rng.random(n, dtype=cp.float32) < 0.5,
            "positions": rng.integers(0, n, n // 10, dtype=cp.int64),
            "labels": rng.integers(0, 100_000, n // 10, dtype=cp.int32),
            "sorted": cp.sort(keys[:n // 100]), "needles": keys[n // 100:n // 100 + n // 10],
            "rows": keys[:side * side].reshape(side, side)}


def cases(ng, cp, torch, data):
    """name -> (ours, CuPy's, torch's, bytes moved once or None), each a callable."""
    o = {k: ng.from_dlpack(v) for k, v in data.items()}
    t = {k: torch.from_dlpack(v) for k, v in data.items()}
    n = data["keys"].size
    return {
        "sort float32": (lambda: ng.sort(o["keys"]), lambda: cp.sort(data["keys"]),
                         lambda: torch.sort(t["keys"]).values, 8 * n),
        "argsort float32": (lambda: ng.argsort(o["keys"]), lambda: cp.argsort(data["keys"]),
                            lambda: torch.sort(t["keys"], stable=True).indices, 12 * n),
        "sort rows (last axis)": (lambda: ng.sort(o["rows"], axis=-1),
                                  lambda: cp.sort(data["rows"], axis=-1),
                                  lambda: torch.sort(t["rows"], dim=-1).values, 8 * n),
        "cumsum float32": (lambda: ng.cumsum(o["keys"]), lambda: cp.cumsum(data["keys"]),
                           lambda: torch.cumsum(t["keys"], 0), 8 * n),
        "mask get (50%)": (lambda: o["keys"][o["mask"]], lambda: data["keys"][data["mask"]],
                           lambda: t["keys"][t["mask"]], None),
        "integer gather": (lambda: ng.take(o["keys"], o["positions"]),
                           lambda: cp.take(data["keys"], data["positions"]),
                           lambda: t["keys"][t["positions"]], None),
        "unique int32": (lambda: ng.unique(o["labels"]), lambda: cp.unique(data["labels"]),
                         lambda: torch.unique(t["labels"]), None),
        "histogram (100 bins)": (lambda: ng.histogram(o["keys"], 100, (0.0, 1.0))[0],
                                 lambda: cp.histogram(data["keys"], 100, (0.0, 1.0))[0],
                                 lambda: torch.histc(t["keys"], 100, 0.0, 1.0), None),
        "searchsorted": (lambda: ng.searchsorted(o["sorted"], o["needles"]),
                         lambda: cp.searchsorted(data["sorted"], data["needles"]),
                         lambda: torch.searchsorted(t["sorted"], t["needles"]), None),
        **chain_cases(ng, cp, torch, o, data, t),
    }


def chain(xp, x):
    """The lazy chain: numpy-style code, run as written by every library."""
    y = xp.exp(-x * x) * xp.sin(3 * x) + 0.5 * x
    return float(xp.sum(y))


def chain_cases(ng, cp, torch, o, data, t):
    """The chain over the first tenth of the keys and over all of them."""
    n = data["keys"].size
    compiled = torch.compile(lambda x: chain_sum(torch, x))
    cases = {}
    for size, label in ((n // 10, "1e7" if n >= 10**8 else "1e6"), (n, "1e8" if n >= 10**8 else "1e7")):
        ours, theirs, torchs = o["keys"][:size], data["keys"][:size], t["keys"][:size]
        cases[f"lazy chain {label}"] = (
            lambda x=ours: chain(ng, x), lambda x=theirs: chain(cp, x),
            lambda x=torchs: chain(torch, x), None, lambda x=torchs: float(compiled(x)))
    return cases


def chain_sum(xp, x):
    """The chain's sum, left on the device (what torch.compile compiles)."""
    return xp.sum(xp.exp(-x * x) * xp.sin(3 * x) + 0.5 * x)


def to_numpy(x):
    """A host copy of a torch tensor, or of an array of ours or CuPy's (a
    Python number stays one)."""
    if isinstance(x, float):
        return x
    return x.cpu().numpy() if hasattr(x, "cpu") else x.get()


def copy_seconds(torch, data):
    """A device-to-device copy of the keys into a buffer made beforehand: the
    bandwidth yardstick."""
    keys = torch.from_dlpack(data["keys"])
    target = torch.empty_like(keys)
    return device_timer(lambda: target.copy_(keys), 20, 3)


def validate(name, got, expected, data):
    """Exact, except the running sum and the chain (float rounding differs with
    the order of the additions: within 1e-5 of the largest partial sum, the
    chain's sums within 1e-5 of each other); the histogram against numpy's on
    the host (CuPy bins values at the edges its own way)."""
    if name.startswith("lazy chain"):
        if abs(got - expected) > 1e-5 * abs(expected):
            raise AssertionError(f"{name}: ours {got}, CuPy's {expected}")
        return
    if name.startswith("histogram"):
        expected = np.histogram(to_numpy(data["keys"]), 100, (0.0, 1.0))[0]
    if got.shape != expected.shape:
        raise AssertionError(f"{name}: shape {got.shape}, CuPy's {expected.shape}")
    if name.startswith("cumsum"):
        worst = np.abs(got.astype(np.float64) - expected).max() / np.abs(expected).max()
        if worst > 1e-5:
            raise AssertionError(f"{name}: off CuPy's by {worst:.1e} of the largest sum")
    elif not np.array_equal(got, expected):
        raise AssertionError(f"{name}: ours differs from CuPy's")


def run(ng, cp, torch, data, repeats):
    copy = copy_seconds(torch, data)
    copy_bytes = 2 * data["keys"].nbytes
    rows = []
    for name, (ours, theirs, torchs, moved, *compiled) in cases(ng, cp, torch, data).items():
        validate(name, to_numpy(ours()), to_numpy(theirs()), data)
        if compiled:
            validate(name, compiled[0](), theirs(), data)
        row = new_row(name, "ms per call", IMPLS, unit="ms")
        # the chain's calls are short and host-bound: more of them steady the median
        calls = repeats * (10 if name.startswith("lazy chain") else 1)
        for impl, fn in zip(IMPLS, (ours, theirs, torchs, *compiled)):
            seconds = device_timer(fn, calls, 2, sync=ng.synchronize)
            row["values"][impl] = seconds * 1e3
            row["times_us"][impl] = seconds * 1e6
        if moved is not None:
            fraction = moved / (row["values"]["gpuarray"] / 1e3) / (copy_bytes / copy)
            row["extra"] = {"fraction_of_copy_bandwidth": fraction}
        if name.startswith(("sort", "argsort", "cumsum")):
            set_target(row, row["values"]["cupy"], ">= CuPy")
        if compiled:
            set_target(row, min(row["values"]["cupy"] / 3, row["values"]["torch.compile"]),
                       ">= 3x CuPy, >= compile")
        rows.append(row)
        ratio = row["values"]["cupy"] / row["values"]["gpuarray"]
        note = f", {row['extra']['fraction_of_copy_bandwidth']:.0%} of copy bandwidth" \
            if moved is not None else ""
        print(f"{name}: ours {row['values']['gpuarray']:.3f} ms, CuPy "
              f"{row['values']['cupy']:.3f}, torch {row['values']['torch']:.3f} "
              f"({ratio:.2f}x CuPy{note})", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes / 10")
    args = parser.parse_args()
    libs, missing = load_peers()
    if "torch" not in libs or "cupy" not in libs:
        print(f"bench_numpy needs torch and CuPy: {missing}")
        return 2
    import gpuarray

    if not gpuarray.gpu_available():
        print("bench_numpy needs a GPU")
        return 2
    torch, cp = libs["torch"], libs["cupy"]
    ng = gpuarray.GPU()
    n = 10_000_000 if args.quick else 100_000_000
    rows = run(ng, cp, torch, inputs(cp, n), 5 if args.quick else 10)
    print_table([table_cells(r, IMPLS) for r in rows])
    write_results("numpy", rows, {"impls": IMPLS, "n": n})
    return 0


if __name__ == "__main__":
    sys.exit(main())
