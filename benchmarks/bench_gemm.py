"""GEMM benchmark: gpuarray's kernels against cuBLAS (through torch), same run.

    python3 benchmarks/bench_gemm.py [--quick]

Random normal operands made by torch and shared zero-copy with gpuarray.
Each row is validated first (max |C - C_cuBLAS| / mean |C_cuBLAS| within
the criterion of validate_gemm.py), then timed: medians of CUDA-event pairs
around back-to-back calls.  gpuarray is timed two ways: the recorded
launches of ``ng.dot`` replayed (the kernels, as a framework that caches
its plan calls them) and ``ng.dot(A, B, C)`` as written (Python planning
included).  cuBLAS is ``torch.matmul(a, b, out=c)``.  The ratio and the
targets are of the kernels alone, each call behind a spin kernel; "chain"
is the time per call of 40 calls queued back to back (ours replayed,
cuBLAS's the same way), where a kernel's launch and set-up may overlap the
one before it (ours: dependent launches, ``gpuarray.gemm.replay``).  FP8 rows (kinds
e4m3, e5m2e4m3: A's type then B's) run ``ng.dot(A, B, C, scale_a=,
scale_b=)`` beside cuBLASLt's ``torch._scaled_mm`` with the same device
scales, in the same accumulation mode (promoted to float32, the default of
both, or the tensor cores' own "fast" accumulation; see gemm_fp8.py);
each library's error against a float32 product is reported.  TFLOP/s count 2 M N K; the
skinny N = 32 rows also give the TB/s of the M x K operand (the weights)
read.  Prints a table, writes benchmarks/results/gemm.json and gemm.png
(ratio to cuBLAS per row, target ratio marked).
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import chain_timer, device_timer  # noqa: E402
import gemm_fp8  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = {"f16": 7e-3, "bf16": 7e-3, "f32": 5e-5, "tf32": 7e-3}

#: (kind, M, N, K, layout, target ratio to cuBLAS or None)
CASES = [
    ("f16", 8192, 8192, 8192, "nn", 0.9), ("f16", 4096, 4096, 4096, "nn", 0.9),
    ("bf16", 8192, 8192, 8192, "nn", 0.9), ("bf16", 4096, 4096, 4096, "nn", 0.9),
    ("f16", 4096, 32, 4096, "nn", 1.2), ("f16", 4096, 128, 4096, "nn", 1.2),
    ("f32", 4096, 4096, 4096, "nn", 1.0), ("f32", 8192, 8192, 8192, "nn", 1.0),
    ("tf32", 8192, 8192, 8192, "nt", 0.9),
    ("f16", 4096, 4096, 4096, "nt", None), ("f16", 4096, 4096, 4096, "tn", None),
    ("f16", 4096, 4096, 4096, "tt", None), ("tf32", 4096, 4096, 4096, "nn", None),
    ("bf16", 4096, 32, 4096, "nn", None), ("bf16", 4096, 128, 4096, "nn", None),
    ("f16", 3072, 128, 3072, "nn", None), ("f16", 1024, 128, 1024, "nn", None),
    ("f16", 11008, 4096, 4096, "nn", None), ("f16", 512, 512, 512, "nn", None),
    ("f16", 1000, 1000, 999, "nn", None), ("f32", 4096, 128, 4096, "nn", None),
    ("f32", 4096, 32, 4096, "nn", None),
]
#: FP8: (kind, M, N, K, output, accumulation, target ratio to torch._scaled_mm).
#: Accumulation "fp32" (ours: promoted) is timed against cuBLASLt's default
#: (promoted too), "fast" against its use_fast_accum=True.
FP8_CASES = [
    ("e4m3", 8192, 8192, 8192, "bf16", "fp32", 1.0), ("e4m3", 8192, 8192, 8192, "bf16", "fast", 1.0),
    ("e4m3", 4096, 4096, 4096, "bf16", "fp32", None), ("e4m3", 4096, 4096, 4096, "bf16", "fast", None),
    ("e5m2e4m3", 8192, 8192, 8192, "bf16", "fp32", None),
    ("e4m3", 8192, 8192, 8192, "f32", "fp32", None),
    ("e4m3", 4096, 128, 4096, "bf16", "fp32", None), ("e4m3", 4096, 32, 4096, "bf16", "fp32", None),
]


def operands(torch, kind, m, n, k, layout):
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(kind, torch.float32)
    a = torch.randn((k, m) if layout[0] == "t" else (m, k), device="cuda").to(dtype)
    b = torch.randn((n, k) if layout[1] == "t" else (k, n), device="cuda").to(dtype)
    a = a.t() if layout[0] == "t" else a
    b = b.t() if layout[1] == "t" else b
    return a, b, torch.empty((m, n), device="cuda", dtype=dtype)


def validate(torch, ours, ref, kind):
    slack = ref.abs() * torch.finfo(ours.dtype).eps if ours.element_size() == 2 else 0
    excess = ((ours.float() - ref.float()).abs() - slack).clamp_min(0)
    err = float(excess.max() / ref.float().abs().mean())
    if err > TOLERANCE[kind]:
        raise AssertionError(f"validation failed: error {err:.2e} > {TOLERANCE[kind]}")
    return err


def run_case(ng, torch, case, repeats):
    kind, m, n, k, layout, target = case
    a, b, c = operands(torch, kind, m, n, k, layout)
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    A, B, C = ng.from_dlpack(a), ng.from_dlpack(b), ng.from_dlpack(c)
    precision = "tf32" if kind == "tf32" else None
    ng.dot(A, B, C, precision=precision)
    ng.synchronize()
    ref = torch.matmul(a, b)
    err = validate(torch, c, ref, kind)
    last = ng.last_gemm
    flops = 2.0 * m * n * k
    warm = max(3, repeats // 10)
    t_kernel = device_timer(last.replay, repeats, warm, hide_host=True)
    t_call = device_timer(lambda: ng.dot(A, B, C, precision=precision), repeats, 3)
    t_cublas = device_timer(lambda: torch.matmul(a, b, out=ref), repeats, warm, hide_host=True)
    chains = chain_timer(last.replay), chain_timer(lambda: torch.matmul(a, b, out=ref))
    row = {"kind": kind, "m": m, "n": n, "k": k, "layout": layout, "kernel": last.name,
           "splits": last.splits, "cluster": last.cluster, "error": err, "target": target,
           "ours_us": t_kernel * 1e6, "ours_call_us": t_call * 1e6, "cublas_us": t_cublas * 1e6,
           "ours_tflops": flops / t_kernel / 1e12, "cublas_tflops": flops / t_cublas / 1e12}
    row["ratio"] = t_cublas / t_kernel
    row["met"] = None if target is None else row["ratio"] >= target
    _chain_figures(row, *chains)
    if n <= 32:
        weights = m * k * a.element_size()
        row["ours_weight_tbps"] = weights / t_kernel / 1e12
        row["cublas_weight_tbps"] = weights / t_cublas / 1e12
    return row


def run_fp8_case(ng, torch, case, repeats):
    kind, m, n, k, out, accumulation, target = case
    a_kind, b_kind = (kind[:4], kind[4:] or kind[:4])
    fast = accumulation == "fast"
    a, b, A, B = gemm_fp8.operands(ng, torch, a_kind, m, n, k, b_kind=b_kind)
    sa, sb, SA, SB = gemm_fp8.scales(ng, torch)
    out_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[out]
    c = torch.empty((m, n), device="cuda", dtype=out_dtype)
    C = ng.from_dlpack(c)

    def ours():
        ng.dot(A, B, C, scale_a=SA, scale_b=SB, precision=accumulation)

    def peer():
        return gemm_fp8.scaled_mm(torch, a, b, sa, sb, out_dtype, fast)

    ours()
    ng.synchronize()
    ref = gemm_fp8.reference(torch, a, b, sa, sb)
    err = gemm_fp8.error(torch, c, ref)
    limit = gemm_fp8.tolerance(accumulation, k)
    if err > limit:
        raise AssertionError(f"validation failed: error {err:.2e} > {limit}")
    last = ng.last_gemm
    flops = 2.0 * m * n * k
    warm = max(3, repeats // 10)
    t_kernel = device_timer(last.replay, repeats, warm, hide_host=True)
    t_call = device_timer(ours, repeats, 3)
    t_peer = device_timer(peer, repeats, warm, hide_host=True)
    chains = chain_timer(last.replay), chain_timer(peer)
    row = {"kind": kind + (" fast" if fast else ""), "m": m, "n": n, "k": k, "layout": "nt",
           "out": out, "kernel": last.name, "splits": last.splits, "cluster": last.cluster,
           "error": err,
           "peer_error": gemm_fp8.error(torch, peer(), ref), "target": target,
           "ours_us": t_kernel * 1e6, "ours_call_us": t_call * 1e6, "cublas_us": t_peer * 1e6,
           "ours_tflops": flops / t_kernel / 1e12, "cublas_tflops": flops / t_peer / 1e12}
    row["ratio"] = t_peer / t_kernel
    row["met"] = None if target is None else row["ratio"] >= target
    _chain_figures(row, *chains)
    return row


def _chain_figures(row, ours, peer):
    """Each side's time per call in a chain of calls (chain_timer), and their ratio."""
    row["ours_chain_us"], row["cublas_chain_us"] = ours * 1e6, peer * 1e6
    row["chain_ratio"] = peer / ours


def print_row(row):
    met = {None: "", True: "met", False: "MISSED"}[row["met"]]
    target = f"{row['target']:.1f}x" if row["target"] else ""
    tbps = (f"  weights {row['ours_weight_tbps']:.2f} vs {row['cublas_weight_tbps']:.2f} TB/s"
            if "ours_weight_tbps" in row else "")
    print(f"{row['kind']:>4} {row['m']:>5}x{row['n']:<5}x{row['k']:<5} {row['layout']}  "
          f"{row['ours_tflops']:7.1f} {row['cublas_tflops']:7.1f}  {row['ratio']:5.2f}x "
          f"{target:>5} {met:<6} call {row['ours_call_us']:8.1f} µs  "
          f"chain {row['ours_chain_us']:8.1f} / {row['cublas_chain_us']:8.1f} µs "
          f"({row['chain_ratio']:.2f}x)  {row['kernel']}"
          f" splits={row['splits']} cluster={row.get('cluster', 1)}{tbps}", flush=True)
    if "peer_error" in row:
        print(f"      -> {row['out']} out; error vs a float32 product: ours {row['error']:.1e}, "
              f"cuBLASLt {row['peer_error']:.1e}", flush=True)


def chart(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['kind']} {r['m']}x{r['n']}x{r['k']} {r['layout']}" for r in rows]
    ratios = [r["ratio"] for r in rows]
    fig, ax = plt.subplots(figsize=(12, 5))
    colors = ["#2ca02c" if r["met"] else "#d62728" if r["met"] is False else "#7f7f7f" for r in rows]
    ax.bar(range(len(rows)), ratios, color=colors)
    for i, r in enumerate(rows):
        if r["target"]:
            ax.hlines(r["target"], i - 0.4, i + 0.4, colors="black")
    ax.axhline(1.0, color="#1f77b4", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("speed relative to cuBLAS (higher is better)")
    ax.set_title("gpuarray GEMM / cuBLAS, same run (black: target; green met, red missed)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--fp8", action="store_true",
                        help="the FP8 rows only (into gemm_fp8.json / .png)")
    args = parser.parse_args(argv)
    import torch
    torch.empty(1, device="cuda")
    import gpuarray
    ng = gpuarray.GPU()
    repeats = 10 if args.quick else 50
    print("kind shape               layout ours  cuBLAS TFLOP/s  ratio target")
    rows = []
    cases = [(run_case, case) for case in CASES] + [(run_fp8_case, case) for case in FP8_CASES]
    if args.fp8:
        cases = cases[len(CASES):]
    for run, case in cases:
        try:
            rows.append(run(ng, torch, case, repeats))
            print_row(rows[-1])
        except Exception as err:  # report the case and go on with the rest
            print(f"{case}: {type(err).__name__}: {err}", flush=True)
        torch.cuda.empty_cache()
    RESULTS.mkdir(exist_ok=True)
    stem = "gemm_fp8" if args.fp8 else "gemm"
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    try:
        chart(rows, RESULTS / f"{stem}.png")
    except ImportError:
        print("matplotlib missing: no chart")
    return 0


if __name__ == "__main__":
    sys.exit(main())
