"""Linear algebra: ours (cuSOLVER) beside CuPy and torch.linalg, same run.

    python3 benchmarks/bench_linalg.py [--quick]

Cases, float32, called as users write them (``--quick``: sizes / 2):

* ``solve`` of a 4096 x 4096 system with 16 right-hand sides (LU);
* ``cholesky`` of a 4096 x 4096 positive-definite matrix;
* ``eigh`` of a 2048 x 2048 symmetric matrix;
* ``svd`` (reduced) of a 2048 x 1024 matrix;
* ``qr`` (reduced) of a 4096 x 1024 matrix;
* ``det`` of a 4096 x 4096 matrix;
* ``solve`` of a batch of 256 systems of 32 x 32 (one right-hand side each).

Each is validated first: solutions and determinants against CuPy's
(relative to the largest magnitude, 1e-3 -- the systems are well
conditioned -- and 1e-3 for log|det|), factorisations by reconstruction.
Then each is timed with CUDA events (median of the repeats), the result's
allocation and our column-major copies and ``info`` read-back included.

No target is set by the issue; the figures say where the path stands.
Writes benchmarks/results/linalg.json and .png.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, print_table  # noqa: E402
from timing import device_timer  # noqa: E402
from common import table_cells, to_host, torch_cupy_and_gpu, write_results  # noqa: E402

IMPLS = ("gpuarray", "cupy", "torch")


def inputs(cp, scale):
    rng = cp.random.default_rng(0)
    n, m = 4096 // scale, 2048 // scale

    def well_conditioned(size):
        return rng.standard_normal((size, size), dtype=cp.float32) + size ** 0.5 * cp.eye(
            size, dtype=cp.float32)

    a = rng.standard_normal((n, n), dtype=cp.float32)
    return {"A": well_conditioned(n), "B": rng.standard_normal((n, 16), dtype=cp.float32),
            "S": (a @ a.T / n + cp.eye(n, dtype=cp.float32)),
            "H": (lambda h: (h + h.T) / 2)(rng.standard_normal((m, m), dtype=cp.float32)),
            "W": rng.standard_normal((m, m // 2), dtype=cp.float32),
            "T": rng.standard_normal((n, n // 4), dtype=cp.float32),
            "As": rng.standard_normal((256, 32, 32), dtype=cp.float32)
            + 6 * cp.eye(32, dtype=cp.float32),
            "bs": rng.standard_normal((256, 32, 1), dtype=cp.float32)}


def cases(ng, cp, torch, d):
    """name -> (ours, CuPy's, torch's, check(result, inputs as numpy))."""
    o = {k: ng.from_dlpack(v) for k, v in d.items()}
    t = {k: torch.from_dlpack(v) for k, v in d.items()}
    la = ng.linalg
    return {
        "solve 4096, 16 rhs": (lambda: la.solve(o["A"], o["B"]),
                               lambda: cp.linalg.solve(d["A"], d["B"]),
                               lambda: torch.linalg.solve(t["A"], t["B"]), "solution"),
        "cholesky 4096": (lambda: la.cholesky(o["S"]), lambda: cp.linalg.cholesky(d["S"]),
                          lambda: torch.linalg.cholesky(t["S"]), "solution"),
        "eigh 2048": (lambda: la.eigh(o["H"]), lambda: cp.linalg.eigh(d["H"]),
                      lambda: torch.linalg.eigh(t["H"]), "eigh"),
        "svd 2048x1024": (lambda: la.svd(o["W"], full_matrices=False),
                          lambda: cp.linalg.svd(d["W"], full_matrices=False),
                          lambda: torch.linalg.svd(t["W"], full_matrices=False), "svd"),
        "qr 4096x1024": (lambda: la.qr(o["T"]), lambda: cp.linalg.qr(d["T"]),
                         lambda: torch.linalg.qr(t["T"]), "qr"),
        "det 4096": (lambda: la.slogdet(o["A"])[1], lambda: cp.linalg.slogdet(d["A"])[1],
                     lambda: torch.linalg.slogdet(t["A"])[1], "solution"),
        "solve 256 x 32x32": (lambda: la.solve(o["As"], o["bs"]),
                              lambda: cp.linalg.solve(d["As"], d["bs"]),
                              lambda: torch.linalg.solve(t["As"], t["bs"]), "solution"),
    }


def validate(name, kind, ours, theirs, source):
    """Raise AssertionError unless ours is right (see the module docstring)."""
    if kind == "solution":
        got, want = to_host(ours), to_host(theirs)
        worst = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    elif kind == "eigh":
        w, v = (to_host(x) for x in ours)
        worst = np.abs((v * w) @ v.T - source).max() / np.abs(source).max()
    elif kind == "svd":
        u, s, vh = (to_host(x) for x in ours)
        worst = np.abs((u * s) @ vh - source).max() / np.abs(source).max()
    else:
        q, r = (to_host(x) for x in ours)
        worst = np.abs(q @ r - source).max() / np.abs(source).max()
    if not worst <= 1e-3:
        raise AssertionError(f"{name}: off by {worst:.1e} of the largest magnitude")
    return float(worst)


def run(ng, cp, torch, data, repeats):
    sources = {"eigh 2048": "H", "svd 2048x1024": "W", "qr 4096x1024": "T"}
    rows = []
    for name, (ours, theirs, torchs, kind) in cases(ng, cp, torch, data).items():
        source = to_host(data[sources[name]]) if name in sources else None
        worst = validate(name, kind, ours(), theirs(), source)
        row = new_row(name, "ms per call", IMPLS, unit="ms")
        for impl, fn in zip(IMPLS, (ours, theirs, torchs)):
            seconds = device_timer(fn, repeats, 1, sync=ng.synchronize)
            row["values"][impl] = seconds * 1e3
            row["times_us"][impl] = seconds * 1e6
        row["extra"] = {"max_error": worst}
        rows.append(row)
        print(f"{name}: ours {row['values']['gpuarray']:.3f} ms, CuPy "
              f"{row['values']['cupy']:.3f}, torch {row['values']['torch']:.3f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes / 2")
    args = parser.parse_args()
    peers = torch_cupy_and_gpu("bench_linalg")
    if peers is None:
        return 2
    torch, cp, ng = peers
    scale = 2 if args.quick else 1
    rows = run(ng, cp, torch, inputs(cp, scale), 3 if args.quick else 5)
    print_table([table_cells(r, IMPLS) for r in rows])
    write_results("linalg", rows, {"impls": IMPLS, "scale": scale})
    return 0


if __name__ == "__main__":
    sys.exit(main())
