#!/usr/bin/env python3
"""Plot a sparsegen-bench JSON: our speedup over cuBLAS (dense) and over cuSPARSE (best CSR) per
case, one bar pair per case, grouped as in the summary (llm by sparsity and N, suitesparse by N).

    python3 tools/plot_bench.py results/bench_quick.json [-o bench_quick.png]

Speedup = baseline median time / our median time (log scale; > 1 means ours is faster). Cases
where a method has no time (not supported, skipped, failed its check) are left out of that series.
Needs matplotlib (pip install matplotlib); not run in CI.
"""
import argparse
import json
import math
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
        sys.exit("plot_bench.py: matplotlib is missing (pip install matplotlib)")
    with open(args.json_file) as f:
        doc = json.load(f)
    cases = doc.get("cases", [])
    if not cases:
        sys.exit(f"plot_bench.py: {args.json_file} has no cases")
    out = args.output or (args.json_file.rsplit(".", 1)[0] + ".png")

    # Stable order: by group (as they appear), then matrix.
    groups = []
    for c in cases:
        if c["group"] not in groups:
            groups.append(c["group"])
    cases = sorted(cases, key=lambda c: (groups.index(c["group"]), c["matrix"]))
    labels = [f'{c["matrix"]} N={c["n"]}' for c in cases]
    vb = [c.get("speedup_vs_cublas") for c in cases]
    vs = [c.get("speedup_vs_cusparse") for c in cases]

    width = max(10.0, 0.22 * len(cases))
    fig, ax = plt.subplots(figsize=(width, 6.5))
    xs = list(range(len(cases)))
    for off, vals, name, color in ((-0.2, vb, "vs cuBLAS dense", "tab:blue"),
                                   (0.2, vs, "vs cuSPARSE best CSR", "tab:orange")):
        px = [x + off for x, v in zip(xs, vals) if v]
        py = [v for v in vals if v]
        ax.bar(px, py, width=0.4, color=color, label=name)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("speedup of our kernel (baseline time / our time)")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    # Group separators and geometric means.
    for g in groups:
        idx = [i for i, c in enumerate(cases) if c["group"] == g]
        if not idx:
            continue
        ax.axvline(idx[-1] + 0.5, color="grey", linewidth=0.4)
        gm = []
        for series in (vb, vs):
            v = [series[i] for i in idx if series[i]]
            gm.append(math.exp(sum(map(math.log, v)) / len(v)) if v else None)
        text = g + "\n" + " / ".join("-" if x is None else f"{x:.2g}x" for x in gm)
        ax.text((idx[0] + idx[-1]) / 2, ax.get_ylim()[1], text, ha="center", va="bottom",
                fontsize=6, rotation=0)
        start = idx[-1] + 1
    dev = doc.get("device", {}).get("name", "?")
    ax.set_title(f'sparsegen-bench on {dev}, {doc.get("date", "")}, commit '
                 f'{str(doc.get("git_commit", "?"))[:10]} (group labels: geomean vs cuBLAS / vs '
                 f'cuSPARSE)', fontsize=9, pad=28)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print(f"wrote {out} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
