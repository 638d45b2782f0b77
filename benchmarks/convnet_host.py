"""Eager host cost of the convnet benchmark's networks: does the host keep ahead of the GPU?

    python3 benchmarks/convnet_host.py [--nets alexnet,googlenet] [--dtypes float16,bfloat16]
                                       [--samples 5] [--name convnet_host]

For each network and dtype (benchmarks/networks.py, built as
convnet_benchmarks.py builds them): the eager step's host-bound share,
``1 - kernel time / wall time`` of one fprop + bprop (convnet_benchmarks'
own ``host_bound``, the issue's measure, target <= 5%), ``--samples``
times in one process; and the host's time to issue the step while the
GPU is busy with a spin kernel, against the step's kernel time.  Only
ours: this measures the host path, not the kernels (convnet_benchmarks.py
compares those with torch).  Writes benchmarks/results/<name>.json and
.png (host issue and kernel time per row, ms).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, print_table, table_cells, torch_and_gpu  # noqa: E402
from common import write_results  # noqa: E402
from convnet_benchmarks import SPIN_CYCLES, Ours, host_bound, inputs, release, timed  # noqa: E402
from networks import NETWORKS  # noqa: E402

IMPLS = ("host issue", "kernels")
TARGET = 0.05


def issue_ms(torch, ours, samples=3):
    """Host milliseconds to queue one eager step while the GPU spins (median)."""
    times = []
    for _ in range(samples):
        torch.cuda._sleep(SPIN_CYCLES)
        start = time.perf_counter()
        ours.fprop()
        ours.bprop()
        times.append((time.perf_counter() - start) * 1e3)
        ours.ng.synchronize()
        torch.cuda.synchronize()
    return statistics.median(times)


def run_row(ng, torch, net, dtype_name, samples):
    """One row: host-bound samples, host issue and kernel milliseconds."""
    x, grad = inputs(torch, net, dtype_name)
    ours = Ours(ng, torch, net, dtype_name, x, grad)
    timed(torch, ours.fprop, ours.bprop, 3, 3, ng.synchronize)  # compiled, bound, warm
    shares, kernels = [], []
    for _ in range(samples):
        share, _, kernel_ms = host_bound(torch, ours)
        shares.append(share)
        kernels.append(kernel_ms)
    issue = issue_ms(torch, ours)
    row = new_row(f"{net} {dtype_name}", f"{net} {dtype_name} eager step", IMPLS, unit="ms")
    row["values"].update({"host issue": issue, "kernels": statistics.median(kernels)})
    row["times_us"].update({"host issue": issue * 1e3, "kernels": statistics.median(kernels) * 1e3})
    worst = max(shares)
    row["extra"].update(host_bound=shares, worst_host_bound=worst)
    row.update(target_text=f"host-bound <= {TARGET:.0%} in every sample", met=worst <= TARGET)
    print(f"{net} {dtype_name}: host-bound " + " ".join(f"{100 * s:.1f}" for s in shares)
          + f" %; host issues the step in {issue:.2f} ms against {row['values']['kernels']:.2f}"
          " ms of kernels", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default=",".join(NETWORKS))
    parser.add_argument("--dtypes", default="float16,bfloat16,float32")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--name", default="convnet_host")
    args = parser.parse_args()
    peers = torch_and_gpu("convnet_host")
    if peers is None:
        return 2
    torch, ng = peers
    torch.backends.cudnn.benchmark = True
    rows = []
    for net in args.nets.split(","):
        for dtype in args.dtypes.split(","):
            rows.append(run_row(ng, torch, net, dtype, args.samples))
            release(ng, torch)
    cells = []
    for row in rows:
        cells.append(dict(table_cells(row, IMPLS), **{"host-bound % (samples)": " ".join(
            f"{100 * share:.1f}" for share in row["extra"]["host_bound"])}))
    print_table(cells, ["case", *IMPLS, "host-bound % (samples)", "target", "met?"])
    write_results(args.name, rows, {"impls": IMPLS, "samples": args.samples, "target": TARGET})
    return 0


if __name__ == "__main__":
    sys.exit(main())
