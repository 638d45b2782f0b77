"""Host cost of ``out[:] = expr`` on a machine without a GPU, and where it goes.

    python3 benchmarks/host_profile.py [--calls N] [--batches K] [--top T] [--no-profile]

Runs the real GPU dispatch path -- op-tree building, ``Backend.assign``,
``Dispatcher.execute`` (signature, recipe lookup, slots, argument packing)
-- through the ``RecordingGPU`` of tests/test_dispatch.py, with the kernel
launch replaced by a no-op (the compiled launch entry, where built, bound
to a C function that returns at once), so only host work is timed:

  (a) building a 10-op expression tree (no assignment),
  (b) a cached ``c[:] = a + b`` (1024 fp32),
  (c) a cached 10-op fused assignment (1024 fp32),

each the median (and p90) over ``--batches`` batches of ``--calls`` calls,
per call; then a cProfile top list of (c).  Figures are this machine's,
not the GPU host's: compare before/after on one machine only.
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np  # noqa: E402
from test_dispatch import RecordingGPU  # noqa: E402


try:
    from gpuarray.cuda import launch_entry  # noqa: E402
except ImportError:
    launch_entry = None


class _NoLaunch:
    """A compiled kernel stand-in whose launch does nothing.  Where the
    compiled launch entry is built, replays go through it as on the GPU,
    bound to a C function that returns at once instead of cuLaunchKernel."""

    def __init__(self, arg_format):
        self.arg_format = arg_format

    def launch_packed(self, grid, block, buf, shared=0):
        pass

    def patched_launch(self, grid, block, template, holes, smem=0):
        if launch_entry is None:
            return None
        launch_entry.bind(launch_entry.NO_OP_ADDRESS)
        return launch_entry.PatchedLaunch(0, grid, block, template, holes, smem)


class HostOnlyGPU(RecordingGPU):
    """RecordingGPU whose launches are no-ops: only the host path is left."""

    def _kernel(self, program, layout):
        kernel = super()._kernel(program, layout)
        return _NoLaunch(kernel.arg_format)


def ten_ops(ng, A, B):
    """The 10-op expression of bench_elementwise.py case 5."""
    return ng.maximum((A + B) * 2 - A / 3 + ng.sqrt(ng.abs(B)) * A - 1, 0)


def cases(ng):
    """name -> zero-argument callable, each one call of the measured path."""
    A, B, C = (ng.empty((1024,), np.float32) for _ in range(3))

    def build():
        ten_ops(ng, A, B)

    def add():
        C[:] = A + B

    def fused():
        C[:] = ten_ops(ng, A, B)
    return {"(a) build 10-op tree": build, "(b) cached c[:] = a + b": add,
            "(c) cached 10-op assignment": fused}


def per_call(fn, calls, batches, clock=time.perf_counter):
    """Median and p90 (over batches) of the time per call, in microseconds."""
    for _ in range(calls):
        fn()
    times = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(calls):
            fn()
        times.append((clock() - t0) / calls * 1e6)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--batches", type=int, default=15, help="batches (median, p90 over them)")
    parser.add_argument("--top", type=int, default=25, help="cProfile lines to print")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile list")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the process's CPU clock (steadier on a shared machine)")
    args = parser.parse_args(argv)
    ng = HostOnlyGPU()
    runs = cases(ng)
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(f"host time per call ({'CPU' if args.cpu_time else 'wall'} clock), "
          f"median (p90) over {args.batches} x {args.calls} calls")
    for name, fn in runs.items():
        median, p90 = per_call(fn, args.calls, args.batches, clock)
        print(f"  {name:<30} {median:7.2f} µs  ({p90:.2f})")
    if not args.no_profile:
        fused = runs["(c) cached 10-op assignment"]
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            fused()
        profile.disable()
        print(f"\ncProfile of (c), {args.calls} calls, by own time:")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
