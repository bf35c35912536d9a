# Per-run CPU time (user + system) of one held-out model at 1 thread, ORT and cleave builds.
# Usage: /usr/bin/python3 bench/ort/cpu_per_run.py MODEL ROUNDS RUNS VARIANT...
#   VARIANT: ort, or cleave:BINARY[:--option=value...] (e.g. cleave:build/cleave:--layouts=blocked)
# Each variant's process runs 3 warm-up runs and then RUNS timed runs, and again 4 timed runs;
# the difference of the two processes' CPU times over RUNS - 4 is the CPU time of one run, with
# loading, packing and start-up cancelled. On one thread that is the run's time less what
# other processes took from it: a host at load 8 moves it by a few % where wall times move by
# 2x. It still counts what they take from shared caches. Variants alternate their order by
# round; prints medians and paired ratios against the first variant.
import json, os, resource, subprocess, sys, statistics
here = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) < 5 or not sys.argv[2].isdigit() or not sys.argv[3].isdigit() or int(sys.argv[3]) <= 4:
    sys.exit('usage: cpu_per_run.py MODEL ROUNDS RUNS(>4) VARIANT... (ort, cleave:BINARY[:--opt=value])')
# The held-out corpus: $CLEAVE_HELDOUT_DIR (as export_heldout.py writes it) or its default.
H = os.environ.get('CLEAVE_HELDOUT_DIR') or os.path.expanduser('~/.cache/cleave/heldout')
if not os.path.exists(f'{H}/{sys.argv[1]}.onnx'):
    sys.exit(f'cpu_per_run.py: no held-out model {sys.argv[1]} ({H}/{sys.argv[1]}.onnx)')
model, rounds = sys.argv[1], int(sys.argv[2])
N2 = int(sys.argv[3])
variants = sys.argv[4:]  # e.g. ort  cleave:/path/cleave:--layouts=blocked
onnx = f'{H}/{model}.onnx'
# The manifest names the input (an int8 model reads its float model's file).
entry = json.load(open(f'{H}/manifest.json'))['models'].get(model) or sys.exit(f'{model}: not in {H}/manifest.json')
npy, input_name = f"{H}/{entry['input_file']}", entry['input_name']
if len(entry.get('inputs', [])) > 1:
    sys.exit(f"{model}: {len(entry['inputs'])} inputs; this script feeds one")
N1 = 4
cache = os.environ.get('CLEAVE_CACHE_DIR') or os.path.join('/tmp', f'cpu-per-run-{os.getpid()}')
def cmd(v, n):
    if v == 'ort':
        return ['node', os.path.join(here, 'ort_run.mjs'), onnx, npy, input_name, '1', '3', str(n)]
    _, binary, *extra = v.split(':')
    options = [part for e in extra for part in e.split('=', 1)]
    return [binary, 'run', onnx, '--input', f'{input_name}={npy}', '--threads', '1', '--warmup', '3',
            '--repeat', str(n), '--json'] + options
def cpu(c):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(c, check=True, capture_output=True, env=dict(os.environ, CLEAVE_CACHE_DIR=cache))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
res = {v: [] for v in variants}
for r in range(rounds):
    order = variants if r % 2 == 0 else variants[::-1]
    for v in order:
        res[v].append((cpu(cmd(v, N2)) - cpu(cmd(v, N1))) / (N2 - N1) * 1e3)
for v in variants:
    print(f'{v}: median {statistics.median(res[v]):.2f} ms CPU per run; rounds {[round(x, 2) for x in res[v]]}')
base = res[variants[0]]
for v in variants[1:]:
    print(f'{v} / {variants[0]} paired median {statistics.median([a / b for a, b in zip(res[v], base)]):.3f}')
