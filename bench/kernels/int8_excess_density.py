# How often the two exact one-pass splits of an int8 convolution without VNNI would need their
# sparse correction, on the held-out int8 models (issue 44 item 5, docs/results/heldout-speed.md):
# weights |w| > 64 (w = clamp(w, -64, 64) + rest) and pairs of input channels with |w_a| + |w_b|
# > 128, MAC-weighted over the convolutions the split takes (not depthwise), and the matmuls'
# weights; with --data, the u8 data above 127 (x = min(x, 127) + rest) that each such convolution
# reads on the model's input, by the data's zero point (ONNX Runtime runs the model with every
# quantized activation exposed: bench/kernels/int8_data_above.mjs).
# Usage: /usr/bin/python3 bench/kernels/int8_excess_density.py [--data] [MODEL.onnx ...]
import glob, json, os, subprocess, sys, tempfile
import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, TensorProto

here = os.path.dirname(os.path.abspath(__file__))
heldout = os.path.expanduser('~/.cache/cleave/heldout')
args = [a for a in sys.argv[1:] if a != '--data']
paths = args or sorted(glob.glob(f'{heldout}/*_int8.onnx'))
with_data = '--data' in sys.argv
work = tempfile.mkdtemp(prefix='int8-excess-')
jobs = {}

for path in paths:
    m = onnx.load(path)
    try:
        m = shape_inference.infer_shapes(m)
    except Exception:
        pass
    g = m.graph
    init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    made_by = {o: n for n in g.node for o in n.output}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(g.value_info) + list(g.output)}

    def dequantized(name):
        n = made_by.get(name)
        return n if n is not None and n.op_type == 'DequantizeLinear' else None

    convs, matmuls, exposed = [], [], set()
    for n in g.node:
        if n.op_type not in ('Conv', 'MatMul', 'Gemm'):
            continue
        dx, dw = dequantized(n.input[0]), dequantized(n.input[1])
        if dx is None or dw is None or dw.input[0] not in init:
            continue
        w = init[dw.input[0]].astype(np.int32)
        if n.op_type != 'Conv':
            matmuls.append(float((np.abs(w) > 64).mean()))
            continue
        group = next((a.i for a in n.attribute if a.name == 'group'), 1)
        if group > 1 and w.shape[1] == 1:
            continue  # Depthwise: oneDNN's kernel multiplies in 32 bits, no split.
        out = shapes.get(n.output[0], [])
        macs = int(np.prod(out)) * int(np.prod(w.shape[1:])) if out and all(out) else 0
        pairs = 0.0
        if w.shape[1] % 2 == 0:
            p = w.reshape(w.shape[0], w.shape[1] // 2, 2, -1)
            pairs = float((np.abs(p).sum(axis=2) > 128).mean())
        zero = int(init[dx.input[2]]) if len(dx.input) > 2 and dx.input[2] in init else 0
        convs.append(dict(macs=macs, big=float((np.abs(w) > 64).mean()), pairs=pairs,
                          data=dx.input[0], zero=zero))
        if dx.input[0] not in exposed and dx.input[0] not in [o.name for o in g.output]:
            exposed.add(dx.input[0])
            g.output.append(helper.make_tensor_value_info(dx.input[0], TensorProto.UINT8, None))
    name = os.path.basename(path)
    total = sum(c['macs'] for c in convs) or 1
    big = sum(c['macs'] * c['big'] for c in convs) / total
    pairs = sum(c['macs'] * c['pairs'] for c in convs) / total
    print(f'{name}: {len(convs)} split convolutions, {total / 1e6:.1f}M MACs; |w| > 64: {big:.4f}, '
          f'pair sums > 128: {pairs:.4f} (MAC-weighted); matmul weights |w| > 64: '
          f'{[round(d, 3) for d in matmuls]}')
    if with_data and convs:
        exposed_model = os.path.join(work, name)
        onnx.save(m, exposed_model)
        base = name.replace('_int8.onnx', '')
        inputs = [i.name for i in g.input if i.name not in init]
        jobs[name] = dict(model=exposed_model, input=f'{heldout}/{base}.input.npy',
                          input_name=inputs[0], convs=convs)

if with_data and jobs:
    spec = os.path.join(work, 'jobs.json')
    json.dump(jobs, open(spec, 'w'))
    subprocess.run(['node', os.path.join(here, 'int8_data_above.mjs'), spec], check=True)
    shares = json.load(open(spec + '.out'))
    for name, job in jobs.items():
        for zero_point_0 in (True, False):
            cs = [c for c in job['convs'] if (c['zero'] == 0) == zero_point_0]
            macs = sum(c['macs'] for c in cs)
            if not macs:
                continue
            above = sum(c['macs'] * shares[name][c['data']] for c in cs) / macs
            print(f"{name}: data zero point {'0' if zero_point_0 else 'not 0'}: {len(cs)} "
                  f'convolutions, {macs / 1e6:.0f}M MACs, data above 127: {above:.4f} '
                  f"(MAC-weighted; most {max(shares[name][c['data']] for c in cs):.4f})")
