#!/usr/bin/env python3
"""Time per op type, cleave capped to AVX2 against cleave uncapped, on the same CPU.

A slow AVX2 path shows as an op type whose capped time is far above the ISA's factor (about 2x
for compute-bound kernels on a CPU whose 512-bit units run at full rate, less for memory-bound
ones): session 21's scalar swish loop made EfficientNet-B0's convolutions 4-6x. For each model
and thread count, rounds alternate which ISA goes first; each takes `cleave run --stats --json`
(time per op type) and the medians over rounds are compared. Op types under 2% of the capped
run are left out of the largest-ratio column.

  python3 bench/isa/op_types.py --cleave build/cleave --models DIR_OR_FILE,... \
      [--threads 1,2] [--rounds 3] [--runs 15] [--markdown out.md]
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ISAS, arguments, environment, interleaved, write_markdown  # noqa: E402


def op_times(args, model, threads, isa, cache):
    command = [args.cleave, "run", model, "--threads", str(threads), "--warmup", "3",
               "--repeat", str(args.runs), "--stats", "--json"]
    out = subprocess.run(command, env=environment(isa, cache), check=True, capture_output=True,
                         text=True, timeout=900).stdout
    report = json.loads(out)
    ops = {}
    for entry in report["implementations"]:
        ops[entry["op"]] = ops.get(entry["op"], 0.0) + entry["ms_per_run"]
    return report["latency_ms"]["median"], ops


def model_files(spec):
    files = []
    for item in (os.path.expanduser(part) for part in spec.split(",")):
        files += sorted(glob.glob(os.path.join(item, "*.onnx"))) if os.path.isdir(item) else [item]
    return files


def main():
    args = arguments(__doc__.splitlines()[0], runs=15,
                     models_help="comma-separated ONNX files or folders")
    cache = tempfile.mkdtemp(prefix="cleave_isa_ops_")
    lines = ["| model | threads | uncapped ms | AVX2 ms | AVX2 / uncapped "
             "| op types by capped / uncapped time (largest first, each >= 2% of the capped run) |",
             "|---|---|---|---|---|---|"]
    for model in model_files(args.models):
        name = os.path.basename(model).removesuffix(".onnx")
        for threads in [int(t) for t in args.threads.split(",")]:
            runs = interleaved(args.rounds, lambda isa: op_times(args, model, threads, isa, cache))
            latency = {isa: statistics.median(r[0] for r in runs[isa]) for isa in ISAS}
            ops = {isa: {op: statistics.median(r[1].get(op, 0.0) for r in runs[isa])
                         for op in runs[isa][0][1]} for isa in ISAS}
            capped, uncapped = ops["AVX2"], ops["uncapped"]
            ratios = sorted(((capped[op] / uncapped[op], op) for op in capped
                             if uncapped.get(op, 0) > 0 and capped[op] >= 0.02 * latency["AVX2"]),
                            reverse=True)
            listed = ", ".join(f"{op} {uncapped[op]:.2f} -> {capped[op]:.2f} ms ({r:.2f}x)"
                               for r, op in ratios[:4])
            line = (f"| {name} | {threads} | {latency['uncapped']:.2f} | {latency['AVX2']:.2f} "
                    f"| {latency['AVX2'] / latency['uncapped']:.2f} | {listed} |")
            print(line, flush=True)
            lines.append(line)
    write_markdown(args.markdown, lines)


if __name__ == "__main__":
    main()
