# Corpus models cut into K stages (--stages K, balanced by FLOPs) and software-pipelined, against
# the same model as one stage on one worker (sequential). Configurations interleaved by round.
# Usage: /usr/bin/python3 bench/stream/stages.py [BUILD_DIR] [ROUNDS] [ITEMS] [MODEL,...]
import json
import os
import statistics
import subprocess
import sys

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ITEMS = int(sys.argv[3]) if len(sys.argv) > 3 else 16
NAMES = sys.argv[4].split(",") if len(sys.argv) > 4 else ["squeezenet1_0", "mobilenet_v2",
                                                           "resnet50"]
CLEAVE = os.path.join(BUILD, "cleave")
MODELS = os.path.expanduser("~/.cache/cleave/models")
CONFIGS = [(1, 1), (2, 1), (2, 2)]  # (stages, workers)


def run(model, inputs, stages, workers):
    out = subprocess.run([CLEAVE, "stream", "run", model, "--input", "input=" + inputs,
                          "--stages", str(stages), "--workers", str(workers), "--items",
                          str(ITEMS), "--json"], check=True, capture_output=True, text=True,
                         timeout=900).stdout
    return json.loads(out)


def main():
    print("| model | stages | workers | items/s | vs 1 stage, 1 worker | predicted items/s | busy |")
    print("|---|---|---|---|---|---|---|")
    for name in NAMES:
        model = os.path.join(MODELS, name + ".onnx")
        inputs = os.path.join(MODELS, name + ".input.npy")
        results = {c: [] for c in CONFIGS}
        for _ in range(ROUNDS):
            for c in CONFIGS:
                results[c].append(run(model, inputs, *c))
        base = statistics.median(r["items_per_second"] for r in results[(1, 1)])
        for c in CONFIGS:
            rate = statistics.median(r["items_per_second"] for r in results[c])
            pred = statistics.median(r["predicted_items_per_second"] for r in results[c])
            busy = " ".join(f"{100 * b:.0f}%" for b in results[c][-1]["worker_busy"])
            print(f"| {name} | {c[0]} | {c[1]} | {rate:.2f} | {rate / base:.2f}x | {pred:.2f} | {busy} |")


if __name__ == "__main__":
    main()
