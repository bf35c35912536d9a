# Per-class node times of cleave and ONNX Runtime on one held-out model, over alternating rounds.
# Usage: /usr/bin/python3 bench/ort/node_classes.py MODEL THREADS ROUNDS [CLEAVE]
# Each round runs profile_nodes.mjs (ORT's per-node medians over 120 runs) and `cleave profile
# --max-threads THREADS --repeat 60 --no-cache` (each node's in-context median, divided back by
# the profile's calibration so that both sides are kernel times without the gaps), in
# alternating order, sums the nodes by class (densenet169's and efficientnet_v2_s's block roles
# from the node names; ORT's fused activations go with their convolution) and prints a markdown
# table of the per-class medians over the rounds, largest cleave excess first. Per-node medians
# stand a loaded host better than whole runs, but on 2 threads they still move with the load.
import json, re, subprocess, sys, statistics, os
here = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) not in (4, 5) or sys.argv[2] not in ('1', '2') or not sys.argv[3].isdigit():
    sys.exit('usage: node_classes.py MODEL THREADS(1|2) ROUNDS [CLEAVE]')
if not os.path.exists(os.path.expanduser(f'~/.cache/cleave/heldout/{sys.argv[1]}.onnx')):
    sys.exit(f'node_classes.py: no held-out model {sys.argv[1]} (~/.cache/cleave/heldout/{sys.argv[1]}.onnx)')
model, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cleave = sys.argv[4] if len(sys.argv) > 4 else os.path.join(here, '../../build/cleave')
H = os.path.expanduser('~/.cache/cleave/heldout')
cache = os.environ.get('CLEAVE_CACHE_DIR') or os.path.join('/tmp', f'node-classes-{os.getpid()}')
onnx = f'{H}/{model}.onnx'
# The manifest names the input (an int8 model reads its float model's file).
entry = json.load(open(f'{H}/manifest.json'))['models'].get(model) or sys.exit(f'{model}: not in {H}/manifest.json')
npy, input_name = f"{H}/{entry['input_file']}", entry['input_name']
if len(entry.get('inputs', [])) > 1:
    sys.exit(f"{model}: {len(entry['inputs'])} inputs; this script feeds one")

def cls(name, op):
    if op.startswith('Reorder'): return 'reorder'
    m = re.search(r'denseblock(\d)/denselayer\d+/(\w+)', name)
    if m:
        role = {'norm1': 'bn1', 'relu1': 'bn1', 'conv1': 'conv1x1', 'norm2': 'conv1x1', 'relu2': 'conv1x1',
                'conv2': 'conv3x3', 'Concat': 'concat'}[m.group(2)]
        return f'db{m.group(1)} {role}'
    if re.search(r'denseblock\d/Concat', name): return 'concat'
    m = re.search(r'transition\d/(\w+)', name)
    if m: return 'trans ' + {'norm': 'bn', 'relu': 'bn', 'conv': 'conv', 'pool': 'pool'}[m.group(1)]
    m = re.search(r'features\.(\d)/features\.\d\.\d+/block/block\.(\d)/(\w+)', name)
    if m:
        st, b, sub = int(m.group(1)), int(m.group(2)), m.group(3)
        if st <= 3: return ['fused 3x3 conv', 'fused 1x1 proj'][b]
        if b == 2:
            if sub == 'avgpool': return 'SE pool'
            if sub == 'Mul': return 'SE Mul'
            return 'SE fc+act'
        return ['MB expand 1x1', 'MB dw 3x3', '', 'MB proj 1x1'][b]
    if re.search(r'features\.\d/features\.\d\.\d+/Add', name): return 'residual Add'
    if 'features.0' in name or 'conv0' in name or 'relu0' in name: return 'stem'
    if 'features.7' in name: return 'head conv'
    return 'other ' + op

tot = {}  # class -> runtime -> [per-round sums]
runs = {'ort': [], 'cleave': []}
for r in range(rounds):
    order = ['ort', 'cleave'] if r % 2 == 0 else ['cleave', 'ort']
    for rt in order:
        sums = {}
        if rt == 'ort':
            out = subprocess.run(['node', 'profile_nodes.mjs', onnx, npy, input_name, str(threads), '120'],
                                 cwd=here, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                d = json.loads(line)
                if 'run_us' in d: runs['ort'].append(d['run_us'] / 1e3); continue
                c = cls(d['node'], d['op']); sums[c] = sums.get(c, 0) + d['us']
        else:
            env = dict(os.environ, CLEAVE_CACHE_DIR=cache)  # One layout choice for every round.
            out = subprocess.run([cleave, 'profile', onnx, '--max-threads', str(threads), '--repeat', '60', '--no-cache', '--json'],
                                 env=env, capture_output=True, text=True, check=True).stdout
            d = json.loads(out); k = threads - 1; cal = d['calibration'][k]
            runs['cleave'].append(d['run_seconds'][k] * 1e3)
            for n in d['nodes']:
                c = cls(n['node'], n['op']); sums[c] = sums.get(c, 0) + n['seconds'][k] / cal * 1e6
        for c, v in sums.items(): tot.setdefault(c, {}).setdefault(rt, []).append(v)
med = lambda xs: statistics.median(xs) if xs else 0
print(f'{model} {threads}T, {rounds} rounds; whole run ms: ort {[round(x,2) for x in runs["ort"]]} cleave {[round(x,2) for x in runs["cleave"]]}')
print('| class | cleave us | ORT us | cleave - ORT | cleave rounds | ORT rounds |')
print('|---|---:|---:|---:|---|---|')
rows = sorted(tot.items(), key=lambda kv: -(med(kv[1].get('cleave', [])) - med(kv[1].get('ort', []))))
sc = so = 0
for c, v in rows:
    a, b = med(v.get('cleave', [])), med(v.get('ort', []))
    sc += a; so += b
    print(f'| {c} | {a:.0f} | {b:.0f} | {a-b:+.0f} | {", ".join("%.0f" % x for x in v.get("cleave", []))} | {", ".join("%.0f" % x for x in v.get("ort", []))} |')
print(f'| sum | {sc:.0f} | {so:.0f} | {sc-so:+.0f} | | |')
for rt in ('cleave','ort'):
    print(rt, 'node sums per round', [round(sum(v[rt][i] for v in tot.values() if rt in v and len(v[rt])>i)/1e3,2) for i in range(rounds)])
