#!/usr/bin/python3
"""Export single 3x3 dilated convolutions (with ReLU) of several sizes to ONNX, for A/B timing.

The shapes of docs/results/ops_vs_ort.md's "Dilated convolutions tap by tap" table: files
c{in}_o{out}_h{map}_d{dilation}.onnx in --out (default ./dilated_shapes). Run with
/usr/bin/python3; random weights.
"""

import argparse
import os

import torch

SHAPES = [  # (channels in, channels out, map size, dilation)
    (64, 64, 56, 2), (128, 128, 28, 4), (256, 256, 28, 2), (512, 512, 28, 4),
    (256, 256, 14, 12), (32, 32, 112, 2), (16, 16, 56, 8), (64, 64, 28, 6), (3, 32, 112, 2),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="dilated_shapes")
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for c, o, h, d in SHAPES:
        model = torch.nn.Sequential(torch.nn.Conv2d(c, o, 3, padding=d, dilation=d),
                                    torch.nn.ReLU()).eval()
        path = os.path.join(out, f"c{c}_o{o}_h{h}_d{d}.onnx")
        torch.onnx.export(model, torch.randn(1, c, h, h), path, opset_version=13,
                          input_names=["x"], output_names=["y"])
        print(path)


if __name__ == "__main__":
    main()
