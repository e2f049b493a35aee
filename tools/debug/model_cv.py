# Cross-validated quality of the cost model fit on calibrate samples plus benchmark timings, split
# by matrix into 4 folds: each fold's timing matrices are held out once (the calibrate samples stay
# in training, with their own fixed split), and the held-out small cases' pick within 10 % of
# their best measured schedule is counted (`sparsegen calibrate`'s own quality report per fold).
# Usage (repository root, build/ built):
#   python3 tools/debug/model_cv.py OUT.json SAMPLES.json TIMINGS.json [--no-regime]
# --no-regime fits the timing samples under their plain family keys (one formula per family over
# both regimes), for comparison.
import json
import math
import os
import subprocess
import sys
import tempfile

out_path, samples_path, timings_path = sys.argv[1:4]
regime = '--no-regime' not in sys.argv
exe = os.path.join('build', 'tools', 'sparsegen')
env = dict(os.environ, SPARSEGEN_DATA=os.environ.get('SPARSEGEN_DATA', os.path.join('..', 'shared', 'data')))
tmp = tempfile.mkdtemp(prefix='sparsegen_cv_')


def fnv(s):
    h = 1469598103934665603
    for ch in s.encode():
        h = ((h ^ ch) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


# Timings -> samples once (features computed by this build), merged behind the calibrate samples.
merged = os.path.join(tmp, 'merged.json')
subprocess.run([exe, 'calibrate', '--from-samples', samples_path, '--from-timings', timings_path, '--out',
                os.path.join(tmp, 'm.json'), '--samples', merged], check=True, env=env, capture_output=True)
doc = json.load(open(merged))
timed = {r[0] for r in json.load(open(timings_path))['rows']}
folds = []
for k in range(4):
    # calibrate holds out names whose FNV-1a hash is 0 mod 4: give each timing matrix a suffix
    # that puts it there exactly when its own hash is k mod 4.
    def rename(m):
        test = fnv(m) % 4 == k
        return next(f'{m}#{i}' for i in range(1000) if (fnv(f'{m}#{i}') % 4 == 0) == test)
    names = {m: rename(m) for m in timed}
    samples = []
    for s in doc['samples']:
        if s['matrix'] in names:
            fam = s['family'] if regime else s['family'].removesuffix('@small')
            s = dict(s, matrix=names[s['matrix']], family=fam)
        samples.append(s)
    fold_doc = dict(doc, samples=samples)
    p = os.path.join(tmp, f'fold{k}.json')
    json.dump(fold_doc, open(p, 'w'))
    q_path = os.path.join(tmp, f'q{k}.json')
    subprocess.run([exe, 'calibrate', '--from-samples', p, '--out', os.path.join(tmp, f'm{k}.json'), '--samples',
                    q_path], check=True, env=env, capture_output=True)
    cases = [c for c in json.load(open(q_path))['quality']['cases']
             if c['samples'] >= 2 and c['matrix'].split('#')[0] in timed and '#' in c['matrix']]
    within = sum(c['pick_ratio'] <= 1.1 for c in cases)
    folds.append({'fold': k, 'cases': len(cases), 'within_10pct': within,
                  'log_pick_ratio_sum': sum(math.log(c['pick_ratio']) for c in cases)})
    print(f'fold {k}: {within}/{len(cases)} within 10 %', flush=True)
n = sum(f['cases'] for f in folds)
w = sum(f['within_10pct'] for f in folds)
summary = {'regime': regime, 'cases': n, 'within_10pct': w, 'within_10pct_share': w / max(1, n),
           'gm_pick_over_best': math.exp(sum(f['log_pick_ratio_sum'] for f in folds) / max(1, n))}
print(json.dumps(summary))
json.dump({'samples': samples_path, 'timings': timings_path, 'summary': summary, 'folds': folds}, open(out_path, 'w'),
          indent=1)
