#!/usr/bin/python3
# CPU time per run (user + system, the difference of a RUNS-run and a 4-run process over RUNS - 4)
# of cleave builds or wrappers on one held-out model fed all its manifest inputs (cpu_per_run.py
# feeds one), in interleaved rounds; medians and paired ratios to the first.
# usage: cpu_per_run_all_inputs.py MODEL ROUNDS RUNS THREADS CLEAVE...
import json, os, resource, statistics, subprocess, sys, tempfile
H = os.path.expanduser('~/.cache/cleave/heldout')
model, rounds, runs, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
e = json.load(open(f'{H}/manifest.json'))['models'][model]
inputs = sum([['--input', f"{i['name']}={H}/{i['file']}"] for i in e['inputs']], [])
cache = tempfile.mkdtemp()
def cpu(w, n):
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([w, 'run', f'{H}/{model}.onnx', *inputs, '--threads', threads, '--fixed-threads', '--warmup', '3', '--repeat', str(n), '--json'],
                   check=True, capture_output=True, env=dict(os.environ, CLEAVE_CACHE_DIR=cache))
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
ws = sys.argv[5:]
res = {w: [] for w in ws}
for r in range(rounds):
    for w in (ws if r % 2 == 0 else ws[::-1]):
        res[w].append((cpu(w, runs) - cpu(w, 4)) / (runs - 4) * 1e3)
for w in ws:
    print(f'{model} {threads}T {os.path.basename(w)}: median {statistics.median(res[w]):.3f} ms CPU/run; rounds {[round(x, 3) for x in res[w]]}')
for w in ws[1:]:
    print(f'{model} {threads}T {os.path.basename(w)} / {os.path.basename(ws[0])} paired median {statistics.median([a / b for a, b in zip(res[w], res[ws[0]])]):.3f}')
