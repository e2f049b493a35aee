#!/usr/bin/env python3
"""Plot a sparsegen-ffn-bench JSON: speedup over the dense cuBLAS FFN against the mean nonzeros
per row of the gate activations, one panel per shape (K x N), one line per token count M: the
fastest twell schedule (solid) and the tuned pick, twell or dense_ffn (dashed). Where the solid
line crosses 1 is the crossover.

    python3 tools/plot_ffn.py results/2026-11-27_nvidia-h200/ffn_tuned.json [-o ffn.png]

Needs matplotlib (pip install matplotlib); not run in CI.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("json_file")
    ap.add_argument("-o", "--output", help="PNG path (default: the JSON path with .png)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_ffn.py: matplotlib is missing (pip install matplotlib)")
    with open(args.json_file) as f:
        doc = json.load(f)
    series = {}  # (k, n) -> m -> [(mean, twell speedup, tuned speedup)]
    for c in doc.get("cases", []):
        if "speedup_vs_dense" not in c:
            continue
        tuned = c.get("tuned_vs_dense", c["speedup_vs_dense"])
        series.setdefault((c["k"], c["n"]), {}).setdefault(c["m"], []).append(
            (c["mean_target"], c["speedup_vs_dense"], tuned))
    if not series:
        sys.exit(f"plot_ffn.py: {args.json_file} has no measured cases")
    fig, axes = plt.subplots(1, len(series), figsize=(6 * len(series), 4.2), squeeze=False)
    for ax, ((k, n), by_m) in zip(axes[0], sorted(series.items())):
        for m, pts in sorted(by_m.items()):
            pts.sort()
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"M={m} twell")
            ax.plot([p[0] for p in pts], [p[2] for p in pts], "--", color=line.get_color(),
                    label=f"M={m} tuned")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("mean nonzeros per row of ReLU(x·W_g)")
        ax.set_ylabel("speedup over the dense cuBLAS FFN")
        ax.set_title(f"K={k}, N={n} ({doc.get('device', '?')})")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = args.output or args.json_file.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=90)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
