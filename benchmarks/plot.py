"""Render a benchmark's JSON results as a PNG bar chart.

    python3 benchmarks/plot.py benchmarks/results/elementwise.json [-o chart.png]

One group of bars per case (gpuarray and each peer), time per call in µs on a
log scale, the case's target drawn as a black line across its group. Rows are
the dicts written by ``bench_elementwise.py``: ``label``, ``times_us``
(implementation -> µs or null), ``target_us`` (or null) and ``met``.
"""
import argparse
import json
import sys
from pathlib import Path

COLORS = {"gpuarray": "#d62728", "torch eager": "#1f77b4",
          "torch.compile": "#2ca02c", "cupy": "#ff7f0e"}


def render(data, png_path):
    """Draw ``data`` (the loaded results JSON) into ``png_path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in data["rows"] if any(v for v in (r.get("times_us") or {}).values())]
    impls = []
    for row in rows:
        impls += [k for k, v in row["times_us"].items() if v and k not in impls]
    width = 0.8 / max(len(impls), 1)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(rows) + 2), 5.5))
    for j, impl in enumerate(impls):
        xs = [i + (j - (len(impls) - 1) / 2) * width for i in range(len(rows))]
        ys = [row["times_us"].get(impl) or 0.0 for row in rows]
        bars = ax.bar(xs, ys, width, label=impl, color=COLORS.get(impl))
        for bar, y in zip(bars, ys):
            if y:
                ax.annotate(f"{y:,.0f}" if y >= 100 else f"{y:.3g}",
                            (bar.get_x() + bar.get_width() / 2, y),
                            ha="center", va="bottom", fontsize=6, rotation=90,
                            xytext=(0, 2), textcoords="offset points")
    for i, row in enumerate(rows):
        target = row.get("target_us")
        if target:
            ax.hlines(target, i - 0.45, i + 0.45, colors="black", linewidth=2,
                      label="target" if i == next(k for k, r in enumerate(rows)
                                                  if r.get("target_us")) else None)
    ax.set_yscale("log")
    tops = [v for r in rows for v in list(r["times_us"].values()) + [r.get("target_us")] if v]
    if tops:
        ax.set_ylim(top=max(tops) * 4)
    ax.set_ylabel("time per call [µs] (log scale; lower is better)")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_tick(row) for row in rows], fontsize=7, rotation=20, ha="right")
    title = f"{data.get('name', 'benchmark')} on {data.get('device', '?')}"
    if data.get("date"):
        title += f", {data['date'][:10]}"
    ax.set_title(title)
    if impls:
        ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=130)
    plt.close(fig)


def _tick(row):
    met = {True: "met", False: "MISSED"}.get(row.get("met"), "")
    return f"{row['case']}: {row['label']}" + (f"\n[{met}]" if met else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="results JSON written by a benchmark")
    parser.add_argument("-o", "--output", type=Path, help="PNG path (default: beside the JSON)")
    args = parser.parse_args(argv)
    data = json.loads(args.json.read_text())
    out = args.output or args.json.with_suffix(".png")
    render(data, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
