#!/usr/bin/env python3
"""Compares two sparsegen-bench JSON files of the same suite (e.g. the quick suite of the previous
commit and of this one, run on one machine): per group, the geometric mean over the cases both
measured of ours / cuBLAS and ours / cuSPARSE speedups, and the ratio new / old.

  python3 tools/compare_quick.py OLD.json NEW.json [--json OUT.json]
"""
import json
import math
import sys


def load(path):
    opener = open
    if path.endswith(".xz"):
        import lzma
        opener = lzma.open
    with opener(path, "rt") as f:
        return json.load(f)


def key(c):
    return (c.get("suite"), c.get("matrix"), c.get("dtype"), c.get("n"), c.get("pruning"),
            c.get("sparsity"))


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    old, new = load(args[0]), load(args[1])
    o = {key(c): c for c in old["cases"]}
    n = {key(c): c for c in new["cases"]}
    common = [k for k in n if k in o]
    groups = {}
    for k in common:
        groups.setdefault(n[k].get("group", "all"), []).append(k)
    rows = []
    for g, ks in sorted(groups.items()):
        row = {"group": g, "cases": len(ks)}
        for base in ("cublas", "cusparse"):
            so = geomean([o[k].get("speedup_vs_" + base) for k in ks])
            sn = geomean([n[k].get("speedup_vs_" + base) for k in ks])
            row[base] = {"old": so, "new": sn, "new_over_old": sn / so if so == so and so else None}
        rows.append(row)
    allc = {"group": "all", "cases": len(common)}
    for base in ("cublas", "cusparse"):
        so = geomean([o[k].get("speedup_vs_" + base) for k in common])
        sn = geomean([n[k].get("speedup_vs_" + base) for k in common])
        allc[base] = {"old": so, "new": sn, "new_over_old": sn / so if so else None}
    rows.append(allc)
    print(f"{'group':<24}{'cases':>6}  {'vs cuBLAS old':>14}{'new':>8}{'new/old':>9}"
          f"  {'vs cuSPARSE old':>16}{'new':>8}{'new/old':>9}")
    for r in rows:
        cb, cs = r["cublas"], r["cusparse"]
        print(f"{r['group']:<24}{r['cases']:>6}  {cb['old']:>14.3f}{cb['new']:>8.3f}"
              f"{(cb['new_over_old'] or float('nan')):>9.3f}  {cs['old']:>16.3f}{cs['new']:>8.3f}"
              f"{(cs['new_over_old'] or float('nan')):>9.3f}")
    only_old = len([k for k in o if k not in n])
    only_new = len([k for k in n if k not in o])
    print(f"common cases {len(common)}, only old {only_old}, only new {only_new}; "
          f"failed checks old {old.get('failed_checks')}, new {new.get('failed_checks')}")
    if out:
        with open(out, "w") as f:
            json.dump({"old": {"git_commit": old.get("git_commit"), "device": old.get("device"),
                               "date": old.get("date"), "command": old.get("command")},
                       "new": {"git_commit": new.get("git_commit"), "device": new.get("device"),
                               "date": new.get("date"), "command": new.get("command")},
                       "groups": rows, "only_old": only_old, "only_new": only_new}, f, indent=1)


if __name__ == "__main__":
    main()
