# Per int8 convolution and product: oneDNN's AMX implementation against its non-AMX one, by shape.
# Usage: /usr/bin/python3 bench/kernels/int8_amx_shapes.py [--cleave build/cleave] [--rounds 2]
#          [--repeat 20] [--threads 1,2] [--models a,b] [--json FILE]
# For every held-out int8 model (the *_int8 entries of ~/.cache/cleave/heldout/manifest.json, on
# the inputs it lists), each
# thread count and round, runs `cleave run M --threads T --fixed-threads` under
# CLEAVE_INT8_AMX=always (oneDNN's first choice: AMX where it has one) and =never (the first
# non-AMX one), in the order always, never, never, always... by round, with ONEDNN_VERBOSE=1,
# and reads each primitive execution's implementation, problem and time from oneDNN's lines.
# Prints one row per problem (model, problem, threads): the median time of each setting over
# every execution of that problem in every round, its shape as M x K x N (M = output pixels x
# batch, K = input channels per group x taps, N = output channels per group) and the ratio
# AMX / non-AMX; --json writes the rows.
import argparse, json, os, re, statistics, subprocess, sys
from collections import defaultdict

parser = argparse.ArgumentParser()
parser.add_argument('--cleave', default='build/cleave')
parser.add_argument('--rounds', type=int, default=2)
parser.add_argument('--repeat', type=int, default=20)
parser.add_argument('--threads', default='1,2')
parser.add_argument('--models', default='')
parser.add_argument('--json', default='')
args = parser.parse_args()
heldout = os.path.expanduser('~/.cache/cleave/heldout')
manifest = json.load(open(f'{heldout}/manifest.json'))['models']
models = [m for m in args.models.split(',') if m] or sorted(
    m for m in manifest if m.endswith('_int8') and os.path.exists(f'{heldout}/{m}.onnx'))
threads = [int(t) for t in args.threads.split(',')]


def conv_shape(problem):
    """M, K, N, MACs and a compact form of a convolution's problem string."""
    fields = dict(re.findall(r'([a-z]+)(\d+)', problem))
    groups = int(fields.get('g', 1))
    m = int(fields['mb'])
    k = int(fields['ic']) // groups
    for d in 'dhw':
        if f'o{d}' in fields:
            m *= int(fields[f'o{d}'])
            k *= int(fields[f'k{d}'])
    n = int(fields['oc']) // groups
    strides = 'x'.join(fields[f's{d}'] for d in 'dhw' if f's{d}' in fields)
    taps = 'x'.join(fields[f'k{d}'] for d in 'dhw' if f'k{d}' in fields)
    return m, k, n, m * k * n * groups, f'{taps} s{strides} g{groups}'


def product_shape(problem):
    dims = [[int(x) for x in part.split('x')] for part in problem.split(':')[:2]]
    a, b = dims
    m = 1
    for x in a[:-1]:
        m *= x
    return m, a[-1], b[-1], m * a[-1] * b[-1], 'product'


def run(model, setting, thread_count):
    command = [args.cleave, 'run', f'{heldout}/{model}.onnx', '--threads', str(thread_count),
               '--fixed-threads', '--warmup', '3', '--repeat', str(args.repeat)]
    for given in manifest[model]['inputs']:  # Every input, with the shape it fixes.
        command += ['--input', f"{given['name']}={heldout}/{given['file']}"]
    env = dict(os.environ, ONEDNN_VERBOSE='1', CLEAVE_INT8_AMX=setting)
    text = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split(',')
        if len(parts) < 10 or parts[1] != 'exec' or parts[3] not in (
                'convolution', 'matmul', 'inner_product'):
            continue
        if 'u8' not in parts[6] and 's8' not in parts[6]:
            continue  # Float primitives are not chosen by the rule.
        yield parts[3], parts[4], parts[-2], float(parts[-1]) * 1e3


rows = []
for model in models:
    for thread_count in threads:
        times = defaultdict(lambda: {'always': [], 'never': []})
        names = defaultdict(dict)
        for r in range(args.rounds):
            order = ['always', 'never'] if r % 2 == 0 else ['never', 'always']
            for setting in order:
                for kind, implementation, problem, us in run(model, setting, thread_count):
                    times[(kind, problem)][setting].append(us)
                    names[(kind, problem)][setting] = implementation
        for (kind, problem), by in times.items():
            if not by['always'] or not by['never']:
                continue
            amx, other = names[(kind, problem)]['always'], names[(kind, problem)]['never']
            if '_amx' not in amx:
                continue  # No AMX implementation for this problem.
            m, k, n, macs, form = (conv_shape(problem) if kind == 'convolution'
                                   else product_shape(problem))
            a, v = statistics.median(by['always']), statistics.median(by['never'])
            rows.append(dict(model=model, threads=thread_count, kind=kind, problem=problem,
                             form=form, m=m, k=k, n=n, macs=macs, amx=amx, other=other,
                             amx_us=a, other_us=v, ratio=a / v, calls=len(by['always'])))
        print(f'{model} {thread_count}T: {sum(1 for r in rows if r["model"] == model and r["threads"] == thread_count)} problems', file=sys.stderr)

print('| model | T | form | M x K x N | M MACs | AMX impl | AMX us | non-AMX us | AMX / non-AMX |')
print('|---|---:|---|---|---:|---|---:|---:|---:|')
for r in sorted(rows, key=lambda r: (r['threads'], r['amx'], r['macs'])):
    print(f"| {r['model']} | {r['threads']} | {r['form']} | {r['m']} x {r['k']} x {r['n']} | "
          f"{r['macs'] / 1e6:.2f} | {r['amx']} | {r['amx_us']:.1f} | {r['other_us']:.1f} | "
          f"{r['ratio']:.2f} |")
if args.json:
    with open(args.json, 'w') as f:
        json.dump(rows, f, indent=1)
