#!/usr/bin/env python3
"""cleave's oneDNN primitive times beside ONNX Runtime's node times, summed per convolution class.

Reads, for one model and one thread count:
  - the model (its Conv nodes' weights, strides and input sizes, by ONNX shape inference), to
    name each convolution's class: kernel, stride, input -> output channels, input height;
  - ONNX Runtime's per-node medians, the JSON lines of `node profile_nodes.mjs ...`;
  - the stdout of `ONEDNN_VERBOSE=1 cleave run MODEL --warmup W --repeat R ...`: every
    primitive's time on every run. Runs are cut at each execution of the first convolution
    (the stem), the first W cut off, and each primitive's median taken over the rest.
Prints a Markdown table per class: nodes, cleave's implementations, cleave ms, ORT ms, ratio,
then the other primitives and ORT nodes by kind. cleave's nodes that are not oneDNN primitives
(and the copy of a fused sum's input, run before the primitive) are not in the verbose times:
`cleave run --stats` gives those per op.

  /usr/bin/python3 bench/ort/conv_classes.py MODEL.onnx --ort ORT.jsonl... \
      --verbose VERBOSE.log... --warmup W [--merge-inputs]

With several files of each (A B B A blocks), each class's time is the median over the files.
--p10 takes each node's 10th percentile over the runs (profile_nodes.mjs's us_p10) instead of its
median, and the lowest class time over the files, for a host that other processes disturb.

--merge-inputs puts 1x1 convolutions of any input width in one class per output (densenet).
"""
import argparse
import collections
import json
import re
import statistics
import sys

import onnx
from onnx import numpy_helper, shape_inference

# Which statistic of a node's times over the runs: set by --p10.
STAT = {"ort": "us", "cleave": statistics.median}
MERGE = statistics.median  # Over the files; with --p10 the lowest.
CONV = re.compile(r"mb(\d+)(?:_g(\d+))?_ic(\d+)oc(\d+)_ih(\d+)oh(\d+)kh(\d+)sh(\d+)")


def model_convs(path):
    """(kh, kw, O, I, H_in) -> stride of every 2-D Conv in the model, and their count."""
    model = shape_inference.infer_shapes(onnx.load(path))
    weights = {init.name: list(init.dims) for init in model.graph.initializer}
    shapes = {}
    for value in list(model.graph.value_info) + list(model.graph.input):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value for d in dims]
    convs = {}
    for node in model.graph.node:
        if node.op_type != "Conv" or node.input[1] not in weights:
            continue
        w = weights[node.input[1]]
        x = shapes.get(node.input[0])
        if len(w) != 4 or not x or len(x) != 4:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        stride = (attrs.get("strides") or [1])[0]
        group = attrs.get("group", 1)
        convs[(w[2], w[3], w[0], w[1] * group, x[2])] = (stride, group)
    return convs


def label(kh, stride, ic, oc, ih, group, merge_inputs):
    if group > 1 and group == ic == oc:
        return f"depthwise {kh}x{kh} s{stride} {oc} @{ih}"
    inputs = "*" if merge_inputs and kh == 1 else str(ic)
    return f"{kh}x{kh} s{stride} {inputs}->{oc} @{ih}"


def round_up(value, block):
    return (value + block - 1) // block * block


def ort_nodes(path, convs, merge_inputs):
    """ORT's node times in ms by class (convolutions) or op (the rest), and its run time."""
    by_class = collections.defaultdict(lambda: [0, 0.0])
    run_ms = None
    with open(path) as lines:
        for line in lines:
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if "run_us" in row:
                run_ms = row["run_us"] / 1e3
                continue
            shapes = row.get("shapes") or []
            key = f"other: {row['op']}"
            if row["op"] in ("Conv", "FusedConv") and len(shapes) >= 2 and len(shapes[1]) == 4:
                x, w = shapes[0], shapes[1]
                oc, ic_per_group, kh = w[0], w[1], w[2]
                if ic_per_group == 1 and oc == x[1]:
                    # A 1x1 depthwise convolution: ORT's NCHWc form of a lone BatchNormalization.
                    key = "other: BatchNormalization (ORT: a 1x1 depthwise Conv)"
                else:
                    match = None
                    for (ckh, ckw, coc, cic, cih), (stride, group) in convs.items():
                        if (ckh == kh and cih == x[2] and round_up(coc, 16) == round_up(oc, 16)
                                and round_up(cic, 16) == round_up(ic_per_group, 16)):
                            match = (stride, cic, coc, group)
                            break
                    if match:
                        key = label(kh, match[0], match[1], match[2], x[2], match[3],
                                    merge_inputs)
                    else:
                        key = f"unmatched {kh}x{kh} {ic_per_group}->{oc} @{x[2]}"
            by_class[key][0] += 1
            by_class[key][1] += row[STAT["ort"]] / 1e3
    return by_class, run_ms


def cleave_primitives(path, warmup, merge_inputs):
    """cleave's primitive medians in ms by class, with implementations; and the runs seen."""
    execs = []
    with open(path) as lines:
        for line in lines:
            fields = line.rstrip("\n").split(",")
            if len(fields) < 6 or fields[0] != "onednn_verbose" or fields[1] != "exec":
                continue
            execs.append((fields[3], fields[4], fields[-2], float(fields[-1])))
    stem = next((e[2] for e in execs if e[0] == "convolution"), None)
    if stem is None:
        sys.exit(f"{path}: no oneDNN convolution executed (was ONEDNN_VERBOSE=1 set?)")
    starts = [i for i, e in enumerate(execs) if e[0] == "convolution" and e[2] == stem]
    runs = [execs[a:b] for a, b in zip(starts, starts[1:] + [len(execs)])][warmup:]
    if not runs:
        sys.exit(f"{path}: {len(starts)} runs, none left after --warmup {warmup}")
    layout = [(e[0], e[2]) for e in runs[0]]
    runs = [r for r in runs if [(e[0], e[2]) for e in r] == layout]
    by_class = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for position, (kind, descriptor) in enumerate(layout):
        ms = STAT["cleave"]([r[position][3] for r in runs])
        implementation = runs[0][position][1]
        key = f"other: {kind}"
        match = CONV.search(descriptor) if kind == "convolution" else None
        if match:
            _, g, ic, oc, ih, _, kh, sh = match.groups()
            key = label(int(kh), int(sh), int(ic), int(oc), int(ih), int(g or 1), merge_inputs)
        entry = by_class[key]
        entry[0] += 1
        entry[1] += ms
        entry[2][implementation] += 1
    return by_class, len(runs)


def merged(parts):
    """Per class over several files: nodes and implementations of the first, the median ms."""
    keys = set().union(*parts)
    result = {}
    for key in keys:
        present = [p[key] for p in parts if key in p]
        entry = list(present[0])
        entry[1] = MERGE(p[1] for p in present)
        result[key] = entry
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--ort", nargs="+", required=True, help="profile_nodes.mjs outputs")
    parser.add_argument("--verbose", nargs="+", required=True, help="ONEDNN_VERBOSE=1 stdouts")
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--merge-inputs", action="store_true")
    parser.add_argument("--p10", action="store_true",
                        help="each node's 10th percentile instead of its median (a busy host)")
    args = parser.parse_args()
    if args.p10:
        STAT["ort"] = "us_p10"
        STAT["cleave"] = lambda values: sorted(values)[int(len(values) * 0.1)]
        global MERGE
        MERGE = min
    convs = model_convs(args.model)
    ort_parts = [ort_nodes(path, convs, args.merge_inputs) for path in args.ort]
    cleave_parts = [cleave_primitives(path, args.warmup, args.merge_inputs) for path in args.verbose]
    ort = merged([p[0] for p in ort_parts])
    cleave = merged([p[0] for p in cleave_parts])
    print(f"cleave: {[p[1] for p in cleave_parts]} runs with the same primitives per file; ORT "
          f"runs (median under its profiler, per file): {[p[1] for p in ort_parts]} ms; "
          f"per class: the {'lowest' if args.p10 else 'median'} over the files")
    print("| class | nodes cleave/ORT | cleave implementation | cleave ms | ORT ms | cleave / ORT |")
    print("|---|---:|---|---:|---:|---:|")
    totals = {"conv": [0.0, 0.0], "other": [0.0, 0.0]}

    def order(key):
        return (key.startswith("other") or key.startswith("unmatched"), key)

    for key in sorted(set(cleave) | set(ort), key=order):
        c = cleave.get(key, [0, 0.0, collections.Counter()])
        o = ort.get(key, [0, 0.0])
        implementations = "; ".join(f"{name} x{count}" if count > 1 else name
                                    for name, count in c[2].most_common())
        ratio = f"{c[1] / o[1]:.2f}" if o[1] > 0 and c[1] > 0 else ""
        print(f"| {key} | {c[0]}/{o[0]} | {implementations} | {c[1]:.3f} | {o[1]:.3f} | {ratio} |")
        group = "other" if key.startswith("other") else "conv"
        totals[group][0] += c[1]
        totals[group][1] += o[1]
    for group, (c, o) in totals.items():
        ratio = f"{c / o:.3f}" if o > 0 else ""
        print(f"| **all {group}** | | | {c:.3f} | {o:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
