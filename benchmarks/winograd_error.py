"""Why the fp32 Winograd route stays on F(2x2, 3x3): a numpy model of its error.

    python3 benchmarks/winograd_error.py [--channels 64,128,256,512] [--images 24]

Models a 3x3, stride-1, pad-1 convolution the way gpuarray/conv/winograd.py
runs it -- the input transform in fp32, the filter transform in fp64
rounded once, the batched GEMM's sums over the channels in fp32 in
ascending order (as the exact-fp32 GEMM adds them: one FMA a channel), the
output transform in fp32 -- for F(m x m, 3x3) with m = 2, 3 and 4 and
several choices of the Toom-Cook points, and prints the error as
bench_conv.py measures it: max |ours - ref| / mean |ref| against the
direct convolution in float64 (bench_conv's tolerance: 5e-5), and the
mean error.  No GPU needed; a few seconds a row.

What it shows (benchmarks/NOTES.rst): once the GEMM's sequential sums are
modelled, F(4x4) and F(3x3) err 7-8x more than F(2x2) even with their
best points (the sums' rounding times the output transform's growth):
3.5e-5 at 512 channels over 24 images, where the largest error grows
with the number of outputs (the H100 measured 6.6e-5 on Overfeat's conv3
data gradient); a model that sums the GEMM in numpy's own order hides
most of that (it gave F(4x4) about 2.5x F(2x2)).
"""
import argparse
import json
import os
import time

import numpy as np

#: (name, m, finite points): the point sets compared
VARIANTS = [("F(2x2) 0,+-1", 2, (0, 1, -1)),
            ("F(3x3) 0,+-1,2", 3, (0, 1, -1, 2)),
            ("F(3x3) 0,+-1,1/2", 3, (0, 1, -1, 0.5)),
            ("F(4x4) 0,+-1,+-2", 4, (0, 1, -1, 2, -2)),
            ("F(4x4) 0,+-1,2,-1/2", 4, (0, 1, -1, 2, -0.5))]


def toom_cook(points, m, r=3):
    """(B^T, G, A^T) of F(m, r) over ``points`` and infinity: Y = A^T [(G g) . (B^T d)]
    for the correlation y_i = sum_k g_k d_(i+k); B^T's rows scaled to max |.| = 1
    (the scale moved into G)."""
    def vandermonde(n):
        rows = [[p ** i for i in range(n)] for p in points] + [[0] * (n - 1) + [1]]
        return np.array(rows, dtype=np.float64)
    BT = np.linalg.inv(vandermonde(m + r - 1)).T
    G, AT = vandermonde(r), vandermonde(m).T
    scale = np.abs(BT).max(axis=1)
    return BT / scale[:, None], G * scale[:, None], AT


def _tiles(x, m, a):
    """The a x a tiles of x (N, H, W, C), m apart: (N, tiles, a, a, C)."""
    N, H, W, _ = x.shape
    return np.stack([x[:, ty:ty + a, tx:tx + a] for ty in range(0, H - a + 1, m)
                     for tx in range(0, W - a + 1, m)], axis=1)


def winograd_fp32(I, F, BT, G, AT):  # noqa: E741
    """The padded image I (N, H, W, C) convolved with F (K, 3, 3, C), as the route
    computes it in fp32; output (N, P, Q, K) cropped to the valid size."""
    m, a = AT.shape[0], BT.shape[0]
    N, H, W, C = I.shape
    P, Q = H - 2, W - 2
    TP, TQ = -(-P // m), -(-Q // m)
    padded = np.zeros((N, TP * m + 2, TQ * m + 2, C), np.float32)
    padded[:, :H, :W] = I
    bt = BT.astype(np.float32)
    V = np.einsum("ij,ntjkc,lk->ntilc", bt, _tiles(padded, m, a), bt).astype(np.float32)
    U = np.einsum("ij,kjlc,ml->kimc", G, F.astype(np.float64), G).astype(np.float32)
    V = V.transpose(2, 3, 0, 1, 4).reshape(a * a, -1, C)
    U = U.transpose(1, 2, 3, 0).reshape(a * a, C, -1)
    M = np.zeros((a * a, V.shape[1], U.shape[2]), np.float32)
    for c in range(C):  # one FMA a channel, in order (rounded as fp32 after each)
        M += V[:, :, c:c + 1] * U[:, c:c + 1, :]
    at = AT.astype(np.float32)
    Y = np.einsum("ij,jknte,lk->ntile", at, M.reshape(a, a, N, TP * TQ, -1), at)
    Y = Y.astype(np.float32).reshape(N, TP, TQ, m, m, -1).transpose(0, 1, 3, 2, 4, 5)
    return Y.reshape(N, TP * m, TQ * m, -1)[:, :P, :Q]


def direct_fp64(I, F):  # noqa: E741
    N, H, W, C = I.shape
    P, Q = H - 2, W - 2
    return sum(np.einsum("npqc,kc->npqk", I[:, r:r + P, s:s + Q].astype(np.float64),
                         F[:, r, s].astype(np.float64)) for r in range(3) for s in range(3))


def errors(channels, images, size=14, filters=64, seed=1):
    """{variant: (max error / mean |ref|, mean error / mean |ref|)} at ``channels``."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((images, size, size, channels)).astype(np.float32)
    F = (rng.standard_normal((filters, 3, 3, channels)) / np.sqrt(9 * channels)).astype(np.float32)
    I = np.pad(E, ((0, 0), (1, 1), (1, 1), (0, 0)))  # noqa: E741
    ref = direct_fp64(I, F)
    scale = np.abs(ref).mean()
    out = {}
    for name, m, points in VARIANTS:
        err = np.abs(winograd_fp32(I, F, *toom_cook(points, m)) - ref)
        out[name] = (float(err.max() / scale), float(err.mean() / scale))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--channels", default="64,128,256,512")
    parser.add_argument("--images", type=int, default=24)
    args = parser.parse_args()
    table = {}
    print(f"{'channels':>8}  " + "  ".join(f"{name:>22}" for name, *_ in VARIANTS))
    for C in (int(c) for c in args.channels.split(",")):
        start = time.perf_counter()
        table[C] = errors(C, args.images)
        print(f"{C:>8}  " + "  ".join(f"{mx:.1e} (mean {mn:.1e})" for mx, mn in table[C].values())
              + f"   [{time.perf_counter() - start:.0f} s]", flush=True)
    print("max |err| / mean |ref| against float64 (mean error in brackets); tolerance 5e-5")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "winograd_error.json")
    with open(path, "w") as f:
        json.dump({"images": args.images, "errors": {str(c): v for c, v in table.items()}}, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
