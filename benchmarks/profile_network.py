"""Run one network's fprop and bprop once, for a profiler to read kernel by kernel.

    ncu --profile-from-start off --csv --metrics gpu__time_duration.sum \\
        python3 benchmarks/profile_network.py vgg-a float16 ours

Builds the network as convnet_benchmarks.py does (ours, or torch's in
channels_last with ``theirs``), runs two warm-up iterations, then one more
between CUDA profiler start/stop marks (``--profile-from-start off`` reads only
those), so a profiler lists the iteration's kernels in launch order.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convnet_benchmarks import Ours, Theirs  # noqa: E402
from networks import NETWORKS, build_torch, copy_weights  # noqa: E402


def main(net, dtype_name="float16", side="ours"):
    import torch

    import gpuarray
    ng = gpuarray.GPU()
    dtype = getattr(torch, dtype_name)
    batch, size, _ = NETWORKS[net]
    x = torch.randn(batch, 3, size, size, device="cuda").to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    grad = torch.randn(batch, 1000, device="cuda").to(dtype)
    torch.backends.cudnn.benchmark = True
    ours = Ours(ng, torch, net, dtype_name, x, grad)
    if side == "ours":
        run = ours
    else:
        module = build_torch(torch, net).to(dtype)
        copy_weights(torch, ours.model, module, dtype)
        run = Theirs(torch, module, x, grad, torch.channels_last, False)
    for _ in range(2):
        run.fprop()
        run.bprop()
    ng.synchronize()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run.fprop()
    run.bprop()
    ng.synchronize()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
