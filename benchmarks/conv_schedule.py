"""The implicit GEMM's fprop / bprop schedules, measured: data-parallel against stream-K.

    python3 benchmarks/conv_schedule.py [--nets overfeat,vgg-a,...] [--dtype float16|bfloat16]

For every stride-1 layer of the convnets (conv_nets.py) with C >= 16, fprop
and the data gradient run under each schedule the planner could pick
(``gpuarray.conv.implicit_plan.choose_fprop``, forced in turn): waves of
whole tiles on the tile of ``choose`` ("dp"), and stream-K on that tile and
on 128x256 / 128x128, and data-parallel on the best tile of the other
height (256 rows, or at most 128).  Each result is validated against the
data-parallel one first (max|err| / mean|ref| <= 7e-3: only the order of
the K sums differs), then timed, kernels alone (host hidden).  Prints a
line per layer and pass with the model's figure beside each measurement,
then the range of ``STREAM_K_FPROP_SLOWDOWN`` values whose picks lose the
least time against the fastest schedule measured per layer and pass --
what the constant in implicit_plan.py was fitted to.  Writes
benchmarks/results/conv_schedule.json and .png.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import new_row, torch_and_gpu, write_results  # noqa: E402
from timing import device_timer  # noqa: E402
from conv_nets import NETWORKS  # noqa: E402

TOLERANCE = 7e-3
SLOWDOWNS = [1.0 + 0.01 * i for i in range(41)]


def problems(layer, N, C, K, R, H):
    """{pass: (M, N, K-tiles)} of the layer's implicit GEMMs."""
    return {"fprop": (N * layer.P * layer.Q, K, R * R * -(-C // 64)),
            "bprop": (N * H * H, C, R * R * -(-K // 64))}


def schedules(plans, ng, m, n):
    """{mode: (cfg, stream_k)} worth measuring for an M x N output."""
    dp = plans.choose(ng, m, n)
    modes = {"dp": (dp, False), f"sk{dp.bm}x{dp.bn}": (dp, True)}
    if n >= 192 and dp.bn != 256:
        modes["sk128x256"] = (plans._config(128, 256), True)
    if dp.bn > 128 and n % 128 == 0:
        modes["sk128x128"] = (plans._config(128, 128), True)
    # the best tile of the other height (256 rows or at most 128) beside
    # the pick: what the 256-row tiles' efficiencies are fitted to
    other = plans.choose(ng, m, n, [c for c in plans._configs() if (c.bm > 128) != (dp.bm > 128)])
    modes[f"dp{other.bm}x{other.bn}"] = (other, False)
    return modes


def modelled(plans, ng, choice, m, n, ktiles, slowdown):
    """The planner's seconds for one (cfg, stream_k) choice."""
    cfg, stream_k = choice
    tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
    if stream_k:
        return plans.stream_k_seconds(ng, cfg, tiles, ktiles, slowdown, whole_first=True)
    return plans.waves_seconds(ng, cfg, tiles, ktiles)


def measure(np, ng, plans, run, result, modes):
    """{mode: (us, error against dp)}, each plan recorded afresh."""
    chosen, out, ref = plans.choose_fprop, {}, None
    try:
        for mode, choice in modes.items():
            plans.choose_fprop = lambda *args, c=choice: c
            ng._conv_plans.clear()
            run()
            got = result.get().astype(np.float64)
            ref = got if ref is None else ref
            err = float(np.abs(got - ref).max() / max(np.abs(ref).mean(), 1e-30))
            if err > TOLERANCE:
                raise AssertionError(f"{mode}: validation failed, error {err:.2e}")
            out[mode] = (device_timer(run, 50, 5, sync=ng.synchronize, hide_host=True) * 1e6, err)
    finally:
        plans.choose_fprop = chosen
        ng._conv_plans.clear()
    return out


def run_layer(np, ng, plans, net, N, spec, dtype):
    name, C, H, K, R, stride, pad = spec
    layer = ng.conv_layer(dtype, N, C, K, H=H, W=H, R=R, S=R, pad_h=pad, pad_w=pad)
    rng = np.random.default_rng(0)
    I, E = (ng.array(rng.uniform(-1, 1, d).astype(dtype)) for d in (layer.dimI, layer.dimO))
    F = ng.array((rng.uniform(-1, 1, layer.dimF) / (C * R * R) ** 0.5).astype(dtype))
    O, G = ng.empty(layer.dimO, dtype), ng.empty(layer.dimI, dtype)
    runs = {"fprop": (lambda: ng.fprop_conv(layer, I, F, O), O),
            "bprop": (lambda: ng.bprop_conv(layer, F, E, G), G)}
    found = []
    for kind, (m, n, ktiles) in problems(layer, N, C, K, R, H).items():
        modes = schedules(plans, ng, m, n)
        times = measure(np, ng, plans, *runs[kind], modes)
        found.append((f"{net} {name} {kind}", (m, n, ktiles), modes, times))
    return found


def fitted_range(plans, ng, found):
    """(µs lost, slowdowns): the slowdowns whose picks lose least against the
    fastest schedule measured per layer and pass, summed (within 1 µs)."""
    lost = {}
    for slowdown in SLOWDOWNS:
        lost[slowdown] = 0.0
        for _, (m, n, ktiles), modes, times in found:
            pick = min(modes, key=lambda k: modelled(plans, ng, modes[k], m, n, ktiles, slowdown))
            lost[slowdown] += times[pick][0] - min(t for t, _ in times.values())
    least = min(lost.values())
    return least, [s for s in SLOWDOWNS if lost[s] <= least + 1.0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nets", default=",".join(NETWORKS))
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    args = parser.parse_args()
    peers = torch_and_gpu("conv_schedule")
    if peers is None:
        return 2
    import numpy as np

    from gpuarray.conv import implicit_plan as plans
    _, ng = peers
    found = []
    for net in args.nets.split(","):
        N, specs = NETWORKS[net]
        for spec in specs:
            if spec[1] < 16 or spec[5] != 1:
                continue
            for case, shape, modes, times in run_layer(np, ng, plans, net, N, spec, args.dtype):
                found.append((case, shape, modes, times))
                model = {mode: 1e6 * modelled(plans, ng, choice, *shape, plans.STREAM_K_FPROP_SLOWDOWN)
                         for mode, choice in modes.items()}
                print(f"{case} M, N, K-tiles {shape}: " + ", ".join(
                    f"{mode} {us:.1f} us (model {model[mode]:.1f})" for mode, (us, _) in times.items()),
                    flush=True)
    least, good = fitted_range(plans, ng, found)
    print(f"slowdowns whose picks lose least ({least:.1f} us over {len(found)} passes against the "
          f"fastest schedule of each): {good[0]:.2f} to {good[-1]:.2f} "
          f"(implicit_plan.STREAM_K_FPROP_SLOWDOWN = {plans.STREAM_K_FPROP_SLOWDOWN})")
    modes = ["dp"] + sorted({mode for *_, times in found for mode in times} - {"dp"})
    rows = []
    for case, (m, n, ktiles), _, times in found:
        row = new_row(case, f"M{m} N{n} K-tiles {ktiles}", modes)
        for mode, (us, err) in times.items():
            row["values"][mode] = row["times_us"][mode] = us
            row["extra"][f"{mode}_error"] = err
        rows.append(row)
    write_results("conv_schedule" + ("" if args.dtype == "float16" else "_" + args.dtype), rows,
                  {"impls": modes, "slowdown_fits": [good[0], good[-1]], "lost_us": least,
                   "slowdown": plans.STREAM_K_FPROP_SLOWDOWN})
    return 0


if __name__ == "__main__":
    sys.exit(main())
