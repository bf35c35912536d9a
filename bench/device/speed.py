#!/usr/bin/env python3
"""cleave beside ONNX Runtime on a lent machine's CPU, from the skeletons of strip_weights.py.

Usage (on the lent machine, whose python3 holds onnxruntime and onnx):
  python3 bench/device/speed.py --cleave DIR/cleave --skeletons DIR --work /tmp/corpus
      [--threads 1,2,16] [--rounds 3] [--runs 10] [--warmup 3] [--only a,b] [--out DIR]

It refills each skeleton's weights with seeded normal values of the recorded mean and spread,
writes a seeded input, then times the models as bench/ort/speed.mjs does: each round runs, per
thread count, ONNX Runtime (a child of this script: sequential, all graph optimisations,
intra-op threads T) and `cleave run --threads T --json`, alternating which goes first. Latency is
the median of every timed run; ratio is cleave / ORT. Results are written after every model
(speed.json, speed.md under --out), so a run cut short still leaves what it measured.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path


def restore(skeletons: Path, work: Path, only: list) -> dict:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    manifest = json.loads((skeletons / "manifest.json").read_text())
    weights = json.loads((skeletons / "weights.json").read_text())
    work.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, entry in manifest["models"].items():
        if only and name not in only:
            continue
        target = work / entry["file"]
        rng = np.random.default_rng(entry.get("seed", 1))
        if not target.exists():
            model = onnx.load(str(skeletons / entry["file"]))
            for tensor in model.graph.initializer:
                stats = weights[name].get(tensor.name)
                if stats is None:
                    continue
                values = rng.normal(stats["mean"], stats["std"], size=tuple(tensor.dims))
                tensor.CopyFrom(numpy_helper.from_array(values.astype(np.float32), tensor.name))
            onnx.save(model, str(target))
        input_file = work / entry["input_file"]
        np.save(input_file, rng.standard_normal(entry["input_shape"]).astype(np.float32))
        models[name] = {"onnx": str(target), "input": str(input_file),
                        "input_name": entry["input_name"], "nodes": entry["node_count"]}
    (work / "restored.json").write_text(json.dumps(models, indent=1))
    return models


def ort_child(argv: list) -> None:
    import numpy as np
    import onnxruntime as ort
    import resource

    model, input_file, input_name, threads, warmup, runs = argv
    feeds = {input_name: np.load(input_file)}
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    for _ in range(int(warmup)):
        session.run(None, feeds)
    times = []
    for _ in range(int(runs)):
        start = time.perf_counter_ns()
        session.run(None, feeds)
        times.append((time.perf_counter_ns() - start) / 1e6)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"runs": times, "baseline_rss_bytes": baseline, "peak_rss_bytes": peak}))


def time_ort(args, model, threads) -> list:
    text = subprocess.run(
        [sys.executable, __file__, "--ort-child", model["onnx"], model["input"],
         model["input_name"], str(threads), str(args.warmup), str(args.runs)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(text)["runs"]


def time_cleave(args, model, threads) -> list:
    text = subprocess.run(
        [args.cleave, "run", model["onnx"], "--input", f"{model['input_name']}={model['input']}",
         "--threads", str(threads), "--warmup", str(args.warmup), "--repeat", str(args.runs),
         "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(text)["latency_ms"]["runs"]


def write_results(args, rows, threads) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for t in threads:
        ratios = [r[f"ratio_{t}"] for r in rows]
        summary[f"geomean_ratio_{t}"] = math.exp(sum(map(math.log, ratios)) / len(ratios))
        summary[f"max_ratio_{t}"] = max(ratios)
    command = "python3 bench/device/speed.py " + " ".join(sys.argv[1:])
    (out / "speed.json").write_text(json.dumps(
        {"command": command, "cpu": platform.processor(), "cores": os.cpu_count(),
         "rows": rows, "summary": summary}, indent=1) + "\n")
    head = "| model | nodes | " + " | ".join(
        f"cleave {t}T | ORT {t}T | ratio {t}T" for t in threads) + " |"
    lines = [head, "|---|---:|" + "---:|---:|---:|" * len(threads)]
    for r in rows:
        lines.append(f"| {r['name']} | {r['nodes']} | " + " | ".join(
            f"{r[f'cleave_{t}']:.2f} | {r[f'ort_{t}']:.2f} | {r[f'ratio_{t}']:.3f}"
            for t in threads) + " |")
    lines.append("| **geometric mean** | | " + " | ".join(
        f" | | {summary[f'geomean_ratio_{t}']:.3f}" for t in threads) + " |")
    (out / "speed.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--ort-child":
        ort_child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--skeletons", required=True, type=Path)
    parser.add_argument("--work", default="/tmp/cleave-corpus", type=Path)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    only = args.only.split(",") if args.only else []
    started = time.time()
    models = restore(args.skeletons, args.work, only)
    print(f"refilled {len(models)} models in {time.time() - started:.1f} s", flush=True)
    rows = []
    for name, model in models.items():
        times = {(rt, t): [] for rt in ("ort", "cleave") for t in threads}
        try:
            for round_index in range(args.rounds):
                for t in threads:
                    order = ("ort", "cleave") if round_index % 2 == 0 else ("cleave", "ort")
                    for runtime in order:
                        timer = time_ort if runtime == "ort" else time_cleave
                        times[(runtime, t)] += timer(args, model, t)
        except subprocess.CalledProcessError as error:
            print(f"{name}: {error.cmd[0]} failed: {error.stderr.strip()[-400:]}", flush=True)
            continue
        row = {"name": name, "nodes": model["nodes"]}
        for t in threads:
            row[f"cleave_{t}"] = statistics.median(times[("cleave", t)])
            row[f"ort_{t}"] = statistics.median(times[("ort", t)])
            row[f"ratio_{t}"] = row[f"cleave_{t}"] / row[f"ort_{t}"]
        rows.append(row)
        write_results(args, rows, threads)
        print(f"{name:20s} " + " | ".join(
            f"{t}T cleave {row[f'cleave_{t}']:.2f} ORT {row[f'ort_{t}']:.2f} "
            f"ratio {row[f'ratio_{t}']:.3f}" for t in threads)
            + f"  ({time.time() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
