#!/usr/bin/env python3
"""Time per operator type, cleave beside ONNX Runtime, for models speed.py left above 1.0.

Usage (on the lent machine, after speed.py refilled the models into --work):
  python3 bench/device/profile.py --cleave DIR/cleave --work /tmp/cleave-corpus
      --models a,b [--threads 1] [--runs 50] [--out DIR]

cleave's side is `cleave run --stats --json` (warm-up runs excluded); ONNX Runtime's is its
session profiler, each node's kernel time summed per operator type and divided by the runs
after the warm-up. ORT names fused operators after their fusion (FusedConv, NchwcConv...), so
rows compare families, not single nodes. Writes profile.md under --out.
"""
import argparse
import collections
import json
import os
import subprocess
import tempfile
from pathlib import Path

WARMUP = 5


def ort_ops(model: dict, threads: int, runs: int) -> dict:
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    session = ort.InferenceSession(model["onnx"], options, providers=["CPUExecutionProvider"])
    feeds = {model["input_name"]: np.load(model["input"])}
    for _ in range(WARMUP + runs):
        session.run(None, feeds)
    events = json.loads(Path(session.end_profiling()).read_text())
    runs_seen = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    start_after = runs_seen[WARMUP]["ts"] if len(runs_seen) > WARMUP else 0
    totals = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") \
                and event["ts"] >= start_after:
            totals[event["args"]["op_name"]] += event["dur"] / 1000.0
    whole = sorted(e["dur"] / 1000.0 for e in runs_seen[WARMUP:])
    return {"ops": {op: ms / runs for op, ms in totals.items()},
            "run_ms": whole[len(whole) // 2] if whole else 0.0}


def cleave_ops(cleave: str, model: dict, threads: int, runs: int) -> dict:
    report = json.loads(subprocess.run(
        [cleave, "run", model["onnx"], "--input", f"{model['input_name']}={model['input']}",
         "--threads", str(threads), "--warmup", str(WARMUP), "--repeat", str(runs), "--stats",
         "--json"], check=True, capture_output=True, text=True).stdout)
    return {"ops": {row["op"]: row["ms_per_run"] for row in report["ops"]},
            "impls": report["implementations"], "run_ms": report["latency_ms"]["median"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--work", default="/tmp/cleave-corpus", type=Path)
    parser.add_argument("--models", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    manifest = json.loads((args.work / "restored.json").read_text())
    lines = []
    for name in args.models.split(","):
        model = manifest[name]
        first = len(lines)
        c = cleave_ops(args.cleave, model, args.threads, args.runs)
        o = ort_ops(model, args.threads, args.runs)
        lines += [f"### {name}, {args.threads} thread(s): cleave {c['run_ms']:.2f} ms, "
                  f"ORT {o['run_ms']:.2f} ms (under its profiler)", "",
                  "| cleave op | ms | | ORT op | ms |", "|---|---:|---|---|---:|"]
        left = sorted(c["ops"].items(), key=lambda kv: -kv[1])
        right = sorted(o["ops"].items(), key=lambda kv: -kv[1])
        for i in range(max(len(left), len(right))):
            a = f"{left[i][0]} | {left[i][1]:.3f}" if i < len(left) else " | "
            b = f"{right[i][0]} | {right[i][1]:.3f}" if i < len(right) else " | "
            lines.append(f"| {a} | | {b} |")
        lines += ["", "cleave implementations: " + ", ".join(
            f"{r['op']} {r['implementation']} {r['ms_per_run']:.3f} ms" for r in
            sorted(c["impls"], key=lambda r: -r["ms_per_run"])[:8]), ""]
        print("\n".join(lines[first:]), flush=True)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "profile.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
