"""Convolution benchmark: every conv layer of the convnet benchmarks, ours beside cuDNN.

    python3 benchmarks/bench_conv.py [--quick] [--dtype float16|bfloat16|float32]
                                     [--nets alexnet,vgg-a,...] [--name conv_part]

Each layer of AlexNet, Overfeat, VGG-A and GoogLeNet v1 (conv_nets.py)
runs fprop, bprop (data gradient) and update (filter gradient) on
tensors torch made, shared zero-copy (torch's channels_last memory is
gpuarray's native layout).  Every pass is validated against cuDNN first
(max|err| / mean|ref| <= 7e-3 for 16-bit; fp32, with TF32 off, against
the layer in float64 within 5e-5, and cuDNN's own error recorded),
then timed: medians of CUDA event pairs around back-to-back calls as
users make them (host work included), and the kernels alone (the host's
work hidden behind a spin kernel; the small layers' calls are host-bound
on both sides, and the device machine's host is noisy); and the host
time of one call (each timed alone, the queue drained between batches).  cuDNN runs
through torch with ``cudnn.benchmark = True`` in NCHW and channels_last,
the faster taken.  Then each network's conv stack as one chain (every
layer's fprop, then bprop and update from the last layer back, queued
back to back behind a spin kernel: what the stack costs inside a training
step, where each kernel's start may overlap the one before it), ours
beside cuDNN's in NCHW and in channels_last, the faster taken.  Prints a progress line per layer, a
table and the per-network sums of the conv stack, both ways; writes
benchmarks/results/conv[_<dtype>].json and .png (or ``--name``'s).

Targets (issue 11, 16-bit): every compute-bound layer (3x3 and 5x5 with
C >= 64) >= 1.0x cuDNN per pass; the network's conv stack >= 1.1x.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, print_table  # noqa: E402
from timing import chain_timer, device_timer, device_times, host_per_call  # noqa: E402
from common import set_target  # noqa: E402
from common import table_cells  # noqa: E402
from common import torch_and_gpu, write_results  # noqa: E402
from conv_nets import NETWORKS, OursConv, TorchConv, as_nchw, relative_error  # noqa: E402

IMPLS = ("gpuarray", "cudnn")
PASSES = ("fprop", "bprop", "update")
QUICK = {"alexnet": ("conv2", "conv3"), "vgg-a": ("conv4",)}


def tolerance(torch, dtype):
    return 5e-5 if dtype == torch.float32 else 7e-3


def validate(torch, ours, ref_conv, dtype, exact=None):
    """``({pass: error}, {pass: cuDNN's error})``: ours against cuDNN (NCHW),
    raising past the tolerance.  With ``exact`` (the layer in float64, for
    fp32) both are measured against it instead: cuDNN's fp32 algorithms are
    not all exact (its FFT and Winograd weight gradients miss 5e-5 by up to
    2000x on these layers), so they cannot serve as the reference."""
    errors, peer_errors = {}, {}
    for name in PASSES:
        got = getattr(ours, name)()
        ours.ng.synchronize()
        # filters (K, 1, R, S, C) read as KCRS the same way activations read as NCHW
        theirs = getattr(ref_conv, name)()
        ref = theirs if exact is None else getattr(exact, name)()
        err = relative_error(torch, as_nchw(torch, got), ref, dtype)
        if err > tolerance(torch, dtype):
            raise AssertionError(f"{name}: validation failed, error {err:.2e}")
        errors[name] = err
        if exact is not None:
            peer_errors[name] = relative_error(torch, theirs, ref, dtype)
    return errors, peer_errors


def layer_tensors(ng, torch, dtype, batch, spec):
    """(layer, x, w, grad): the layer of ``spec`` and random NCHW tensors for it
    (input, filters scaled to keep outputs near unit size, output gradient)."""
    name, C, H, K, R, stride, pad = spec
    layer = ng.conv_layer(str(dtype).split(".")[1], batch, C, K, H=H, W=H, R=R, S=R,
                          pad_h=pad, pad_w=pad, str_h=stride, str_w=stride)
    x = torch.randn(batch, C, H, H, device="cuda", dtype=dtype)
    w = torch.randn(K, C, R, R, device="cuda", dtype=dtype) / (C * R * R) ** 0.5
    grad = torch.randn(batch, K, layer.P, layer.Q, device="cuda", dtype=dtype)
    return layer, x, w, grad


def run_layer(ng, torch, dtype, net, batch, spec, repeats):
    name, C, H, K, R, stride, pad = spec
    layer, x, w, grad = layer_tensors(ng, torch, dtype, batch, spec)
    variants = {fmt: TorchConv(torch, x, w, grad, stride, pad, getattr(torch, fmt))
                for fmt in ("contiguous_format", "channels_last")}
    ours = OursConv(ng, torch, layer, x, w, grad)
    exact = None
    if dtype == torch.float32:
        exact = TorchConv(torch, x.double(), w.double(), grad.double(), stride, pad,
                          torch.contiguous_format)
    errors, peer_errors = validate(torch, ours, variants["contiguous_format"], dtype, exact)
    del exact
    rows = []
    for pass_ in PASSES:
        row = new_row(f"{net} {name}", f"{pass_} C{C} {H}x{H} K{K} {R}x{R}/{stride}", IMPLS)
        theirs = min(device_timer(getattr(v, pass_), repeats, 3) for v in variants.values())
        theirs_kernel = min(device_timer(getattr(v, pass_), repeats, 1, hide_host=True)
                            for v in variants.values())
        extra = {"net": net, "pass": pass_, "validation_error": errors[pass_]}
        if peer_errors:
            extra["cudnn_error"] = peer_errors[pass_]
        mine = device_times(getattr(ours, pass_), repeats, 3, extra, "gpuarray", sync=ng.synchronize)
        kernels = extra["kernel_only_us"]
        kernels["cudnn"] = theirs_kernel * 1e6
        extra["host_us"] = {
            "gpuarray": host_per_call(getattr(ours, pass_), ng.synchronize) * 1e6,
            "cudnn": min(host_per_call(getattr(v, pass_), torch.cuda.synchronize)
                         for v in variants.values()) * 1e6}
        row["values"].update(gpuarray=mine * 1e6, cudnn=theirs * 1e6)
        row["times_us"].update(row["values"])
        row["extra"] = {**extra, "TFLOPs": {"gpuarray": layer.flops / mine / 1e12,
                                            "cudnn": layer.flops / theirs / 1e12},
                        "ratio_to_cudnn": theirs / mine,
                        "kernel_ratio_to_cudnn": kernels["cudnn"] / kernels["gpuarray"]}
        if R > 1 and C >= 64:
            set_target(row, theirs * 1e6, ">= 1.0x cuDNN")
        rows.append(row)
    ratio = " ".join(f"{r['extra']['pass']} {r['extra']['ratio_to_cudnn']:.2f}x "
                     f"({r['extra']['kernel_ratio_to_cudnn']:.2f}x)" for r in rows)
    host = " ".join(f"{r['extra']['host_us']['gpuarray']:.0f}/{r['extra']['host_us']['cudnn']:.0f}"
                    for r in rows)
    inexact = " ".join(f"{r['extra']['pass']} {r['extra']['cudnn_error']:.1e}" for r in rows
                       if r["extra"].get("cudnn_error", 0) > tolerance(torch, dtype))
    print(f"{net} {name}: {ratio}, as called (kernels alone); host us a call, ours/torch "
          f"{host}; TFLOP/s ours {rows[0]['extra']['TFLOPs']['gpuarray']:.0f} fprop, cuDNN "
          f"{rows[0]['extra']['TFLOPs']['cudnn']:.0f}"
          + (f"; cuDNN's error past the tolerance: {inexact}" if inexact else ""), flush=True)
    return rows


def stack_chain(ng, torch, dtype, net):
    """(ours ms, cuDNN ms): ``net``'s conv stack -- every layer's fprop, then
    bprop and update from the last layer back -- as one chain of calls
    (chain_timer); cuDNN's in NCHW and in channels_last, the faster taken."""
    batch, specs = NETWORKS[net]
    layers = []
    for spec in specs:
        layer, x, w, grad = layer_tensors(ng, torch, dtype, batch, spec)
        stride, pad = spec[5:]
        layers.append((OursConv(ng, torch, layer, x, w, grad),
                       TorchConv(torch, x, w, grad, stride, pad, torch.contiguous_format),
                       TorchConv(torch, x, w, grad, stride, pad, torch.channels_last)))

    def chain(side):
        def run():
            for pair in layers:
                pair[side].fprop()
            for pair in reversed(layers):
                pair[side].bprop()
                pair[side].update()
        return run
    ours, *theirs = (chain_timer(chain(side), calls=3, repeats=7) * 1e3 for side in (0, 1, 2))
    return ours, min(theirs)


def network_sums(rows, times_of=None):
    """{net: (ours ms, cuDNN ms)} over the conv stack (every layer, every pass),
    as called or of ``extra[times_of]`` ("kernel_only_us": the kernels
    alone; "host_us": the calls' host time)."""
    sums = {}
    for r in rows:
        ours, theirs = sums.get(r["extra"]["net"], (0.0, 0.0))
        times = r["extra"][times_of] if times_of else r["values"]
        sums[r["extra"]["net"]] = (ours + times["gpuarray"] / 1e3, theirs + times["cudnn"] / 1e3)
    return sums


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="three layers only")
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    parser.add_argument("--nets", default=",".join(NETWORKS))
    parser.add_argument("--name", help="results/<name>.json (default conv[_<dtype>])")
    args = parser.parse_args()
    peers = torch_and_gpu("bench_conv")
    if peers is None:
        return 2
    torch, ng = peers
    torch.backends.cudnn.benchmark = True
    dtype = getattr(torch, args.dtype)
    rows = []
    for net in args.nets.split(","):
        batch, specs = NETWORKS[net]
        for spec in specs:
            if args.quick and spec[0] not in QUICK.get(net, ()):
                continue
            rows += run_layer(ng, torch, dtype, net, batch, spec, 5 if args.quick else 10)
            ng.pool.free_cached()
            torch.cuda.empty_cache()
    print_table([table_cells(r, IMPLS) for r in rows])
    sums, kernel_sums = network_sums(rows), network_sums(rows, "kernel_only_us")
    host_sums = network_sums(rows, "host_us")
    for net, (ours, theirs) in sums.items():
        k_ours, k_theirs = kernel_sums[net]
        print(f"{net} conv stack (fprop+bprop+update): ours {ours:.2f} ms, cuDNN {theirs:.2f} ms, "
              f"{theirs / ours:.2f}x as called; kernels alone {k_ours:.2f} against {k_theirs:.2f} ms, "
              f"{k_theirs / k_ours:.2f}x (target 1.1x); host time of the calls "
              f"{host_sums[net][0]:.2f} against torch's {host_sums[net][1]:.2f} ms")
    chains = {}
    for net in sums:
        chains[net] = stack_chain(ng, torch, dtype, net)
        ng.pool.free_cached()
        torch.cuda.empty_cache()
        print(f"{net} conv stack as one chain: ours {chains[net][0]:.2f} ms, cuDNN "
              f"{chains[net][1]:.2f} ms, {chains[net][1] / chains[net][0]:.2f}x", flush=True)
    name = args.name or "conv" + ("" if args.dtype == "float16" else "_" + args.dtype)
    write_results(name, rows, {"impls": IMPLS, "quick": args.quick, "dtype": args.dtype,
                               "network_ms": sums, "network_kernel_ms": kernel_sums,
                               "network_host_ms": host_sums, "network_chain_ms": chains})
    return 0


if __name__ == "__main__":
    sys.exit(main())
