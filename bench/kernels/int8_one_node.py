# One-node int8 models (a single QLinearConv of u8 data, zero point 0, a share of it above 127 as
# after a ReLU) timed by several cleave builds in interleaved rounds: the AVX2 two-part kernels'
# per-node picture (docs/results/heldout-speed.md, 2026-11-30 19:10 and 22:00 UTC sections).
# Usage: /usr/bin/python3 bench/kernels/int8_one_node.py [--shapes all|NAME,..] [--rounds 3]
#          [--runs 400] [--threads 1,2] [--above 0.05] [--dir /tmp/int8_one_node]
#          [--env ONEDNN_MAX_CPU_ISA=AVX2] [--json FILE] LABEL=CLEAVE[,VAR=VALUE..] ...
# Each LABEL=CLEAVE runs `CLEAVE run MODEL --input x=X.npy --threads T --fixed-threads --warmup 20
# --repeat RUNS --json` with VAR=VALUE set (e.g. a build's own variable); the builds' order
# alternates by round (A B .. then .. B A). Per shape, thread count and build, prints the medians
# over rounds of each process's minimum / 10th percentile / median run, in microseconds.
# `--make-only` writes the models and inputs and prints their paths.
import argparse, json, os, statistics, subprocess, sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name: (channels in, channels out, side, kernel, stride, group) — regnet_x_400mf_int8's and
# efficientnet_b1_int8's shapes that hi8two timed.
SHAPES = {
    '1x1_64_64_16': (64, 64, 16, 1, 1, 1),
    'g16_160_8': (160, 160, 8, 3, 1, 10),
    '1x1_160_160_8': (160, 160, 8, 1, 1, 1),
    '1x1_32_64_64_s2': (32, 64, 64, 1, 2, 1),
    'g16_64_32_s2': (64, 64, 32, 3, 2, 4),
    '1x1_64_160_16': (64, 160, 16, 1, 1, 1),
    '1x1_24_144_28': (24, 144, 28, 1, 1, 1),
    'g16_160_16_s2': (160, 160, 16, 3, 2, 10),
    # Data of 100-400 KiB, around the bytes from which the clamped scan runs on the team.
    '1x1_32_96_112': (32, 96, 112, 1, 1, 1),
    '1x1_64_64_56': (64, 64, 56, 1, 1, 1),
    '1x1_128_128_28': (128, 128, 28, 1, 1, 1),
}

parser = argparse.ArgumentParser()
parser.add_argument('builds', nargs='*')
parser.add_argument('--shapes', default='all')
parser.add_argument('--rounds', type=int, default=3)
parser.add_argument('--runs', type=int, default=400)
parser.add_argument('--threads', default='1,2')
parser.add_argument('--above', type=float, default=0.05)
parser.add_argument('--dir', default='/tmp/int8_one_node')
parser.add_argument('--env', action='append', default=[])
parser.add_argument('--json', default='')
parser.add_argument('--make-only', action='store_true')
parser.add_argument('--nhwc', action='store_true',
                    help='x and y channels-last, Transposes around the node (the layout the '
                    'held-out models run it in)')
args = parser.parse_args()


def make(name, shape):
    cin, cout, side, kernel, stride, group = shape
    rng = np.random.default_rng(7)
    w = rng.integers(-127, 128, size=(cout, cin // group, kernel, kernel), dtype=np.int8)
    bias = rng.integers(-2000, 2000, size=(cout,), dtype=np.int32)
    w_scale = (rng.random(cout) * 0.01 + 0.001).astype(np.float32)
    pad = kernel // 2
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), 'x_scale'),
        numpy_helper.from_array(np.array(0, np.uint8), 'x_zero'),
        numpy_helper.from_array(w, 'w'),
        numpy_helper.from_array(w_scale, 'w_scale'),
        numpy_helper.from_array(np.zeros(cout, np.int8), 'w_zero'),
        numpy_helper.from_array(np.array(0.05, np.float32), 'y_scale'),
        numpy_helper.from_array(np.array(0, np.uint8), 'y_zero'),
        numpy_helper.from_array(bias, 'bias'),
    ]
    node = helper.make_node(
        'QLinearConv',
        ['x', 'x_scale', 'x_zero', 'w', 'w_scale', 'w_zero', 'y_scale', 'y_zero', 'bias'], ['y'],
        kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4, group=group)
    out_side = (side + 2 * pad - kernel) // stride + 1
    x_shape, y_shape, nodes = [1, cin, side, side], [1, cout, out_side, out_side], [node]
    if args.nhwc:
        node.input[0], node.output[0] = 'x_nchw', 'y_nchw'
        x_shape, y_shape = [1, side, side, cin], [1, out_side, out_side, cout]
        nodes = [helper.make_node('Transpose', ['x'], ['x_nchw'], perm=[0, 3, 1, 2]), node,
                 helper.make_node('Transpose', ['y_nchw'], ['y'], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info('x', TensorProto.UINT8, x_shape)],
        [helper.make_tensor_value_info('y', TensorProto.UINT8, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    os.makedirs(args.dir, exist_ok=True)
    path = f'{args.dir}/{name}.onnx'
    onnx.save(model, path)
    # A ReLU's output: half zeros, the rest below 128 but for a share `above` up to 255.
    x = rng.integers(0, 128, size=(1, cin, side, side)).astype(np.uint8)
    x[rng.random(x.shape) < 0.5] = 0
    high = rng.random(x.shape) < args.above
    x[high] = rng.integers(128, 256, size=int(high.sum())).astype(np.uint8)
    if args.nhwc:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    np.save(f'{args.dir}/{name}.x.npy', x)
    return path, f"{args.dir}/{name}.x.npy", 2 * cin * cout // group * kernel * kernel * out_side**2


names = list(SHAPES) if args.shapes == 'all' else args.shapes.split(',')
unknown = [n for n in names if n not in SHAPES]
if unknown:
    sys.exit(f"int8_one_node.py: no shape {', '.join(unknown)} (known: {', '.join(SHAPES)})")
if not args.make_only and not args.builds:
    sys.exit('int8_one_node.py: give at least one LABEL=CLEAVE[,VAR=VALUE..] to time')
models = {n: make(n, SHAPES[n]) for n in names}
if args.make_only:
    for n, (path, x, ops) in models.items():
        print(n, path, x, f'{ops / 1e6:.1f} M ops (a multiply-add 2)')
    sys.exit(0)

builds = []
for given in args.builds:
    label, _, rest = given.partition('=')
    binary, *variables = rest.split(',')
    if not label or not os.path.isfile(binary) or any('=' not in v for v in variables):
        sys.exit(f'int8_one_node.py: {given}: expected LABEL=CLEAVE_BINARY[,VAR=VALUE..]')
    builds.append((label, binary, dict(v.split('=', 1) for v in variables)))
base_env = dict(os.environ, **dict(v.split('=', 1) for v in args.env))


def time_once(binary, env, model, x, threads):
    command = [binary, 'run', model, '--input', f'x={x}', '--threads', str(threads),
               '--fixed-threads', '--warmup', '20', '--repeat', str(args.runs), '--json']
    out = subprocess.run(command, env=dict(base_env, **env), capture_output=True, text=True,
                         check=True).stdout
    runs = sorted(1e3 * t for t in json.loads(out)['latency_ms']['runs'])
    return runs[0], runs[len(runs) // 10], runs[len(runs) // 2]


rows = []
print(f'shape | M ops | threads | ' + ' | '.join(b[0] + ' min/p10/med us' for b in builds))
for name, (model, x, ops) in models.items():
    for threads in (int(t) for t in args.threads.split(',')):
        got = {b[0]: [] for b in builds}
        for r in range(args.rounds):
            for label, binary, env in (builds if r % 2 == 0 else builds[::-1]):
                got[label].append(time_once(binary, env, model, x, threads))
        medians = {l: [statistics.median(v[i] for v in got[l]) for i in range(3)] for l in got}
        rows.append({'shape': name, 'mops': ops / 1e6, 'threads': threads, 'us': medians})
        print(f'{name} | {ops / 1e6:.1f} | {threads} | ' + ' | '.join(
            '{:.1f} / {:.1f} / {:.1f}'.format(*medians[b[0]]) for b in builds), flush=True)
if args.json:
    json.dump(rows, open(args.json, 'w'), indent=1)
