"""Run one benchmark conv layer's passes a few times, for a profiler to read.

    ncu --metrics gpu__time_duration.sum python3 benchmarks/profile_conv.py alexnet conv3

Builds the layer as bench_conv.py does (conv_nets.py), runs fprop, bprop
and update twice to warm up, then once more each between CUDA profiler
start/stop marks (ncu --profile-from-start off reads only those).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conv_nets import NETWORKS, OursConv  # noqa: E402


def main(net, layer_name, dtype_name="float16"):
    import torch

    import gpuarray
    ng = gpuarray.GPU()
    batch, specs = NETWORKS[net]
    name, C, H, K, R, stride, pad = next(s for s in specs if s[0] == layer_name)
    layer = ng.conv_layer(dtype_name, batch, C, K, H=H, W=H, R=R, S=R, pad_h=pad, pad_w=pad,
                          str_h=stride, str_w=stride)
    dtype = getattr(torch, dtype_name)
    x = torch.randn(batch, C, H, H, device="cuda", dtype=dtype)
    w = torch.randn(K, C, R, R, device="cuda", dtype=dtype)
    grad = torch.randn(batch, K, layer.P, layer.Q, device="cuda", dtype=dtype)
    ours = OursConv(ng, torch, layer, x, w, grad)
    for _ in range(2):
        ours.fprop(), ours.bprop(), ours.update()
    ng.synchronize()
    torch.cuda.profiler.start()
    ours.fprop(), ours.bprop(), ours.update()
    ng.synchronize()
    torch.cuda.profiler.stop()
    return 0


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("net", choices=sorted(NETWORKS), help="network of bench_conv.py")
    parser.add_argument("layer", help="the layer's name in conv_nets.py (conv1, conv2, ...)")
    parser.add_argument("dtype", nargs="?", default="float16", choices=("float16", "bfloat16", "float32"))
    args = parser.parse_args(argv)
    layers = [s[0] for s in NETWORKS[args.net][1]]
    if args.layer not in layers:
        parser.error(f"{args.net} has no layer {args.layer!r}; its layers: {', '.join(layers)}")
    return args


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    sys.exit(main(args.net, args.layer, args.dtype))
