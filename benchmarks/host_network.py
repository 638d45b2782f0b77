"""Host cost of a convnet's eager training step, on a machine without a GPU.

    python3 benchmarks/host_network.py [--net googlenet] [--dtype float16]
                                       [--steps N] [--top T] [--no-profile]

Builds a network of convnet_benchmarks.py (benchmarks/networks.py) on a
GPU factory whose driver is a recorder and whose kernels -- generated and
hand-written alike -- launch nothing (host_profile.py's ``HostOnlyGPU``
with the GEMM, convolution and pooling libraries replaced), then runs
eager fprop + bprop steps: what is left is the host's work per step.
Prints the step's host time (median and p90 over ``--steps``), its
launches, each factory call's count and median cost per call, and a
cProfile top list of one step.  Figures are this machine's, not the GPU
host's (2-3x slower): compare before/after on one machine only; the
convnet benchmark's ``host_bound`` on the GPU machine is the measure that
counts.
"""
import argparse
import cProfile
import collections
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host_profile import HostOnlyGPU, launch_entry  # noqa: E402
from networks import NETWORKS, build_ours  # noqa: E402

#: the factory calls the nn layers make, timed one by one (a layer binds its
#: calls on its first step: after that, bound runs stand for most of them)
CALLS = ("fprop_conv", "bprop_conv", "update_conv", "update_bias", "fprop_pool", "bprop_pool",
         "dot", "bind_conv", "bind_update_bias", "bind_dot", "assign", "empty", "zeros")


class _NoOpKernel:
    """A hand-written kernel stand-in: every launch route returns at once."""

    def __init__(self, log, size=1):
        self.log, self.size = log, size

    def launch(self, grid, block, data, smem=0):
        self.log.append(1)

    launch_packed = launch_cooperative = launch

    def patched_launch(self, grid, block, template, holes, smem=0):
        if launch_entry is None:
            return None
        launch_entry.bind(launch_entry.NO_OP_ADDRESS)
        return launch_entry.PatchedLaunch(0, grid, block, template, holes, smem)

    def clustered(self, size):
        return _NoOpKernel(self.log, size)

    def allow_smem(self, smem):
        pass

    def max_active(self, block, smem):
        return 132 // self.size  # one block an SM on an H100/H200's 132 SMs


class _NoOpLibrary:
    def __init__(self, log):
        self.log = log

    def function(self, stem, name, smem=0):
        return _NoOpKernel(self.log)


class _NoOpDriver:
    Stream = object  # lanes hold the constructor; eager steps run their tasks in order

    def memset_d32_async(self, ptr, value, count, stream=None):
        pass


def _encode(*args, **kwargs):
    return bytes(128)  # a tensor map's 128 bytes, not made (no libcuda here)


class NetworkHostGPU(HostOnlyGPU):
    """HostOnlyGPU whose hand-written kernels launch nothing either."""

    def __init__(self):
        super().__init__()
        self.kernel_launches = []
        library = _NoOpLibrary(self.kernel_launches)
        self.gemm_library = self.conv_library = self.rnn_library = library
        self.smem_optin = 227 * 1024  # an H100/H200's opt-in shared memory a block
        self._drv = _NoOpDriver()


def _timed_calls(ng):
    """Wrap the factory's entry points so each call's host time is recorded."""
    times = collections.defaultdict(list)
    for name in CALLS:
        method = getattr(ng, name, None)
        if method is None:
            continue

        def timed(*args, _method=method, _log=times[name], **kwargs):
            t0 = time.perf_counter()
            result = _method(*args, **kwargs)
            _log.append(time.perf_counter() - t0)
            return result
        setattr(ng, name, timed)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default="googlenet", choices=sorted(NETWORKS))
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    parser.add_argument("--steps", type=int, default=20, help="timed steps (median, p90)")
    parser.add_argument("--top", type=int, default=30, help="cProfile lines to print")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile list")
    args = parser.parse_args(argv)

    from gpuarray.cuda import tensor_maps
    tensor_maps.encode_tiled = tensor_maps.encode_im2col = _encode
    ng = NetworkHostGPU()
    model = build_ours(ng, args.net, args.dtype)
    batch, size, _ = NETWORKS[args.net]
    x = ng.empty((batch, 1, size, size, 3), np.dtype(args.dtype))
    grad = ng.empty(model.fprop(x).shape, np.dtype(args.dtype))

    def step():
        model.fprop(x)
        model.bprop(grad)
    for _ in range(3):
        step()
    ng.launches.clear()
    ng.kernel_launches.clear()
    step()
    launches = len(ng.launches) + len(ng.kernel_launches)
    calls = _timed_calls(ng)
    steps = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        steps.append((time.perf_counter() - t0) * 1e3)
    steps.sort()
    p90 = steps[min(len(steps) - 1, int(0.9 * len(steps)))]
    print(f"{args.net} {args.dtype}: host {statistics.median(steps):.2f} ms a step "
          f"(p90 {p90:.2f}), {launches} launches")
    print(f"  {'call':<12} {'a step':>6} {'median us':>10} {'us a step':>10}")
    for name, log in sorted(calls.items(), key=lambda item: -sum(item[1])):
        if log:
            per_step = len(log) / args.steps
            print(f"  {name:<12} {per_step:6.0f} {statistics.median(log) * 1e6:10.1f} "
                  f"{sum(log) / args.steps * 1e6:10.0f}")
    if not args.no_profile:
        profile = cProfile.Profile()
        profile.enable()
        step()
        profile.disable()
        print("\ncProfile of one step, by own time:")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
