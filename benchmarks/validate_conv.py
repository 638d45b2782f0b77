"""Validate gpuarray's convolutions against cuDNN (through torch) over a sweep.

    python3 benchmarks/validate_conv.py [--quick]

Cases: every padding / stride / dilation combination on small 2-D shapes;
odd sizes with C or K of 1, 3, 7, 33 and N = 1; 3-D layers; and every
conv layer of the benchmark networks (conv_nets.py) at batch 2.  Each
case runs fprop, bprop and update in float16, bfloat16 and float32 (TF32
off) on tensors torch made.  The oracle is torch's float64 convolution of
the same (rounded) inputs; ours must be within max|err| / mean|ref| of
7e-3 (16-bit) or 5e-5 (fp32), one rounding of a 16-bit result forgiven,
and cuDNN's own error in the same dtype is reported beside it.  Prints
one line per failure and a summary; writes
benchmarks/results/validate_conv.json.  Exit status 1 on any failure.
"""
import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS_DIR, device_info  # noqa: E402
from conv_nets import NETWORKS, relative_error  # noqa: E402

DTYPES = ("float16", "bfloat16", "float32")


def cases(quick):
    """(name, conv_layer keyword arguments) of the sweep."""
    out = []
    for pad, st, dil in itertools.product((0, 1, 2), (1, 2, 3), (1, 2)):
        out.append((f"combo p{pad} s{st} d{dil}",
                    dict(N=2, C=8, K=8, H=9, W=8, R=3, S=3, pad_h=pad, pad_w=pad,
                         str_h=st, str_w=st, dil_h=dil, dil_w=dil)))
    for c, k in itertools.product((1, 3, 7, 33), (1, 3, 7, 33)):
        out.append((f"odd C{c} K{k}", dict(N=1, C=c, K=k, H=11, W=7, R=3, S=2, pad_h=1,
                                           str_w=2)))
    out += [("3d", dict(N=2, C=7, K=5, D=5, H=6, W=7, T=3, R=3, S=3, pad_d=1, pad_h=1,
                        str_d=2, dil_w=2)),
            ("3d pointwise", dict(N=1, C=16, K=24, D=3, H=4, W=5)),
            ("3d 5x5x5", dict(N=1, C=33, K=8, D=6, H=6, W=6, T=5, R=5, S=5, pad_d=2,
                              pad_h=2, pad_w=2))]
    for net, (_, specs) in NETWORKS.items():
        for name, c, h, k, r, st, pad in specs:
            out.append((f"{net} {name}", dict(N=2, C=c, K=k, H=h, W=h, R=r, S=r, pad_h=pad,
                                              pad_w=pad, str_h=st, str_w=st)))
    return out[::4] if quick else out


def torch_passes(torch, layer, x, w, grad):
    """{pass: torch result} for 2-D (NCHW) or 3-D (NCDHW) tensors."""
    dims = 3 if layer.D > 1 or layer.T > 1 else 2
    stride, pad, dil = (list(v[3 - dims:]) for v in (layer.stride, layer.pad, layer.dilation))
    aten = torch.ops.aten
    out = aten.convolution(x, w, None, stride, pad, dil, False, [0] * dims, 1)
    gx, gw, _ = aten.convolution_backward(grad, x, w, None, stride, pad, dil, False,
                                          [0] * dims, 1, [True, True, False])
    return {"fprop": out, "bprop": gx, "update": gw}


def to_native(ng, torch, t, dims):
    """An NC(D)HW torch tensor as a gpuarray native tensor (a copy)."""
    if dims == 2:
        t = t.unsqueeze(2)
    return ng.from_dlpack(t.permute(0, 2, 3, 4, 1).contiguous())


def from_native(torch, t, dims):
    out = torch.from_dlpack(t).permute(0, 4, 1, 2, 3)
    return out[:, :, 0] if dims == 2 else out


def run_case(ng, torch, kw, dtype_name):
    dtype = getattr(torch, dtype_name)
    layer = ng.conv_layer(dtype_name, **kw)
    dims = 3 if layer.D > 1 or layer.T > 1 else 2
    shape = lambda n, c, d, h, w: (n, c, d, h, w) if dims == 3 else (n, c, h, w)  # noqa: E731
    x = torch.randn(shape(layer.N, layer.C, layer.D, layer.H, layer.W), device="cuda", dtype=dtype)
    w = torch.randn(shape(layer.K, layer.C, layer.T, layer.R, layer.S), device="cuda",
                    dtype=dtype)
    grad = torch.randn(shape(layer.N, layer.K, layer.M, layer.P, layer.Q), device="cuda",
                       dtype=dtype)
    exact = torch_passes(torch, layer, x.double(), w.double(), grad.double())
    cudnn = torch_passes(torch, layer, x, w, grad)
    I, F, E = (to_native(ng, torch, t, dims) for t in (x, w, grad))
    got = {"fprop": ng.fprop_conv(layer, I, F, ng.empty(layer.dimO, layer.dtype)),
           "bprop": ng.bprop_conv(layer, F, E, ng.empty(layer.dimI, layer.dtype)),
           "update": ng.update_conv(layer, I, E, ng.empty(layer.dimF, layer.dtype))}
    ng.synchronize()
    ours = {k: relative_error(torch, from_native(torch, got[k], dims), exact[k], dtype)
            for k in got}
    theirs = {k: relative_error(torch, cudnn[k], exact[k], dtype) for k in got}
    return ours, theirs


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="every fourth case")
    args = parser.parse_args()
    try:
        import torch

        import gpuarray
        ng = gpuarray.GPU()
    except Exception as e:  # no torch, pycuda or GPU
        print(f"validate_conv needs torch and a GPU: {e}")
        return 2
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    results, failures = [], 0
    for (name, kw), dtype in itertools.product(cases(args.quick), DTYPES):
        errors, cudnn = run_case(ng, torch, kw, dtype)
        limit = 5e-5 if dtype == "float32" else 7e-3
        ok = all(e <= limit for e in errors.values())
        failures += not ok
        results.append({"case": name, "layer": kw, "dtype": dtype, "errors": errors,
                        "cudnn_errors": cudnn, "limit": limit, "ok": ok})
        if not ok:
            print(f"FAIL {name} {dtype}: " + ", ".join(
                f"{k} {v:.2e} (cuDNN {cudnn[k]:.2e})" for k, v in errors.items()))
    worst = {dt: [max(max(r[key].values()) for r in results if r["dtype"] == dt)
                  for key in ("errors", "cudnn_errors")] for dt in DTYPES}
    print(f"validate_conv: {len(results) - failures} of {len(results)} cases within tolerance "
          "of float64; worst error ours / cuDNN: "
          + ", ".join(f"{dt} {a:.2e} / {b:.2e}" for dt, (a, b) in worst.items()))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / "validate_conv.json"
    path.write_text(json.dumps({**device_info(), "cases": results, "failures": failures},
                               indent=1) + "\n")
    print(f"wrote {path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
