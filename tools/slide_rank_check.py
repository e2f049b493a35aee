#!/usr/bin/env python3
"""How well the cost model orders slide schedules, against times a slide bench measured.

For every case of the given sparsegen-slide-bench JSON files (one value type), the weight shape is
regenerated here (`sparsegen gen --method nm --nm 6:8`; the slide ranking depends on the shape,
not the values), `sparsegen schedules --ranked` gives the model's order offline, and per case it
prints: the fastest measured schedule's place in that order, the Spearman correlation between
predicted and measured times over the measured schedules, and the fastest measured schedule among
the model's first eight (what `tune` measures), against the fastest measured at all; last, how
close the model's first choice alone (a tune without a GPU) came, over the cases that measured it.

  tools/slide_rank_check.py --sparsegen build/tools/sparsegen results/<day>/slide_*.json
"""
import argparse
import json
import math
import os
import re
import subprocess
import tempfile


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0] * len(values)
    for place, i in enumerate(order):
        r[i] = place
    return r


def spearman(x, y):
    if len(x) < 3:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx > 0 and vy > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="sparsegen-slide-bench JSON files")
    ap.add_argument("--sparsegen", default="build/tools/sparsegen")
    ap.add_argument("--type", default="fp16", help="value type of the cases to check")
    ap.add_argument("--top", type=int, default=8, help="schedules tune measures")
    args = ap.parse_args()

    cases = {}
    for path in args.json:
        with open(path) as f:
            doc = json.load(f)
        for c in doc.get("cases", []):
            if "tried" not in c or c.get("type") != args.type:
                continue
            case = cases.setdefault((c["m"], c["k"], c["n"], c["pattern"]), {"times": {}})
            for t in c["tried"]:
                old = case["times"].get(t["schedule"])
                case["times"][t["schedule"]] = t["ms"] if old is None else min(old, t["ms"])

    within = 0
    firsts = []  # the model's first choice over the fastest measured, where it was measured
    with tempfile.TemporaryDirectory() as tmp:
        for (m, k, n, pattern), case in sorted(cases.items()):
            w = os.path.join(tmp, f"w_{m}x{k}_{pattern.replace(':', '_')}.safetensors")
            if not os.path.exists(w):
                subprocess.run([args.sparsegen, "gen", "--shape", f"{m}x{k}", "--method", "nm",
                                "--nm", pattern, "-o", w], check=True, capture_output=True)
            out = subprocess.run([args.sparsegen, "schedules", w, "-n", str(n), "--dtype",
                                  args.type, "--b-layout", "col", "--c-layout", "col", "--ranked"],
                                 check=True, capture_output=True, text=True).stdout
            order, predicted = [], {}
            for line in out.splitlines():
                hit = re.match(r"\s*\d+\s+([\d.]+) ms\s+(slide;\S+)", line)
                if hit:
                    predicted[hit.group(2)] = float(hit.group(1))
                    order.append(hit.group(2))
            times = case["times"]
            best = min(times, key=times.get)
            top = [times[s] for s in order[: args.top] if s in times]
            both = [s for s in times if s in predicted]
            rho = spearman([predicted[s] for s in both], [times[s] for s in both])
            pick = min(top) if top else None
            ok = pick is not None and pick <= 1.1 * times[best]
            within += ok
            place = order.index(best) if best in order else "not enumerated"
            first_choice = times.get(order[0]) if order else None
            if first_choice is not None:
                firsts.append(first_choice / times[best])
            print(f"{m}x{k} {pattern} n={n}: best {times[best] * 1e3:.1f} us at place {place}, "
                  f"spearman {rho:.2f} over {len(both)}, measured in the top {args.top}: "
                  f"{len(top)}, their best "
                  f"{'-' if pick is None else f'{pick * 1e3:.1f} us'}{' (within 10 %)' if ok else ''}")
    print(f"{within} of {len(cases)} cases: the top {args.top} hold a measured schedule within 10 % "
          "of the fastest measured")
    if firsts:
        gm = math.exp(sum(math.log(f) for f in firsts) / len(firsts))
        print(f"the model's first choice, measured in {len(firsts)} cases: within 10 % of the "
              f"fastest in {sum(f <= 1.1 for f in firsts)}, geometric mean {gm:.3f}, worst "
              f"{max(firsts):.3f}")


if __name__ == "__main__":
    main()
