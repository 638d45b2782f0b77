"""Validate ng.dot / ng.batched_dot against cuBLAS (through torch) over a sweep.

    python3 benchmarks/validate_gemm.py [--quick]

Shapes: squares 1..8192, ragged sizes (1000x1000x999...), small products
(1000x10x100...), skinny N = 1..128, tall-skinny K; every layout (transposed
views), float16, bfloat16, float32 (exact) and TF32; each with and without the full epilogue (alpha, beta,
bias, relu).  Operands are made by torch and shared zero-copy (DLPack).
The reference is cuBLAS's float32 product of the same values (TF32 off;
for TF32 runs, cuBLAS's TF32 product), with the epilogue applied by torch
in float32.  Pass criterion (the original library's): max |C - C_ref| /
mean |C_ref| <= 5e-5 for float32, 7e-3 for float16/bfloat16 and TF32
(whose operands keep float16's 10 mantissa bits), after forgiving one unit
in the last place of a float16/bfloat16 C.  Prints failures and a summary,
writes benchmarks/results/validate_gemm.json; exits 1 on any failure.

FP8 (``--fp8`` for the FP8 sweep alone): every operand pair of e4m3 and
e5m2, the in-place layout and two copied ones, float32 / float16 /
bfloat16 / FP8 outputs, with and without the epilogue (scale_c, amax);
the reference and criterion are gemm_fp8.py's.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemm_fp8  # noqa: E402


RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = {"f16": 7e-3, "bf16": 7e-3, "f32": 5e-5, "tf32": 7e-3}
SQUARES = (1, 2, 15, 64, 127, 256, 1000, 2048, 4096)
RAGGED = ((1000, 1000, 999), (999, 1001, 1000), (1, 1000, 1000), (1000, 1, 1000), (333, 77, 5))
#: products small enough for gemm_small.cu in float32 (MNIST's MLP has these)
SMALL = ((1000, 10, 100), (1000, 100, 10), (100, 10, 1000), (7, 300, 40))
SKINNY_N = (1, 8, 16, 32, 64, 96, 128)
DEEP = ((64, 64, 65536), (128, 128, 32768), (256, 32, 16384))


def shapes(quick):
    out = [(s, s, s) for s in SQUARES] + list(RAGGED) + list(SMALL)
    out += [(2048, n, 2048) for n in SKINNY_N] + list(DEEP)
    return out[::3] if quick else out


def make(torch, kind, shape, transposed, gen):
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(kind, torch.float32)
    rows, cols = shape
    x = torch.randn((cols, rows) if transposed else (rows, cols), generator=gen, device="cuda")
    x = x.to(dtype)
    return x.t() if transposed else x


def error(got, ref, torch):
    """max |got - ref| (less one ulp of a 16-bit got) / mean |ref|."""
    slack = 0
    if got.dtype in (torch.float16, torch.bfloat16):
        finfo = torch.finfo(got.dtype)
        slack = ref.abs() * finfo.eps  # one ulp of the stored magnitude, at most
    excess = ((got.float() - ref).abs() - slack).clamp_min(0)
    return float(excess.max() / ref.abs().mean().clamp_min(1e-30))


def run_case(ng, torch, kind, layout, shape, epilogue, gen):
    m, n, k = shape
    a = make(torch, kind, (m, k), layout[0] == "t", gen)
    b = make(torch, kind, (k, n), layout[1] == "t", gen)
    c0 = torch.randn((m, n), generator=gen, device="cuda").to(a.dtype)
    bias = torch.randn((n,), generator=gen, device="cuda") if epilogue else None
    ref = torch.matmul(a.float(), b.float())
    if kind == "tf32":
        # the tensor cores read 10 mantissa bits: compare with cuBLAS's own TF32
        torch.backends.cuda.matmul.allow_tf32 = True
        ref = torch.matmul(a, b)
        torch.backends.cuda.matmul.allow_tf32 = False
    A, B = ng.from_dlpack(a), ng.from_dlpack(b)
    C = ng.from_dlpack(c0.clone())
    options = {"precision": "tf32" if kind == "tf32" else None}
    if epilogue:
        options.update(alpha=0.75, beta=-0.5, relu=True, bias=ng.from_dlpack(bias))
        ref = torch.relu(0.75 * ref + bias) - 0.5 * c0.float()
    ng.dot(A, B, C, **options)
    ng.synchronize()
    got = torch.from_dlpack(C)
    return error(got, ref, torch), getattr(ng, "last_gemm", None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every third shape")
    parser.add_argument("--fp8", action="store_true", help="the FP8 sweep only")
    args = parser.parse_args(argv)
    import torch
    torch.empty(1, device="cuda")  # torch's primary context, which gpuarray shares
    torch.backends.cuda.matmul.allow_tf32 = False
    import gpuarray
    ng = gpuarray.GPU()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, failures, start = [], 0, time.time()
    for kind in () if args.fp8 else ("f16", "bf16", "f32", "tf32"):
        for shape in shapes(args.quick):
            for layout in ("nn", "nt", "tn", "tt"):
                for epilogue in (False, True):
                    err, last = run_case(ng, torch, kind, layout, shape, epilogue, gen)
                    ok = err <= TOLERANCE[kind]
                    failures += not ok
                    rows.append({"kind": kind, "shape": shape, "layout": layout,
                                 "epilogue": epilogue, "error": err, "ok": ok,
                                 "kernel": last.name if last else None,
                                 "splits": last.splits if last else None,
                                 "cluster": last.cluster if last else None})
                    if not ok:
                        print(f"FAIL {kind} {layout} {shape} epilogue={epilogue}: "
                              f"error {err:.2e} > {TOLERANCE[kind]} ({rows[-1]['kernel']})")
    failures += fp8_sweep(ng, torch, gen, rows, args.quick)
    worst = {kind: max(r["error"] for r in rows if r["kind"] == kind)
             for kind in list(TOLERANCE) + ["fp8"] if any(r["kind"] == kind for r in rows)}
    print(f"{len(rows)} cases, {failures} failed, {time.time() - start:.0f} s; worst error by "
          "kind: " + ", ".join(f"{k} {v:.2e} (limit {TOLERANCE.get(k, 'per case')})"
                               for k, v in worst.items()))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "validate_gemm.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "cases": len(rows), "failed": failures,
         "worst": worst, "rows": rows}, indent=1))
    return 1 if failures else 0


def fp8_sweep(ng, torch, gen, rows, quick):
    """The FP8 cases into ``rows``; returns the number that failed."""
    failures = 0
    shapes = gemm_fp8.SHAPES[::2] if quick else gemm_fp8.SHAPES
    for shape in shapes:
        for pair in gemm_fp8.PAIRS:
            for layout in ("nt", "nn", "tn"):
                for out, epilogue, precision in _fp8_variants(layout):
                    err, limit, last = gemm_fp8.validate_case(ng, torch, shape, pair, layout, out,
                                                              epilogue, gen, precision)
                    ok = err <= limit
                    failures += not ok
                    rows.append({"kind": "fp8", "pair": pair, "shape": shape, "layout": layout,
                                 "out": out, "epilogue": epilogue, "precision": precision,
                                 "error": err, "limit": limit, "ok": ok, "kernel": last.name,
                                 "splits": last.splits, "cluster": last.cluster})
                    if not ok:
                        print(f"FAIL fp8 {pair} {layout} {shape} -> {out} epilogue={epilogue} "
                              f"precision={precision}: error {err:.2e} > {limit:.2e} "
                              f"({last.name})")
    return failures


def _fp8_variants(layout):
    """(output, epilogue, precision) of each FP8 case: every output with and
    without the epilogue (an FP8 output always has its amax), and fast
    accumulation for the in-place layout."""
    for out in ("bf16", "f16", "f32", "e4m3", "e5m2"):
        for epilogue in (False, True) if out in ("bf16", "f16", "f32") else (True,):
            yield out, epilogue, None
    if layout == "nt":
        yield "bf16", False, "fast"


if __name__ == "__main__":
    sys.exit(main())
