#!/usr/bin/env python3
"""How many bitmap tiles of real pruned weights a decode-free tile kind could take (offline).

Reads DLMC sparsity patterns (`.smtx`: a "rows, cols, nnz" line, the CSR row offsets, the column
indices; no values) under ROOT/METHOD/SPARSITY/*.smtx and reports, per method and sparsity, the
share of TRxTC tiles (bitmap_tc's 16x64 by default) that are
  - empty;
  - 2:4 as they stand (every row's groups of 4 columns hold at most 2 nonzeros: wgmma.sp could read
    them with no permutation);
  - at least half / three quarters full (candidates for a dense tile read by a descriptor).
Shares are weighted by tile count over the files of a group.

  tools/debug/tile_kinds.py ../shared/data/dlmc/transformer
"""
import argparse
import collections
import glob
import os


def load(path):
    with open(path) as f:
        m, n, _ = (int(x) for x in f.readline().split(","))
        ptr = [int(x) for x in f.readline().split()]
        col = [int(x) for x in f.readline().split()]
    return m, n, ptr, col


def tile_shares(path, tr, tc):
    """(tiles, empty, 2:4 as is, >= half, >= three quarters) shares of one pattern's tiles."""
    m, n, ptr, col = load(path)
    count = collections.Counter()  # (tile row, tile col) -> nonzeros
    bad = set()  # tiles with a group of 4 holding more than 2
    for r in range(m):
        cols = col[ptr[r]:ptr[r + 1]]
        for c in cols:
            count[(r // tr, c // tc)] += 1
        for g, k in collections.Counter(c // 4 for c in cols).items():
            if k > 2:
                bad.add((r // tr, g * 4 // tc))
    tiles = -(-m // tr) * -(-n // tc)
    half = sum(1 for v in count.values() if 2 * v >= tr * tc)
    most = sum(1 for v in count.values() if 4 * v >= 3 * tr * tc)
    return tiles, (tiles - len(count)) / tiles, (tiles - len(bad)) / tiles, half / tiles, most / tiles


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", help="folder of METHOD/SPARSITY/*.smtx")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--cols", type=int, default=64)
    a = ap.parse_args()
    groups = collections.defaultdict(list)
    for p in sorted(glob.glob(os.path.join(a.root, "*", "*", "*.smtx"))):
        method, sparsity = p.split(os.sep)[-3:-1]
        groups[(method, sparsity)].append(tile_shares(p, a.rows, a.cols))
    print(f"{'method':20s} {'sparsity':>8s} {'files':>5s} {'empty':>6s} {'2:4':>6s} "
          f"{'>=1/2':>6s} {'>=3/4':>6s}")
    for (method, sparsity), rs in sorted(groups.items()):
        total = sum(r[0] for r in rs)
        share = [sum(r[0] * r[i] for r in rs) / total for i in range(1, 5)]
        print(f"{method:20s} {sparsity:>8s} {len(rs):5d} " + " ".join(f"{s:6.3f}" for s in share))


if __name__ == "__main__":
    main()
