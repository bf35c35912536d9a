# Latency of the held-out int8 models under several builds and CLEAVE_INT8_AMX settings, paired.
# Usage: /usr/bin/python3 bench/kernels/int8_amx_policies.py [--threads 1,2] [--rounds 3]
#          [--repeat 30] [--models a,b] [--json FILE] VARIANT...
#   VARIANT: LABEL=BINARY:SETTING, e.g. new=build/cleave:auto old=/work/main/build/cleave:auto
#            always=build/cleave:always never=build/cleave:never (the first is the reference)
# Per model (the *_int8 entries of ~/.cache/cleave/heldout/manifest.json, on the inputs it lists)
# and thread count, each round runs `cleave run M --threads T --fixed-threads --warmup 5
# --repeat R --json` once per variant in order and once more in the reverse order; a round's
# ratio of a variant is the sum of its two medians over the sum of the reference's two. Every
# variant runs each model once before the rounds (layout caches). Prints a markdown table: the
# reference's median ms and, per other variant, its per-round ratios to the reference.
import argparse, json, os, statistics, subprocess, sys

parser = argparse.ArgumentParser()
parser.add_argument('--threads', default='1,2')
parser.add_argument('--rounds', type=int, default=3)
parser.add_argument('--repeat', type=int, default=30)
parser.add_argument('--models', default='')
parser.add_argument('--json', default='')
parser.add_argument('variants', nargs='+')
args = parser.parse_args()
heldout = os.path.expanduser('~/.cache/cleave/heldout')
manifest = json.load(open(f'{heldout}/manifest.json'))['models']
models = [m for m in args.models.split(',') if m] or sorted(
    m for m in manifest if m.endswith('_int8') and os.path.exists(f'{heldout}/{m}.onnx'))
variants = []
for v in args.variants:
    label, rest = v.split('=', 1)
    binary, setting = rest.rsplit(':', 1)
    variants.append((label, binary, setting))


def median_ms(model, variant, threads, warmup, repeat):
    _, binary, setting = variant
    command = [binary, 'run', f'{heldout}/{model}.onnx', '--threads', str(threads),
               '--fixed-threads', '--warmup', str(warmup), '--repeat', str(repeat), '--json']
    for given in manifest[model]['inputs']:
        command += ['--input', f"{given['name']}={heldout}/{given['file']}"]
    out = subprocess.run(command, env=dict(os.environ, CLEAVE_INT8_AMX=setting),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)['latency_ms']['median']


thread_counts = [int(t) for t in args.threads.split(',')]
for model in models:
    for threads in thread_counts:
        for variant in variants:
            median_ms(model, variant, threads, 1, 1)
results = []
for threads in thread_counts:
    for model in models:
        rounds = []
        for _ in range(args.rounds):
            times = {v[0]: 0.0 for v in variants}
            for variant in variants + variants[::-1]:
                times[variant[0]] += median_ms(model, variant, threads, 5, args.repeat)
            rounds.append(times)
        reference = variants[0][0]
        row = dict(model=model, threads=threads,
                   reference_ms=statistics.median(r[reference] / 2 for r in rounds),
                   ratios={v[0]: [r[v[0]] / r[reference] for r in rounds] for v in variants[1:]})
        results.append(row)
        print(f"{model} {threads}T {row['reference_ms']:.2f} ms " + ' '.join(
            f"{k}: {', '.join(f'{x:.3f}' for x in v)}" for k, v in row['ratios'].items()),
              file=sys.stderr)

others = [v[0] for v in variants[1:]]
print(f"| model | threads | {variants[0][0]} ms | " +
      ' | '.join(f'{variants[0][0]} / {o}, per round' for o in others) + ' |')
print('|---|---:|---:|' + '---|' * len(others))
for row in results:
    cells = [', '.join(f'{1 / x:.3f}' for x in row['ratios'][o]) for o in others]
    print(f"| {row['model']} | {row['threads']} | {row['reference_ms']:.2f} | " +
          ' | '.join(cells) + ' |')
if args.json:
    with open(args.json, 'w') as f:
        json.dump(results, f, indent=1)
