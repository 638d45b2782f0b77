"""Complex numbers and Fourier transforms: ours beside CuPy and torch, same run.

    python3 benchmarks/bench_complex.py [--quick]

Cases, numpy-style code as a user writes it (the result's allocation and
host work included; ``--quick``: sizes / 8):

* a complex64 elementwise chain over 2**24 elements,
  ``z * w + conj(z) * exp(1j * theta)`` with a complex scalar -- one fused
  kernel for us, one kernel per operation for CuPy and torch eager, and
  torch.compile's fused kernel;
* ``sum`` of 2**24 complex128 values;
* a batch of 2**14 complex64 FFTs of 1024 points (last axis);
* ``rfft2`` of a 4096 x 4096 float32 image;
* one complex64 FFT of 2**24 points, and its inverse.

The transforms run on cuFFT on every side; ours adds the copy that puts
the transformed axes last (contiguous, in the transform's dtype) and the
allocation of the result.  Each case is validated against CuPy's result
first (relative to the largest magnitude: 1e-5 in single precision,
1e-12 in double), then timed with CUDA events (median of the repeats).
The elementwise chain also reports its bandwidth (two inputs read, one
output written) as a fraction of a device-to-device copy's in the same run.

Targets: the chain at least CuPy's and torch.compile's speed (one kernel
against five); the reduction at least CuPy's; the transforms within 10%
of CuPy's (the same library underneath).  Writes
benchmarks/results/complex.json and .png.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, print_table, set_target  # noqa: E402
from timing import device_timer  # noqa: E402
from common import table_cells, to_host, torch_cupy_and_gpu, write_results  # noqa: E402

IMPLS = ("gpuarray", "cupy", "torch", "torch.compile")


def inputs(cp, scale):
    rng = cp.random.default_rng(0)
    n = (1 << 24) // scale

    def complex_values(count, dtype):
        parts = rng.standard_normal((2, count), dtype=cp.float64)
        return (parts[0] + 1j * parts[1]).astype(dtype)

    side = 4096 // int(scale ** 0.5)
    return {"z": complex_values(n, cp.complex64), "w": complex_values(n, cp.complex64),
            "theta": rng.random(n, dtype=cp.float32),
            "z128": complex_values(n, cp.complex128),
            "batch": complex_values(n, cp.complex64).reshape(-1, 1024),
            "image": rng.random((side, side), dtype=cp.float32),
            "long": complex_values(n, cp.complex64)}


def chain(xp, z, w, theta):
    return z * w + xp.conj(z) * xp.exp(1j * theta) * (0.5 - 2j)


def cases(ng, cp, torch, data):
    """name -> (ours, CuPy's, torch's, torch.compile's or None, bytes moved or None)."""
    o = {k: ng.from_dlpack(v) for k, v in data.items()}
    t = {k: torch.from_dlpack(v) for k, v in data.items()}
    compiled = torch.compile(lambda z, w, theta: chain(torch, z, w, theta))
    n = data["z"].size

    def ours_chain():
        # numpy-style code; the lazy result runs as one kernel when evaluated
        return ng.evaluate(chain(ng, o["z"], o["w"], o["theta"]))

    return {
        "complex64 chain": (ours_chain, lambda: chain(cp, data["z"], data["w"], data["theta"]),
                            lambda: chain(torch, t["z"], t["w"], t["theta"]),
                            lambda: compiled(t["z"], t["w"], t["theta"]), 20 * n),
        "sum complex128": (lambda: ng.evaluate(ng.sum(o["z128"])), lambda: cp.sum(data["z128"]),
                           lambda: torch.sum(t["z128"]), None, None),
        "fft batch 1024-point": (lambda: ng.fft.fft(o["batch"]), lambda: cp.fft.fft(data["batch"]),
                                 lambda: torch.fft.fft(t["batch"]), None, None),
        "rfft2 float32 image": (lambda: ng.fft.rfft2(o["image"]),
                                lambda: cp.fft.rfft2(data["image"]),
                                lambda: torch.fft.rfft2(t["image"]), None, None),
        "fft 1-D long": (lambda: ng.fft.fft(o["long"]), lambda: cp.fft.fft(data["long"]),
                         lambda: torch.fft.fft(t["long"]), None, None),
        "ifft 1-D long": (lambda: ng.fft.ifft(o["long"]), lambda: cp.fft.ifft(data["long"]),
                          lambda: torch.fft.ifft(t["long"]), None, None),
    }


def validate(name, got, expected):
    got, expected = to_host(got), to_host(expected)
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise AssertionError(f"{name}: {got.shape} {got.dtype}, CuPy's {expected.shape} "
                             f"{expected.dtype}")
    tolerance = 1e-12 if expected.dtype == np.complex128 else 1e-5
    worst = np.abs(got.astype(np.complex128) - expected).max() / np.abs(expected).max()
    if worst > tolerance:
        raise AssertionError(f"{name}: off CuPy's by {worst:.1e} of the largest magnitude")
    return worst


def copy_seconds(torch, data):
    z = torch.from_dlpack(data["z"])
    target = torch.empty_like(z)
    return device_timer(lambda: target.copy_(z), 20, 3), 2 * z.numel() * z.element_size()


def run(ng, cp, torch, data, repeats):
    copy, copy_bytes = copy_seconds(torch, data)
    rows = []
    for name, (ours, theirs, torchs, compiled, moved) in cases(ng, cp, torch, data).items():
        worst = validate(name, ours(), theirs())
        impls = [(impl, fn) for impl, fn in zip(IMPLS, (ours, theirs, torchs, compiled))
                 if fn is not None]
        for impl, fn in impls[2:]:
            validate(f"{name} ({impl})", fn(), theirs())
        row = new_row(name, "ms per call", IMPLS, unit="ms")
        for impl, fn in impls:
            seconds = device_timer(fn, repeats, 2, sync=ng.synchronize)
            row["values"][impl] = seconds * 1e3
            row["times_us"][impl] = seconds * 1e6
        row["extra"] = {"max_error_vs_cupy": float(worst)}
        if moved is not None:
            bandwidth = moved / (row["values"]["gpuarray"] / 1e3)
            row["extra"]["fraction_of_copy_bandwidth"] = bandwidth / (copy_bytes / copy)
        peers = [row["values"]["cupy"]] + ([row["values"]["torch.compile"]] if compiled else [])
        if name.startswith(("fft", "ifft", "rfft")):
            set_target(row, 1.1 * row["values"]["cupy"], "within 10% of CuPy")
        else:
            set_target(row, min(peers), ">= CuPy" + (", >= compile" if compiled else ""))
        rows.append(row)
        print(f"{name}: ours {row['values']['gpuarray']:.3f} ms, CuPy {row['values']['cupy']:.3f}, "
              f"torch {row['values']['torch']:.3f}"
              + (f", compile {row['values']['torch.compile']:.3f}" if compiled else ""),
              flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes / 8")
    args = parser.parse_args()
    peers = torch_cupy_and_gpu("bench_complex")
    if peers is None:
        return 2
    torch, cp, ng = peers
    scale = 8 if args.quick else 1
    rows = run(ng, cp, torch, inputs(cp, scale), 5 if args.quick else 20)
    print_table([table_cells(r, IMPLS) for r in rows])
    write_results("complex", rows, {"impls": IMPLS, "scale": scale})
    return 0


if __name__ == "__main__":
    sys.exit(main())
