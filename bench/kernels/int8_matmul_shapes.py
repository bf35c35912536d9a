# One-node QLinearMatMul / QGemm models of the held-out int8 models' product shapes (u8 data of a
# nonzero zero point, s8 per-column weights in [-127, 127]), timed by cleave builds in interleaved
# rounds: the AVX2 products' per-node picture (docs/results/heldout-speed.md, 2026-12-01 hi8mm).
# Usage: /usr/bin/python3 bench/kernels/int8_matmul_shapes.py [--rounds 5] [--runs 300]
#          [--threads 1,2] [--shapes NAME,..] [--dir /tmp/int8_matmul_shapes]
#          [--env ONEDNN_MAX_CPU_ISA=AVX2] LABEL=CLEAVE[,VAR=VALUE..] ...
# Each build runs `CLEAVE run MODEL --input a=A.npy --threads T --fixed-threads --warmup 30
# --repeat RUNS --json`, the builds' order alternating by round; prints per shape, thread count
# and build the medians over rounds of each process's minimum / 10th percentile / median run
# in microseconds, and each build's median ratio to the first build's (paired by round, p10).
import argparse, json, os, statistics, subprocess, sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name: (op, rows, depth, columns): transformer_decoder_int8's layer 0 and mel_frontend_int8's
# mel filterbank, and a small odd one.
SHAPES = {
    'td_inproj': ('QLinearMatMul', 80, 128, 384),
    'td_gemm': ('QGemm', 80, 128, 128),
    'td_linear1': ('QLinearMatMul', 80, 128, 256),
    'td_linear2': ('QLinearMatMul', 80, 256, 128),
    'mel_fbank': ('QLinearMatMul', 196, 201, 64),
    'odd': ('QLinearMatMul', 37, 75, 45),
    # Larger than the held-out models' (a 1x1 convolution's worth of rows): the chunked rows.
    'big': ('QLinearMatMul', 784, 512, 512),
    'deep': ('QLinearMatMul', 196, 2048, 256),
}


def make(name, op, m, k, n, folder):
    rng = np.random.default_rng(7)
    w = np.clip(np.round(rng.normal(0, 40, (k, n))), -127, 127).astype(np.int8)
    f = lambda n_, v, t=TensorProto.FLOAT, dims=(): helper.make_tensor(n_, t, dims, v)
    inits = [f('a_s', [0.02]), helper.make_tensor('a_z', TensorProto.UINT8, [], [118]),
             numpy_helper.from_array(w, 'w'), f('w_s', list(rng.uniform(0.001, 0.01, n)), dims=(n,)),
             helper.make_tensor('w_z', TensorProto.INT8, [n], [0] * n), f('y_s', [0.05]),
             helper.make_tensor('y_z', TensorProto.UINT8, [], [121])]
    if op == 'QGemm':
        inits.append(numpy_helper.from_array(rng.integers(-3000, 3000, n).astype(np.int32), 'bias'))
        node = helper.make_node('QGemm', ['a', 'a_s', 'a_z', 'w', 'w_s', 'w_z', 'bias', 'y_s', 'y_z'], ['y'],
                                domain='com.microsoft')
    else:
        node = helper.make_node('QLinearMatMul', ['a', 'a_s', 'a_z', 'w', 'w_s', 'w_z', 'y_s', 'y_z'], ['y'])
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info('a', TensorProto.UINT8, [m, k])],
                              [helper.make_tensor_value_info('y', TensorProto.UINT8, [m, n])], inits)
    opsets = [helper.make_opsetid('', 13), helper.make_opsetid('com.microsoft', 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    path = os.path.join(folder, f'{name}.onnx')
    onnx.save(model, path)
    data = os.path.join(folder, f'{name}.a.npy')
    np.save(data, rng.integers(0, 256, (m, k)).astype(np.uint8))
    return path, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--runs', type=int, default=300)
    ap.add_argument('--threads', default='1,2')
    ap.add_argument('--shapes', default=','.join(SHAPES))
    ap.add_argument('--dir', default='/tmp/int8_matmul_shapes')
    ap.add_argument('--env', action='append', default=[])
    ap.add_argument('builds', nargs='+')
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    builds = []
    for spec in args.builds:
        label, _, rest = spec.partition('=')
        binary, *pairs = rest.split(',')
        if not label or not os.path.exists(binary):
            sys.exit(f'int8_matmul_shapes.py: {spec}: want LABEL=CLEAVE[,VAR=VALUE..] of an existing binary')
        builds.append((label, binary, dict(p.split('=', 1) for p in pairs)))
    base_env = dict(os.environ, CLEAVE_FIXED_THREADS='1', **dict(e.split('=', 1) for e in args.env))
    for name in args.shapes.split(','):
        if name not in SHAPES:
            sys.exit(f'int8_matmul_shapes.py: no shape {name} (have {",".join(SHAPES)})')
        model, data = make(name, *SHAPES[name], args.dir)
        for t in args.threads.split(','):
            res = {label: [] for label, _, _ in builds}
            for r in range(args.rounds):
                order = builds if r % 2 == 0 else builds[::-1]
                for label, binary, extra in order:
                    out = subprocess.run([binary, 'run', model, '--input', f'a={data}', '--threads', t,
                                          '--fixed-threads', '--warmup', '30', '--repeat', str(args.runs), '--json'],
                                         env=dict(base_env, **extra), capture_output=True, text=True)
                    if out.returncode:
                        sys.exit(f'{label}: {out.stderr.strip()}')
                    runs = sorted(t / 1e3 for t in json.loads(out.stdout)['latency_ms']['runs'])
                    res[label].append((runs[0], runs[len(runs) // 10], runs[len(runs) // 2]))
            first = builds[0][0]
            for label, _, _ in builds:
                mins, p10s, meds = (statistics.median(x[i] * 1e6 for x in res[label]) for i in range(3))
                paired = statistics.median(a[1] / b[1] for a, b in zip(res[label], res[first]))
                print(f'{name} {SHAPES[name]} T{t} {label}: min {mins:.1f} p10 {p10s:.1f} med {meds:.1f} us;'
                      f' p10 / {first} {paired:.3f}', flush=True)


main()
