#!/usr/bin/python3
"""Int8 convolution shapes of the held-out models as one-node models (the QLinearConv of u8 data of
zero point 113 between two depthwise 1x1 ones that keep its data and output channels-last, as in
a model), timed under several cleave wrappers (e.g. scripts that set CLEAVE_INT8_F32 and exec a
build) in interleaved rounds: the f32 route's per-shape picture (docs/results/heldout-speed.md,
2026-12-01 hi8f32 section).
usage: [NODE=1 MINLAT=1] [T=threads] int8_f32_shapes.py NAME[,NAME..]|all ROUNDS RUNS WRAPPER...
Default: CPU time per run (user + system of RUNS - 4 runs). MINLAT=1: the minimum latency of a
process's runs; with NODE=1, the target node's ms_per_run from --stats (the implementations
other than the two depthwise ones' jit_uni_int8:avx2). Prints medians and paired ratios to the
first wrapper. Models and inputs go to $INT8_SHAPES_DIR (default /tmp/int8_f32_shapes)."""
import os, resource, statistics, subprocess, sys
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
SHAPES = {  # cin, cout, side, kernel, stride, group, pad
  'img3x3_s2_224': (3, 64, 224, 3, 2, 1, 0),
  'img7x7_s2_224': (3, 64, 224, 7, 2, 1, 3),
  'img3x3_s2_240': (3, 32, 240, 3, 2, 1, 1),
  '1x1_96_24_56': (96, 24, 56, 1, 1, 1, 0),
  '1x1_24_144_56': (24, 144, 56, 1, 1, 1, 0),
  '1x1_240_40_28': (240, 40, 28, 1, 1, 1, 0),
  '1x1_672_112_14': (672, 112, 14, 1, 1, 1, 0),
  '1x1_1152_320_7': (1152, 320, 7, 1, 1, 1, 0),
  '1x1_16_96_112': (16, 96, 112, 1, 1, 1, 0),
  '1x1_40_240_28': (40, 240, 28, 1, 1, 1, 0),
  '1x1_80_480_14': (80, 480, 14, 1, 1, 1, 0),
  '1x1_192_1152_7': (192, 1152, 7, 1, 1, 1, 0),
  '1x1_480_80_14': (480, 80, 14, 1, 1, 1, 0),
  '1x1_64_64_28': (64, 64, 28, 1, 1, 1, 0),
  'dw3_144_56': (144, 144, 56, 3, 1, 144, 1),
  'dw5_240_14': (240, 240, 14, 5, 1, 240, 2),
}
d = os.environ.get('INT8_SHAPES_DIR', '/tmp/int8_f32_shapes')
os.makedirs(d, exist_ok=True)
def make(name):
  cin, cout, side, k, s, g, pad = SHAPES[name]
  rng = np.random.default_rng(1)
  w = np.clip(np.round(rng.normal(0, 25, (cout, cin // g, k, k))), -127, 127).astype(np.int8)
  b = rng.integers(-3000, 3000, cout).astype(np.int32)
  inits = [numpy_helper.from_array(np.array(0.02, np.float32), 'xs'), numpy_helper.from_array(np.array(113, np.uint8), 'xz'),
    numpy_helper.from_array(w, 'w'), numpy_helper.from_array((rng.random(cout) * 0.002 + 0.001).astype(np.float32), 'ws'),
    numpy_helper.from_array(np.array(0, np.int8), 'wz'), numpy_helper.from_array(np.array(0.05, np.float32), 'ys'),
    numpy_helper.from_array(np.array(100, np.uint8), 'yz'), numpy_helper.from_array(b, 'b')]
  node = helper.make_node('QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'b'], ['y'], kernel_shape=[k, k],
                          strides=[s, s], pads=[pad] * 4, group=g)
  inits += [numpy_helper.from_array(np.ones((cout, 1, 1, 1), np.int8), 'w2'), numpy_helper.from_array(np.array(1.0, np.float32), 'ws2')]
  node2 = helper.make_node('QLinearConv', ['y1', 'ys', 'yz', 'w2', 'ws2', 'wz', 'ys', 'yz'], ['y'], kernel_shape=[1, 1], group=cout)
  node.output[0] = 'y1'
  nodes = [node, node2]
  if cin > 4:  # data channels-last, as another int8 convolution leaves it
    inits += [numpy_helper.from_array(np.ones((cin, 1, 1, 1), np.int8), 'w0')]
    nodes.insert(0, helper.make_node('QLinearConv', ['x0', 'xs', 'xz', 'w0', 'ws2', 'wz', 'xs', 'xz'], ['x'], kernel_shape=[1, 1], group=cin))
  graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info('x0' if cin > 4 else 'x', TensorProto.UINT8, [1, cin, side, side])],
                            [helper.make_tensor_value_info('y', TensorProto.UINT8, None)], inits)
  m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
  onnx.save(m, f'{d}/{name}.onnx')
  np.save(f'{d}/{name}.npy', rng.integers(0, 256, (1, cin, side, side)).astype(np.uint8))
name, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = list(SHAPES) if name == 'all' else name.split(',')
for n in names:
  make(n)
  def cpu(w, r):
    if os.environ.get('MINLAT'):
      import json
      out = subprocess.run([w, 'run', f'{d}/{n}.onnx', '--input', (f'x0={d}/{n}.npy' if SHAPES[n][0] > 4 else f'x={d}/{n}.npy'), '--threads', os.environ.get('T', '1'), '--fixed-threads', '--warmup', '3',
                    '--repeat', str(r), '--json', '--stats'], check=True, capture_output=True, text=True, env=dict(os.environ, CLEAVE_CACHE_DIR=f'{d}/cache')).stdout
      if r <= 4: return 0
      if os.environ.get('NODE'):
        return sum(i['ms_per_run'] for i in json.loads(out)['implementations'] if i['implementation'] != 'jit_uni_int8:avx2') * 1e-3 * (r - 4)
      return json.loads(out)['latency_ms']['min'] * 1e-3 * (r - 4)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([w, 'run', f'{d}/{n}.onnx', '--input', (f'x0={d}/{n}.npy' if SHAPES[n][0] > 4 else f'x={d}/{n}.npy'), '--threads', '1', '--fixed-threads', '--warmup', '3',
                    '--repeat', str(r), '--json'], check=True, capture_output=True, env=dict(os.environ, CLEAVE_CACHE_DIR=f'{d}/cache'))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
  res = {w: [] for w in sys.argv[4:]}
  for r in range(rounds):
    for w in (sys.argv[4:] if r % 2 == 0 else sys.argv[4:][::-1]):
      res[w].append((cpu(w, runs) - cpu(w, 4)) / (runs - 4) * 1e6)
  ws = sys.argv[4:]
  line = f'{n:16s} ' + ' '.join(f'{os.path.basename(w)} {statistics.median(res[w]):7.1f}us' for w in ws)
  line += ' ' + ' '.join(f'ratio {statistics.median([a / b for a, b in zip(res[w], res[ws[0]])]):.3f}' for w in ws[1:])
  print(line, flush=True)
