#!/usr/bin/python3
"""3x3 stride-1 convolutions per map size and channel count: the Winograd family against others.

Writes small models into DIR (a 1x1 stem from 3 channels, so that what follows starts on channel
blocks as inside a ResNet; then four 3x3 convolutions CxC with bias and ReLU in a chain, or for
"CinxCout" four parallel ones Cin->Cout), and times them with `cleave run ... --stats --json`
in blocks A B B A per round. Prints one JSON line per map, channels and thread count: each
variant's median 10th-percentile run (ms) and, against the first variant, the median over the
paired runs of the ratio of their 10th percentiles.

Variants: B blocked family; W Winograd family with no weight budget; D Winograd family with a
budget of 0 (every 3x3 stride-1 convolution on the direct kernels, brgemm on nhwc where there is
one); C channels-last. `--isa AVX2` runs every variant under ONEDNN_MAX_CPU_ISA=AVX2, where the
Winograd family runs cleave's own F(2x2, 3x3) kernel (oneDNN has Winograd on AVX-512 only).

  /usr/bin/python3 bench/kernels/winograd_maps.py DIR SIDES CHANNELS THREADS VARIANTS ROUNDS \
      [--cleave build/cleave] [--repeat 20] [--isa AVX2]
  e.g. ... /tmp/maps 2,4,5,7,8 64,128,256,512,128x32 1,2 B,W 3
"""
import argparse
import json
import os
import statistics
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VARIANTS = {
    "B": (["--layouts", "blocked"], {}),
    "W": (["--layouts", "winograd"], {"CLEAVE_WINOGRAD_BUDGET": "none"}),
    "D": (["--layouts", "winograd"], {"CLEAVE_WINOGRAD_BUDGET": "0"}),
    "C": (["--layouts", "channels-last"], {}),
}


def make_model(path, channels, side):
    """Four 3x3 convolutions after a 1x1 stem: a chain for "C", parallel for "CinxCout"."""
    parallel = "x" in channels
    cin, cout = map(int, channels.split("x")) if parallel else (int(channels), int(channels))
    rng = np.random.default_rng(cin * 1000 + cout + side)
    inits = [numpy_helper.from_array((rng.standard_normal((cin, 3, 1, 1)) * 0.5).astype(np.float32), "ws")]
    nodes = [helper.make_node("Conv", ["x", "ws"], ["s"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["s"], ["rs"])]
    outputs, previous = [], "rs"
    for i in range(4):
        w = (rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (9 * cin)) ** 0.5).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.01).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        source = "rs" if parallel else previous
        nodes.append(helper.make_node("Conv", [source, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        previous = f"r{i}"
        if parallel or i == 3:
            outputs.append(helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, cout, side, side]))
    graph = helper.make_graph(nodes, "maps", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, side, side])],
                              outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def run(cleave, model, variant, threads, repeat, isa):
    args, env = VARIANTS[variant]
    if isa:
        env = {**env, "ONEDNN_MAX_CPU_ISA": isa}
    out = subprocess.run([cleave, "run", model, *args, "--threads", str(threads), "--fixed-threads", "--warmup", "5",
                          "--repeat", str(repeat), "--stats", "--json"],
                         capture_output=True, text=True, env={**os.environ, **env}, check=True)
    report = json.loads(out.stdout)
    runs = sorted(report["latency_ms"]["runs"])
    implementations = sorted({i["implementation"] for i in report["implementations"] if i["op"] == "Conv"})
    return runs[len(runs) // 10], implementations


def main():
    parser = argparse.ArgumentParser()
    for name in ("dir", "sides", "channels", "threads", "variants"):
        parser.add_argument(name)
    parser.add_argument("rounds", type=int)
    parser.add_argument("--cleave", default="build/cleave")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--isa", default="", help="ONEDNN_MAX_CPU_ISA for every run, e.g. AVX2")
    a = parser.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    variants = a.variants.split(",")
    for side in map(int, a.sides.split(",")):
        for channels in a.channels.split(","):
            model = os.path.join(a.dir, f"s{side}_c{channels}.onnx")
            if not os.path.exists(model):
                make_model(model, channels, side)
            for threads in map(int, a.threads.split(",")):
                got = {v: [] for v in variants}
                for _ in range(a.rounds):
                    for v in variants + variants[::-1]:
                        got[v].append(run(a.cleave, model, v, threads, a.repeat, a.isa))
                row = {"side": side, "channels": channels, "threads": threads, "isa": a.isa or "native",
                       "load": os.getloadavg()[0]}
                for v in variants:
                    row[v + "_p10_ms"] = statistics.median(p10 for p10, _ in got[v])
                    row[v + "_implementations"] = got[v][0][1]
                    if v != variants[0]:
                        row[v + "_ratio"] = statistics.median(
                            x[0] / y[0] for x, y in zip(got[v], got[variants[0]]))
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
