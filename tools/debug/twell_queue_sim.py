#!/usr/bin/env python3
"""A model of the twell kernel 2 queue (balance=queue): how long its workers stay busy.

Tokens are drawn as the FFN generator draws them (ir/gen/activations.cpp: log-normal counts with
sigma 1.2 around the mean, the first token at 10x the mean, hidden units uniform). Each token is
a number of 64-entry batches, an overflowing tile counting T / 64. W workers take, in order,
a pushed part first, else the next token. A token of more than 2 batches is cut into parts of 2,
or of 1 when it is among the last `window` tokens and --late 1 is given. The parts are pushed to
the queue, and the taker runs the first one. An item costs setup + batches x t_batch (+ the fp32
row add for a part). The model reports the span, the mean idle time at the end per
multiprocessor (8 workers each), and the workers' busy share.

With t_batch fitted to the measured 265 us of kernel 2 (2048x5632, M = 4096, teams 4, H200), it
gives a busy share of 0.77, close to Nsight Compute's 76 % SM-active. That makes the tail of long
tokens' parts the likely cause of the idle SMs. The timing probe
(tools/debug/twell_timeline_probe.cu) checks it on the GPU.

  python3 tools/debug/twell_queue_sim.py                  # the four LLM cases, late 2 and 1
  python3 tools/debug/twell_queue_sim.py --m 4096 --n 5632 --workers 1056 --t-batch 34
"""
import argparse
import heapq
import math
import random


def draw_batches(m, n, mean, seed, tile=128, cap=32, sigma=1.2):
    """Batches per token, as kernel 2 counts them (packed entries / 64 + T / 64 per overflow)."""
    rnd = random.Random(seed)
    mu = math.log(mean) - sigma * sigma / 2
    tiles = (n + tile - 1) // tile
    out = []
    for r in range(m):
        d = 10 * mean if r == 0 else math.exp(rnd.gauss(mu, sigma))
        count = int(min(n, max(0, round(d))))
        per_tile = [0] * tiles
        for c in rnd.sample(range(n), count):
            per_tile[c // tile] += 1
        packed = sum(v for v in per_tile if v <= cap)
        over = sum(1 for v in per_tile if v > cap)
        out.append((packed + 63) // 64 + over * (tile // 64))
    return out


def simulate(batches, workers, late, t_batch, setup, add_row, window):
    """Returns (span, mean idle per SM at the end, busy share) for one launch."""
    m = len(batches)
    free = [(0.0, w) for w in range(workers)]
    heapq.heapify(free)
    pushed = []
    next_token = 0
    end = [0.0] * workers
    busy = [0.0] * workers
    while free:
        t, w = heapq.heappop(free)
        if pushed:
            d = pushed.pop(0)
        elif next_token < m:
            b = batches[next_token]
            per = 1 if late == 1 and next_token >= m - window else 2
            parts = max(1, -(-b // per))
            next_token += 1
            if parts > 1:
                sizes = [len(range(i, b, parts)) for i in range(parts)]
                pushed.extend(setup + s * t_batch + add_row for s in sizes[1:])
                d = setup + sizes[0] * t_batch + add_row
            else:
                d = setup + b * t_batch
        else:
            end[w] = t
            continue
        busy[w] += d
        heapq.heappush(free, (t + d, w))
    span = max(end)
    sms = [max(end[i:i + 8]) for i in range(0, workers, 8)]
    idle = sum(span - x for x in sms) / len(sms)
    return span, idle, sum(busy) / (workers * span)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, nargs="*", default=[4096, 16384])
    ap.add_argument("--n", type=int, default=None, help="hidden width (default: both LLM shapes)")
    ap.add_argument("--workers", type=int, default=None, help="queue workers (blocks x teams)")
    ap.add_argument("--t-batch", type=float, default=None, help="us per 64-entry batch")
    ap.add_argument("--mean", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    # (N, workers, us per batch): K = 2048 with 4 teams (264 blocks x 4), K = 4096 with 2. The
    # batch times are fitted to kernel 2's measured 265 and 587 us at M = 4096 (H200).
    cases = [(5632, 1056, 34.0), (14336, 528, 42.0)]
    if a.n is not None:
        cases = [(a.n, a.workers or 1056, a.t_batch or 34.0)]
    for n, workers, t_batch in cases:
        for m in a.m:
            batches = draw_batches(m, n, a.mean, a.seed)
            for late in (2, 1):
                span, idle, share = simulate(batches, workers, late, t_batch, 0.3 * t_batch,
                                             0.3 * t_batch, 2 * workers)
                print(f"N={n} M={m} workers={workers} late={late}: span {span:.0f} us, "
                      f"idle at the end {idle:.0f} us per SM, busy share {share:.2f}")


if __name__ == "__main__":
    main()
