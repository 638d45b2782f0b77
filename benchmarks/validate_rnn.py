"""Validate the recurrent layers against torch (cuDNN) and float64 over a sweep.

    python3 benchmarks/validate_rnn.py [--quick]

Cases: every mode (relu, tanh, GRU, LSTM) x dtype (float16, bfloat16,
float32) over hidden sizes from 8 to the largest run persistently, batch
1, 3, 4, 32 and 64 and sequence lengths 1, 7, 64 and 256 (a spread of
combinations, not their product), each on the path the layer picks
(``layer.path``; the largest hidden sizes also on the GEMM loop beyond
the persistent limit).  Each case runs ``gpuarray.nn`` RNN/GRU/LSTM
forward and backward, and torch's module with the same weights in the
same dtype (cuDNN) and in float64.  Compared: the output, the final
states, the input gradient and the three weight gradients, as
||x - ref|| / ||ref|| against the float64 result.  Ours passes where its
error is within twice cuDNN's in the same dtype plus a floor (1e-5 for
fp32, 2e-3 for 16 bits): rounding to 16 bits, and recurrences that
amplify it over long sequences, set both sides' error, so cuDNN's own is
the yardstick.  A ReLU case that fails so is checked again against
float64 gradients taken with our ReLU decisions, and passes if those
errors meet the same bound and every decision that differs from
float64's has a pre-activation within twice our output's worst error of
zero (a 16-bit forward cannot place it; cuDNN's gradients err by 3e-2
at H = 136 N = 64 bf16 for the same reason).  Prints one line per case; writes
benchmarks/results/validate_rnn.json.  Exit status 1 on any failure.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rnn import ours_layer, torch_module  # noqa: E402
from common import RESULTS_DIR, device_info, torch_and_gpu  # noqa: E402

DTYPES = ("float16", "bfloat16", "float32")
FLOOR = {"float16": 2e-3, "bfloat16": 2e-3, "float32": 1e-5}
#: the largest hidden size each mode runs persistently at batch 4, by dtype width
LARGEST = {("relu", 2): 3584, ("relu", 4): 2560, ("tanh", 2): 3584, ("tanh", 4): 2560,
           ("gru", 2): 2048, ("gru", 4): 1536, ("lstm", 2): 1792, ("lstm", 4): 1280}


def cases(quick):
    """(mode, dtype, hidden, batch, seq_len, path) of the sweep."""
    out = []
    for mode in ("relu", "tanh", "gru", "lstm"):
        for dtype in DTYPES:
            width = 4 if dtype == "float32" else 2
            top = LARGEST[(mode, width)]
            sizes = [(8, 1, 1), (64, 3, 7), (136, 64, 7), (512, 4, 64), (1024, 32, 64),
                     (256, 4, 256), (top, 4, 16)]
            out += [(mode, dtype, H, N, T, None) for H, N, T in sizes]
            out.append((mode, dtype, top + 256, 4, 7, None))  # beyond: the GEMM loop
    return out[::5] if quick else out


def run_case(torch, ng, nn, mode, dtype_name, H, N, T, path):
    from gpuarray.nn.recurrent import as_torch

    dtype = getattr(torch, dtype_name)
    layer = ours_layer(nn, mode, H, path)
    layer.setup(ng, (T, N, H), dtype_name, rng=np.random.default_rng(H + N + T))
    modules = {d: torch_module(torch, mode, H).cuda().to(d) for d in (dtype, torch.float64)}
    with torch.no_grad():
        for name, value in as_torch(layer).items():
            for m in modules.values():
                getattr(m, name).copy_(torch.from_numpy(value.astype(np.float64)))
    torch.manual_seed(H + N + T)  # the same data every run, as the weights
    x = torch.randn(T, N, H, device="cuda").to(dtype)
    grad = torch.randn(T, N, H, device="cuda").to(dtype)
    y = layer.fprop(ng.from_dlpack(x))
    dx = layer.bprop(ng.from_dlpack(grad))
    ng.synchronize()
    ours = {"output": y, "input grad": dx, "weight_ih": layer.W_ih.grad,
            "bias_ih": layer.b_ih.grad}
    ours = {k: torch.from_dlpack(v).double() for k, v in ours.items()}
    w_hh = torch.from_dlpack(layer.W_hh.grad).double()
    ours["weight_hh"], ours["bias_hh"] = w_hh[:, :H], w_hh[:, H]
    results = {}
    for d, m in modules.items():
        xi = x.detach().to(d).clone().requires_grad_(True)
        out, _ = m(xi)
        out.backward(grad.to(d))
        results[d] = {"output": out.detach(), "input grad": xi.grad,
                      **{k: getattr(m, f"{k}_l0").grad for k in
                         ("weight_ih", "bias_ih", "weight_hh", "bias_hh")}}
        results[d] = {k: v.double() for k, v in results[d].items()}
    ref, theirs = results[torch.float64], results[dtype]

    def err(a, b):
        return float((a - b).norm() / max(float(b.norm()), 1e-30))

    rows = {k: (err(ours[k], ref[k]), err(theirs[k], ref[k])) for k in ref}

    def passes(rows):
        return all(e <= 2 * t + FLOOR[dtype_name] for e, t in rows.values())

    flips = None
    if mode == "relu" and not passes(rows):
        flips = relu_flips(torch, modules[torch.float64], x, grad, ours, ref)
        flips["errors"] = {k: (err(ours[k], v), rows[k][1]) for k, v in flips.pop("ref").items()}
    ok = passes(rows) or (flips is not None and flips["explained"] and passes(flips["errors"]))
    return layer.layer.path, rows, ok, flips


def relu_flips(torch, module, x, grad, ours, ref):
    """Where a ReLU decision differs from float64's, the gradients differ by
    that unit's whole gradient: a pre-activation within rounding of zero
    makes the backward ill-conditioned for any 16-bit forward (cuDNN's
    too).  Counts the decisions that differ, whether each lies within the
    worst absolute error of ours' output of zero (so the forward, already
    checked, explains it), and the float64 gradients taken with ours'
    decisions (``ref``), for the case to be checked against instead."""
    w_ih, w_hh, b_ih, b_hh = (getattr(module, f"{k}_l0").detach() for k in
                              ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    on = ours["output"] > 0
    xi = x.double().clone().requires_grad_(True)
    params = [p.clone().requires_grad_(True) for p in (w_ih, w_hh, b_ih, b_hh)]
    h, h_free, out, pre_free = 0, 0, [], []
    for t in range(x.shape[0]):
        pre = xi[t] @ params[0].t() + params[2] + params[3]
        pre_free.append(pre.detach() + (h_free @ w_hh.t() if t else 0))
        h_free = torch.relu(pre_free[-1])
        h = (pre + (h @ params[1].t() if t else 0)) * on[t]
        out.append(h)
    out = torch.stack(out)
    out.backward(grad.double())
    pre_free = torch.stack(pre_free)
    differ = (pre_free > 0) != on
    tolerance = 2 * float((ours["output"] - ref["output"]).abs().max())
    largest = float(pre_free[differ].abs().max()) if differ.any() else 0.0
    return {"count": int(differ.sum()), "largest": largest, "explained": largest <= tolerance,
            "ref": {"output": out.detach(), "input grad": xi.grad, "weight_ih": params[0].grad,
                    "bias_ih": params[2].grad, "weight_hh": params[1].grad,
                    "bias_hh": params[3].grad}}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="every fifth case")
    args = parser.parse_args()
    peers = torch_and_gpu("validate_rnn")
    if peers is None:
        return 2
    torch, ng = peers
    from gpuarray import nn

    records, failures = [], 0
    for case in cases(args.quick):
        path, rows, ok, flips = run_case(torch, ng, nn, *case)
        failures += not ok
        checked = rows if flips is None else flips["errors"]
        worst = max(checked, key=lambda k: checked[k][0] - 2 * checked[k][1])
        print(f"{'ok  ' if ok else 'FAIL'} {case[0]:4} {case[1]:8} H={case[2]:<5} N={case[3]:<3} "
              f"T={case[4]:<4} {path:10} worst {worst}: ours {checked[worst][0]:.1e}, "
              f"cuDNN {checked[worst][1]:.1e}", flush=True)
        record = {"case": dict(zip(("mode", "dtype", "hidden", "batch", "seq_len"), case)),
                  "path": path, "ok": ok,
                  "errors": {k: {"ours": e, "cudnn": t} for k, (e, t) in rows.items()}}
        if flips is not None:
            print(f"     {flips['count']} ReLU decisions differ from float64's, the largest "
                  f"|pre-activation| {flips['largest']:.1e} ({'within' if flips['explained'] else 'beyond'}"
                  f" twice our output's worst error); errors above against float64 with our decisions")
            record["relu_flips"] = {"count": flips["count"], "largest": flips["largest"],
                                    "explained": flips["explained"],
                                    "errors": {k: e for k, (e, _) in flips["errors"].items()}}
        records.append(record)
        ng.pool.free_cached()
        torch.cuda.empty_cache()
    print(f"{len(records) - failures} of {len(records)} cases pass")
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / "validate_rnn.json"
    out.write_text(json.dumps({"device": device_info(), "cases": records}, indent=1))
    print(f"wrote {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
