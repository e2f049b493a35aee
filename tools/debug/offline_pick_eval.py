# How good the cost model's offline pick is, judged by GPU measurements already taken: for every
# case of a `sparsegen-bench` JSON (with per-candidate details: ours.details.candidates and
# screen_ms), the top generated schedule of `sparsegen schedules --ranked` (no GPU needed) is
# looked up among the measured candidates and compared with the best measured one.
# Usage: python3 tools/debug/offline_pick_eval.py OUT.json BENCH.json [BENCH.json ...]
# (run from the repository root with build/ built; matrices under ../shared/data or $SPARSEGEN_DATA)
import concurrent.futures as cf
import json
import math
import os
import subprocess
import sys
from collections import Counter

out_path, inputs = sys.argv[1], sys.argv[2:]
data = os.environ.get('SPARSEGEN_DATA', os.path.join('..', 'shared', 'data'))
exe = os.path.join('build', 'tools', 'sparsegen')
cases = [c for f in inputs for c in json.load(open(f))['cases']]
dtype_of = lambda c: c.get('dtype', 'fp32')


def one(c):
    det = c['ours'].get('details') or {}
    scr = det.get('screen_ms', {})
    meas = {cd['schedule']: scr[str(i)] for i, cd in enumerate(det.get('candidates', [])) if str(i) in scr}
    if not meas:
        return None
    r = subprocess.run([exe, 'schedules', os.path.join(data, c['matrix']), '-n', str(c['n']), '--dtype',
                        dtype_of(c), '--ranked'], capture_output=True, text=True)
    ranked = [l.split()[-1] for l in r.stdout.splitlines() if l.strip()[:1].isdigit()]
    gen = [s for s in ranked if not s.startswith(('cusparse', 'dense'))]
    if not gen:
        return None
    best = min(meas, key=meas.get)
    return {'matrix': c['matrix'], 'n': c['n'], 'pick': gen[0], 'pick_ms': meas.get(gen[0]),
            'best': best, 'best_ms': meas[best], 'measured': len(meas)}


with cf.ThreadPoolExecutor(4) as ex:
    res = [r for r in ex.map(one, cases) if r]
known = [r for r in res if r['pick_ms'] is not None]
within = sum(r['pick_ms'] <= 1.1 * r['best_ms'] for r in known)
summary = {
    'cases': len(res), 'pick_measured': len(known), 'within_10pct': within,
    'within_10pct_share': within / max(1, len(known)),
    'gm_best_over_pick': math.exp(sum(math.log(r['best_ms'] / r['pick_ms']) for r in known) / max(1, len(known))),
    'best_family': Counter(r['best'].split(';')[0] for r in res),
    'pick_family': Counter(r['pick'].split(';')[0] for r in res),
}
print(json.dumps(summary, indent=1))
json.dump({'inputs': inputs, 'summary': summary, 'cases': res}, open(out_path, 'w'))
