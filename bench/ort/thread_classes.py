# Which node classes speed up from 1 to 2 threads, in cleave and in ONNX Runtime, on one model.
# Usage: /usr/bin/python3 bench/ort/thread_classes.py MODEL ROUNDS [CLEAVE] [--avx2-mask LIB] [--fine]
# Each round runs, in alternating order, `cleave profile --max-threads 2 --repeat 60 --no-cache`
# (each node's in-context median at 1 and 2 threads, divided back by the profile's calibration as
# node_classes.py does) and profile_nodes.mjs at 1 and at 2 threads (ORT's per-node medians over
# 120 runs), and sums the nodes by class: the op, and for a convolution whether it is depthwise,
# 1x1 or larger (the weights of cleave's optimized graph; ORT's from its profiler's input shapes,
# or, for its NHWC QLinearConv, from the graph's node of the same name). Prints per class the
# medians over the rounds at 1 and 2 threads and each runtime's 2T/1T, largest cleave 2-thread
# excess over ORT first. --avx2-mask LIB: both runtimes on their AVX2 paths (LIB built from
# bench/device/avx2_cpuid.c preloaded, ONEDNN_MAX_CPU_ISA=AVX2). --fine: 1x1 convolutions split
# into "reduce" (fewer output than input channels: squeezenet's squeeze) and "widen" (its expand,
# and a classifier), and kxk ones of under 8 input channels (an image's) apart. 2-thread figures
# need a quiet host: on a loaded one both runtimes' 2-thread nodes run slower than their 1-thread
# ones.
import json, os, re, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
mask = None
fine = '--fine' in args
if fine: args.remove('--fine')
if '--avx2-mask' in args:
    i = args.index('--avx2-mask')
    if i + 1 >= len(args) or not os.path.exists(args[i + 1]):
        sys.exit('thread_classes.py: --avx2-mask needs the library built from bench/device/avx2_cpuid.c')
    mask = os.path.abspath(args[i + 1])
    del args[i:i + 2]
if len(args) not in (2, 3) or not args[1].isdigit() or int(args[1]) < 1:
    sys.exit('usage: thread_classes.py MODEL ROUNDS [CLEAVE] [--avx2-mask LIB] [--fine]')
model, rounds = args[0], int(args[1])
cleave = args[2] if len(args) > 2 else os.path.join(here, '../../build/cleave')
# The held-out corpus: $CLEAVE_HELDOUT_DIR (as export_heldout.py writes it) or its default.
H = os.environ.get('CLEAVE_HELDOUT_DIR') or os.path.expanduser('~/.cache/cleave/heldout')
onnx_file = f'{H}/{model}.onnx'
if not os.path.exists(onnx_file):
    sys.exit(f'thread_classes.py: no held-out model {model} ({onnx_file})')
entry = json.load(open(f'{H}/manifest.json'))['models'].get(model) or sys.exit(f'{model}: not in {H}/manifest.json')
npy, input_name = f"{H}/{entry['input_file']}", entry['input_name']
if len(entry.get('inputs', [])) > 1:
    sys.exit(f"{model}: {len(entry['inputs'])} inputs; this script feeds one")
cache = os.environ.get('CLEAVE_CACHE_DIR') or os.path.join('/tmp', f'thread-classes-{os.getpid()}')
env = dict(os.environ, CLEAVE_CACHE_DIR=cache)
if mask:
    env['LD_PRELOAD'] = ':'.join(filter(None, [mask, os.environ.get('LD_PRELOAD')]))
    env.setdefault('ONEDNN_MAX_CPU_ISA', 'AVX2')


def conv_kind(weights):
    if not weights or len(weights) < 3: return ''
    if weights[1] == 1: return ' dw'
    if all(k == 1 for k in weights[2:]):
        return (' 1x1 reduce' if weights[0] < weights[1] else ' 1x1 widen') if fine else ' 1x1'
    return ' kxk image' if fine and weights[1] < 8 else ' kxk'


# cleave's node names are those of its optimized graph: the convolutions' weight shapes from it.
import onnx  # noqa: E402  (the system Python's package; only needed here)
with tempfile.TemporaryDirectory() as tmp:
    optimized = os.path.join(tmp, 'optimized.onnx')
    subprocess.run([cleave, 'optimize', onnx_file, optimized], env=env, capture_output=True, check=True)
    graph = onnx.load(optimized).graph
weights = {i.name: list(i.dims) for i in graph.initializer}
cleave_kind = {}
for n in graph.node:
    at = {'QLinearConv': 3, 'ConvInteger': 1, 'Conv': 1}.get(n.op_type)
    if at is not None and at < len(n.input): cleave_kind[n.name] = conv_kind(weights.get(n.input[at]))

tot = {}  # class -> (runtime, threads) -> [per-round sums, us]
for r in range(rounds):
    for rt in (['ort', 'cleave'] if r % 2 == 0 else ['cleave', 'ort']):
        sums = {}
        if rt == 'ort':
            for t in (1, 2):
                out = subprocess.run(['node', 'profile_nodes.mjs', onnx_file, npy, input_name, str(t), '120'],
                                     cwd=here, env=env, capture_output=True, text=True, check=True).stdout
                for line in out.splitlines():
                    d = json.loads(line)
                    if 'run_us' in d: continue
                    # ORT's QLinearConv in NHWC does not show its packed weights' shape: the
                    # graph's node of that name (ORT appends "_token_N") says.
                    kind = cleave_kind.get(re.sub(r'_token_\d+$', '', d['node']), '') if 'Conv' in d['op'] else ''
                    shapes = d['shapes']
                    at = {'QLinearConv': 3, 'ConvInteger': 1, 'Conv': 1}.get(d['op'], len(shapes))
                    if at < len(shapes) and len(shapes[at]) >= 3: kind = conv_kind(shapes[at])
                    key = (d['op'] + kind, t)
                    sums[key] = sums.get(key, 0) + d['us']
        else:
            out = subprocess.run([cleave, 'profile', onnx_file, '--max-threads', '2', '--repeat', '60', '--no-cache', '--json'],
                                 env=env, capture_output=True, text=True, check=True).stdout
            d = json.loads(out)
            for n in d['nodes']:
                for k, t in ((0, 1), (1, 2)):
                    key = (n['op'] + cleave_kind.get(n['node'], ''), t)
                    sums[key] = sums.get(key, 0) + n['seconds'][k] / d['calibration'][k] * 1e6
        for (c, t), v in sums.items(): tot.setdefault(c, {}).setdefault((rt, t), []).append(v)

med = lambda xs: statistics.median(xs) if xs else 0
ratio = lambda a, b: f'{a / b:.2f}' if b > 0 else '—'
print(f'{model}, {rounds} round(s){", both runtimes on AVX2" if mask else ""}; node sums in us, medians over rounds')
print('| class | cleave 1T | cleave 2T | cleave 2T/1T | ORT 1T | ORT 2T | ORT 2T/1T | cleave − ORT at 2T |')
print('|---|---:|---:|---:|---:|---:|---:|---:|')
rows = []
for c, v in tot.items():
    m = {k: med(x) for k, x in v.items()}
    rows.append((c, m.get(('cleave', 1), 0), m.get(('cleave', 2), 0), m.get(('ort', 1), 0), m.get(('ort', 2), 0)))
rows.sort(key=lambda row: -(row[2] - row[4]))
for c, c1, c2, o1, o2 in rows:
    print(f'| {c} | {c1:.0f} | {c2:.0f} | {ratio(c2, c1)} | {o1:.0f} | {o2:.0f} | {ratio(o2, o1)} | {c2 - o2:+.0f} |')
s = [sum(row[i] for row in rows) for i in range(1, 5)]
print(f'| sum | {s[0]:.0f} | {s[1]:.0f} | {ratio(s[1], s[0])} | {s[2]:.0f} | {s[3]:.0f} | {ratio(s[3], s[2])} | {s[1] - s[3]:+.0f} |')
