# Replication against by reference (--no-replicate) on graphs that are not series-parallel:
# conversion size and duplicated FLOPs, and items/s of both, interleaved by round.
# Usage: /usr/bin/python3 bench/stream/by_reference.py [BUILD_DIR] [ROUNDS] [ITEMS] [lstm,efficientnet]
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ITEMS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
CASES = sys.argv[4].split(",") if len(sys.argv) > 4 else ["lstm", "efficientnet"]
CLEAVE = os.path.join(BUILD, "cleave")
MODELS = os.path.expanduser("~/.cache/cleave/models")


def lstm_model(d):
    """A torch LSTM (seq 5, batch 2, 8 -> 16) and a Linear head, exported to ONNX."""
    import torch
    torch.manual_seed(0)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(8, 16)
            self.fc = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc(self.rnn(x)[0])

    x = torch.randn(5, 2, 8)
    path = os.path.join(d, "lstm.onnx")
    torch.onnx.export(M().eval(), (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=17)
    np.save(os.path.join(d, "lstm.input.npy"), x.numpy()[None])
    return path, "x", os.path.join(d, "lstm.input.npy")


def convert(model, by_ref):
    args = [CLEAVE, "stream", model] + (["--no-replicate"] if by_ref else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=300).stdout
    line = [l for l in out.splitlines() if "live instructions" in l][0]
    return line


def run(model, name, inputs, by_ref, workers):
    args = [CLEAVE, "stream", "run", model, "--input", name + "=" + inputs, "--items", str(ITEMS),
            "--workers", str(workers), "--json"] + (["--no-replicate"] if by_ref else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=600).stdout
    return json.loads(out)["items_per_second"]


def main():
    d = tempfile.mkdtemp(prefix="cleave_byref_")
    cases = [lstm_model(d)] if "lstm" in CASES else []
    if "efficientnet" in CASES:
        cases.append((os.path.join(MODELS, "efficientnet_b0.onnx"), "input",
                      os.path.join(MODELS, "efficientnet_b0.input.npy")))
    for model, name, inputs in cases:
        print(f"### {os.path.basename(model)}\n")
        print(f"- replication: {convert(model, False)}")
        print(f"- by reference: {convert(model, True)}\n")
        rates = {}
        for _ in range(ROUNDS):
            for workers in (1, 2):
                for by_ref in (False, True):
                    rates.setdefault((workers, by_ref), []).append(
                        run(model, name, inputs, by_ref, workers))
        print("| workers | replication items/s | by reference items/s | by reference / replication |")
        print("|---|---|---|---|")
        for workers in (1, 2):
            a = statistics.median(rates[(workers, False)])
            b = statistics.median(rates[(workers, True)])
            print(f"| {workers} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")
        print()


if __name__ == "__main__":
    main()
