# Corpus models cut into K stages (--stages K, balanced by FLOPs) and software-pipelined, against
# the same model as one stage on one worker (sequential). Configurations interleaved by round.
# Beside wall-clock items/s it prints load-independent evidence: CPU seconds per item of every
# worker thread (work, scans, hand-offs), the busiest worker's, the speedup those CPU times allow
# when each worker has a core of its own, how often a worker slept waiting for a ready filter and
# how often the OS preempted it, and (with perf) user-space instructions per item.
# Usage: /usr/bin/python3 bench/stream/stages.py [BUILD_DIR] [ROUNDS] [ITEMS] [MODEL,...] [--perf]
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
PERF = "--perf" in sys.argv and shutil.which("perf") is not None
BUILD = ARGS[0] if len(ARGS) > 0 else "build"
ROUNDS = int(ARGS[1]) if len(ARGS) > 1 else 3
ITEMS = int(ARGS[2]) if len(ARGS) > 2 else 16
NAMES = ARGS[3].split(",") if len(ARGS) > 3 else ["squeezenet1_0", "mobilenet_v2", "resnet50"]
CLEAVE = os.path.join(BUILD, "cleave")
MODELS = os.path.expanduser(os.environ.get("CLEAVE_MODELS", "~/.cache/cleave/models"))
CONFIGS = [(1, 1), (2, 1), (2, 2)]  # (stages, workers)


def run(model, inputs, stages, workers):
    command = [CLEAVE, "stream", "run", model, "--input", "input=" + inputs, "--stages",
               str(stages), "--workers", str(workers), "--items", str(ITEMS), "--json"]
    instructions = None
    if PERF:
        with tempfile.NamedTemporaryFile(suffix=".perf") as f:
            out = subprocess.run(["perf", "stat", "-x,", "-o", f.name, "-e", "instructions:u"] +
                                 command, check=True, capture_output=True, text=True,
                                 timeout=900).stdout
            for line in open(f.name):
                fields = line.split(",")
                if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
                    instructions = int(fields[0])
    else:
        out = subprocess.run(command, check=True, capture_output=True, text=True,
                             timeout=900).stdout
    r = json.loads(out)
    r["instructions"] = instructions
    return r


def main():
    print(f"items per run: {ITEMS}; rounds: {ROUNDS}; uptime: {os.getloadavg()}")
    print("| model | stages | workers | items/s | vs 1 stage, 1 worker | predicted items/s | busy "
          "| CPU ms/item (all workers) | busiest worker CPU ms/item | CPU-bound speedup "
          "| waits/item | preempted | instructions/item |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in NAMES:
        model = os.path.join(MODELS, name + ".onnx")
        inputs = os.path.join(MODELS, name + ".input.npy")
        results = {c: [] for c in CONFIGS}
        for _ in range(ROUNDS):
            for c in CONFIGS:
                results[c].append(run(model, inputs, *c))
        base = statistics.median(r["items_per_second"] for r in results[(1, 1)])
        base_cpu = statistics.median(sum(r["worker_cpu_seconds"]) for r in results[(1, 1)])
        for c in CONFIGS:
            rs = results[c]
            rate = statistics.median(r["items_per_second"] for r in rs)
            pred = statistics.median(r["predicted_items_per_second"] for r in rs)
            busy = " ".join(f"{100 * b:.0f}%" for b in rs[-1]["worker_busy"])
            cpu = statistics.median(sum(r["worker_cpu_seconds"]) for r in rs)
            top = statistics.median(max(r["worker_cpu_seconds"]) for r in rs)
            waits = statistics.median(sum(r["worker_waits"]) for r in rs) / ITEMS
            pre = " ".join(str(p) for p in rs[-1]["worker_preempted"])
            ins = [r["instructions"] for r in rs if r["instructions"]]
            ins = f"{statistics.median(ins) / ITEMS / 1e6:.1f} M" if ins else "-"
            print(f"| {name} | {c[0]} | {c[1]} | {rate:.2f} | {rate / base:.2f}x | {pred:.2f} "
                  f"| {busy} | {1e3 * cpu / ITEMS:.2f} | {1e3 * top / ITEMS:.2f} "
                  f"| {base_cpu / top:.2f}x | {waits:.1f} | {pre} | {ins} |")


if __name__ == "__main__":
    main()
