"""The convnet benchmarks: whole networks, fprop and bprop, ours beside PyTorch + cuDNN.

    python3 benchmarks/convnet_benchmarks.py [--nets alexnet,overfeat,vgg-a,googlenet]
        [--dtypes float16,bfloat16,float32] [--iters 10] [--compile-dtypes float16,bfloat16,float32]

Each network of networks.py is built on gpuarray.nn and in torch with the
same weights (ours copied over).  First validated: in inference mode (no
dropout) both run fprop on the same input and bprop from the same output
gradient; the output and every conv/dense weight gradient, ours and
torch's alike, are compared with the same network run in float64
(||x - fp64|| / ||fp64||): ours must be within a tolerance per dtype or
within twice torch's own error.  Then timed, as nervanagpu's report did:
warm-up, then the mean over ``--iters`` iterations of fprop (CUDA events
around the forward pass) and of bprop (around the backward pass: data and
weight gradients, none for the input image), calls as users write them,
host work included, eagerly and as captured steps (``ng.capture``: CUDA
graphs), the faster taken.  torch runs with ``cudnn.benchmark = True`` in NCHW
and channels_last eagerly, and with ``torch.compile`` for the dtypes named
in ``--compile-dtypes``; its fastest total is the peer.  fp32 is exact on
both sides (TF32 off).  ``host_bound`` is the share of our iteration the
GPU waited on the host: 1 - (the iteration's kernel time, measured behind
a spin kernel that lets every launch queue first) / (its wall time).

TFLOP/s count 2 x multiply-adds of the convolutions and dense layers:
bprop as twice fprop (the first layer's data gradient is not computed, so
bprop's figure is slightly generous on both sides alike).

Targets (issue 12, H200): fp16/bf16 total <= 0.9x torch's best; fp32 <= 1.0x;
host-bound (eager) <= 5%.  Writes benchmarks/results/convnet.json and .png.
"""
import argparse
import gc
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, print_table, set_target, table_cells, torch_and_gpu  # noqa: E402
from common import write_results  # noqa: E402
from conv_nets import native  # noqa: E402
from networks import NETWORKS, as_torch_weight, build_ours, build_torch  # noqa: E402
from networks import copy_weights, paired_layers  # noqa: E402

IMPLS = ("gpuarray", "torch")
#: ||ours - fp64|| / ||fp64|| always allowed (16-bit: rounding through ~20 layers; fp32:
#: a ReLU or max-pool decision flips where a value and fp64's differ by a rounding, which
#: moves the early layers' gradients by ~1e-3 in torch as here); more passes where it is
#: within twice torch's own error at the same dtype
TOLERANCE = {"float32": 2e-3, "float16": 2e-2, "bfloat16": 1e-1}
SPIN_CYCLES = 400_000_000  # ~0.2 s at 1.98 GHz: longer than an iteration's host work


def norm_error(got, ref):
    """||got - ref|| / ||ref||."""
    got, ref = got.detach().double(), ref.detach().double()
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


class Ours:
    """Our network, its input shared with torch's channels_last input."""

    def __init__(self, ng, torch, net, dtype, x, grad):
        self.ng, self.model = ng, build_ours(ng, net, dtype)
        self.x, self.grad = native(ng, torch, x), ng.from_dlpack(grad)

    def fprop(self):
        return self.model.fprop(self.x)

    def bprop(self):
        return self.model.bprop(self.grad)


class Theirs:
    """torch's network in one memory format, eager or compiled."""

    def __init__(self, torch, module, x, grad, memory_format, compiled):
        self.torch, self.grad = torch, grad
        self.module = module.to(memory_format=memory_format)
        self.x = x.contiguous(memory_format=memory_format)
        self.run = torch.compile(self.module) if compiled else self.module
        self.out = None

    def fprop(self):
        for p in self.module.parameters():
            p.grad = None
        self.out = self.run(self.x)
        return self.out

    def bprop(self):
        self.out.backward(self.grad)
        self.out = None


def timed(torch, fprop, bprop, iters, warmup, sync):
    """Mean (fprop ms, bprop ms) over ``iters`` iterations after ``warmup``."""
    for _ in range(warmup):
        fprop()
        bprop()
    sync()
    marks = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(iters)]
    for start, middle, end in marks:
        start.record()
        fprop()
        middle.record()
        bprop()
        end.record()
    sync()
    torch.cuda.synchronize()
    return (statistics.mean(s.elapsed_time(m) for s, m, _ in marks),
            statistics.mean(m.elapsed_time(e) for _, m, e in marks))


def host_bound(torch, ours, iters=3):
    """Share of our iteration's wall time the GPU waited on the host."""
    def iteration(spin):
        if spin:
            torch.cuda._sleep(SPIN_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        ours.fprop()
        ours.bprop()
        end.record()
        ours.ng.synchronize()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    wall = min(iteration(False) for _ in range(iters))
    kernels = min(iteration(True) for _ in range(iters))
    return max(0.0, 1.0 - kernels / wall), wall, kernels


def validate(torch, ours, module, x, grad):
    """{what: (our error, torch's error)} of the output and the weight gradients,
    each against the float64 network (same weights, input and gradient) in
    inference mode: cuDNN's fast algorithms (Winograd, FFT) are not exact
    in fp32 either, so torch at the benchmark's dtype is a peer, not the oracle."""
    exact = build_torch(torch, ours.model.name).double()
    copy_weights(torch, ours.model, exact, torch.float64)
    results = {}
    for m in (ours.model, module, exact):
        m.eval()
    out = torch.from_dlpack(ours.fprop())
    ours.bprop()
    ours.ng.synchronize()
    refs = [module(x), exact(x.double())]
    refs[0].backward(grad)
    refs[1].backward(grad.double())
    results["output"] = (norm_error(out, refs[1]), norm_error(refs[0], refs[1]))
    for (layer, theirs), (_, ref) in zip(paired_layers(torch, ours.model, module),
                                         paired_layers(torch, ours.model, exact)):
        ours_grad = as_torch_weight(torch, layer, layer.W.grad)
        results[layer.label + ".W"] = (norm_error(ours_grad, ref.weight.grad),
                                       norm_error(theirs.weight.grad, ref.weight.grad))
    for p in module.parameters():
        p.grad = None
    for m in (ours.model, module):
        m.train()
    return results


def inputs(torch, net, dtype_name):
    """The network's input batch (channels_last) and output gradient, seeded."""
    dtype = getattr(torch, dtype_name)
    batch, size, _ = NETWORKS[net]
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(batch, 3, size, size, device="cuda", generator=gen).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    # unscaled by the batch, as under loss scaling: fp16 gradients would underflow
    # on the way back to the first layers otherwise (torch's and ours alike)
    grad = torch.randn(batch, 1000, device="cuda", generator=gen).to(dtype)
    return x, grad


def release(ng, torch):
    """Between networks: this one's tensors and captured graphs, then their memory."""
    gc.collect()
    ng.pool.free_cached()
    torch.cuda.empty_cache()


def run_network(ng, torch, net, dtype_name, iters, compile_dtypes):
    """Validate, then time ours and torch's variants: one result row."""
    dtype = getattr(torch, dtype_name)
    x, grad = inputs(torch, net, dtype_name)
    built = time.perf_counter()
    ours = Ours(ng, torch, net, dtype_name, x, grad)
    module = build_torch(torch, net).to(dtype)
    copy_weights(torch, ours.model, module, dtype)
    errors = validate(torch, ours, module, x, grad)
    worst = max(errors, key=lambda k: errors[k][0] / max(errors[k][1], TOLERANCE[dtype_name]))
    ours_err, torch_err = errors[worst]
    verdict = "ok" if ours_err <= max(TOLERANCE[dtype_name], 2 * torch_err) else "FAILED"
    times = {"gpuarray": timed(torch, ours.fprop, ours.bprop, iters, 2, ng.synchronize)}
    share, wall, kernels = host_bound(torch, ours)
    formats = {"nchw": torch.contiguous_format, "channels_last": torch.channels_last}
    for name, fmt in formats.items():
        variant = Theirs(torch, module, x, grad, fmt, False)
        times[f"torch {name}"] = timed(torch, variant.fprop, variant.bprop, iters, 2,
                                       torch.cuda.synchronize)
    if dtype_name in compile_dtypes:
        attempt(f"{net} {dtype_name}: torch.compile", times, "torch.compile channels_last",
                lambda: timed(torch, *_compiled(torch, module, x, grad), iters, 3,
                              torch.cuda.synchronize))
    attempt(f"{net} {dtype_name}: capture", times, "gpuarray captured",
            lambda: timed(torch, ng.capture(ours.fprop, strict=True),
                          ng.capture(ours.bprop, strict=True), iters, 2, ng.synchronize))
    row = make_row(net, dtype_name, ours.model.flops, times, errors, verdict, share)
    row["extra"].update(host_wall_ms=wall, host_kernels_ms=kernels,
                        seconds_to_set_up_and_run=time.perf_counter() - built)
    print(f"{net} {dtype_name}: ours {row['values']['gpuarray']:.1f} ms "
          f"({row['extra']['best_ours']}; eager {sum(times['gpuarray']):.1f}), torch best "
          f"{row['values']['torch']:.1f} ms ({row['extra']['best_torch']}), "
          f"{row['extra']['ratio']:.2f}x; validation {verdict} (worst {worst}: ours "
          f"{ours_err:.1e}, torch {torch_err:.1e} against fp64); host-bound "
          f"{100 * share:.1f}%", flush=True)
    return row


def _compiled(torch, module, x, grad):
    variant = Theirs(torch, module, x, grad, torch.channels_last, True)
    return variant.fprop, variant.bprop


def attempt(what, times, key, measure):
    """times[key] = measure(), or a printed reason when it fails (the rest goes on)."""
    try:
        times[key] = measure()
    except Exception as e:
        print(f"{what} failed: {type(e).__name__}: {e}", flush=True)


def make_row(net, dtype_name, flops, times, errors, verdict, share):
    mine = min((k for k in times if k.startswith("gpuarray")), key=lambda k: sum(times[k]))
    best = min((k for k in times if k.startswith("torch")), key=lambda k: sum(times[k]))
    row = new_row(net, dtype_name, IMPLS, unit="ms")
    row["values"].update(gpuarray=sum(times[mine]), torch=sum(times[best]))
    row["times_us"].update({k: v * 1e3 for k, v in row["values"].items()})
    row["extra"] = {
        "fprop_ms": {k: v[0] for k, v in times.items()},
        "bprop_ms": {k: v[1] for k, v in times.items()},
        "TFLOPs": {k: 3 * flops / sum(v) / 1e9 for k, v in times.items()},
        "best_ours": mine, "best_torch": best, "ratio": sum(times[best]) / sum(times[mine]),
        "validation": verdict, "errors": errors, "host_bound": share, "gflop": flops / 1e9}
    factor = 1.0 if dtype_name == "float32" else 0.9
    set_target(row, factor * row["values"]["torch"], f"<= {factor}x torch best")
    return row


def report(rows):
    """The original's report: avg fprop / bprop / total msecs and TFLOP/s, torch beside."""
    lines = []
    for r in rows:
        e = r["extra"]
        best = e["best_torch"]
        lines.append({
            "network": r["case"], "dtype": r["label"],
            "ours fprop": f"{e['fprop_ms'][e['best_ours']]:.2f}",
            "ours bprop": f"{e['bprop_ms'][e['best_ours']]:.2f}",
            "ours total": f"{r['values']['gpuarray']:.2f}",
            "ours TFLOP/s": f"{e['TFLOPs'][e['best_ours']]:.1f}",
            "ours eager": f"{sum((e['fprop_ms']['gpuarray'], e['bprop_ms']['gpuarray'])):.2f}",
            "torch total": f"{r['values']['torch']:.2f}", "torch best": best,
            "ratio": f"{e['ratio']:.2f}x", "host-bound": f"{100 * e['host_bound']:.1f}%",
            "valid": e["validation"]})
    print_table(lines)
    print_table([table_cells(r, IMPLS) for r in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default=",".join(NETWORKS))
    parser.add_argument("--dtypes", default="float16,bfloat16,float32")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--compile-dtypes", default="float16,bfloat16,float32",
                        help="dtypes torch.compile also runs for (comma list, '' for none)")
    parser.add_argument("--name", default="convnet")
    args = parser.parse_args()
    peers = torch_and_gpu("convnet_benchmarks")
    if peers is None:
        return 2
    torch, ng = peers
    torch.backends.cudnn.benchmark = True
    compile_dtypes = [d for d in args.compile_dtypes.split(",") if d]
    rows = []
    for net in args.nets.split(","):
        for dtype in args.dtypes.split(","):
            try:
                rows.append(run_network(ng, torch, net, dtype, args.iters, compile_dtypes))
            except Exception:  # one network's failure is reported; the others still run
                traceback.print_exc(file=sys.stdout)
                print(f"{net} {dtype}: FAILED (traceback above)", flush=True)
            release(ng, torch)
    report(rows)
    write_results(args.name, rows, {"impls": IMPLS, "iters": args.iters,
                                    "compile_dtypes": compile_dtypes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
