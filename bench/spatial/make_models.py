# Generates the extra networks of docs/results/spatial.md with random weights (seeded): a
# VGG-style stack, the first 16 layers of YOLOv2 (DeepThings' benchmark, 608x608 input) and a
# small feature pyramid (FPN-style top-down path: nearest x2 and bilinear x4 Resize), plus a
# manifest.json and inputs so that bench/ort/split.mjs --models OUT_DIR can check their splits.
# Usage: /usr/bin/python3 bench/spatial/make_models.py OUT_DIR
import json
import os
import sys

import numpy as np

import torch
from torch import nn


def conv(cin, cout, k):
    return [nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout),
            nn.LeakyReLU(0.1)]


def yolov2_first16():
    # Darknet yolov2.cfg layers 0-15: conv/maxpool alternating, 1x1 bottlenecks from layer 8.
    layers = []
    layers += conv(3, 32, 3) + [nn.MaxPool2d(2, 2)]
    layers += conv(32, 64, 3) + [nn.MaxPool2d(2, 2)]
    layers += conv(64, 128, 3) + conv(128, 64, 1) + conv(64, 128, 3) + [nn.MaxPool2d(2, 2)]
    layers += conv(128, 256, 3) + conv(256, 128, 1) + conv(128, 256, 3) + [nn.MaxPool2d(2, 2)]
    layers += conv(256, 512, 3) + conv(512, 256, 1) + conv(256, 512, 3)
    return nn.Sequential(*layers), (1, 3, 608, 608)


def vgg_style():
    layers = []
    cin = 3
    for cout, repeat in [(64, 2), (128, 2), (256, 3)]:
        for _ in range(repeat):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
            cin = cout
        layers += [nn.MaxPool2d(2, 2)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)]
    return nn.Sequential(*layers), (1, 3, 224, 224)


class FpnStyle(nn.Module):
    # Four stride-2 stages, 1x1 laterals, a top-down path of nearest x2 upsamplings added to
    # the laterals, a 3x3 head and a bilinear x4 upsampling back to the input size.
    def __init__(self):
        super().__init__()
        widths = [32, 64, 96, 128]
        self.stages = nn.ModuleList()
        cin = 3
        for w in widths:
            self.stages.append(nn.Sequential(nn.Conv2d(cin, w, 3, stride=2, padding=1), nn.ReLU()))
            cin = w
        self.laterals = nn.ModuleList(nn.Conv2d(w, 64, 1) for w in widths)
        self.head = nn.Conv2d(64, 8, 3, padding=1)

    def forward(self, x):
        features = []
        for stage in self.stages:
            x = stage(x)
            features.append(x)
        top = self.laterals[-1](features[-1])
        for lateral, feature in zip(reversed(self.laterals[:-1]), reversed(features[:-1])):
            top = nn.functional.interpolate(top, scale_factor=2, mode="nearest") + lateral(feature)
        out = self.head(top)
        return nn.functional.interpolate(out, scale_factor=4, mode="bilinear",
                                         align_corners=False)


def fpn_style():
    return FpnStyle(), (1, 3, 224, 224)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    manifest = {"models": {}}
    for name, make in [("yolov2_16", yolov2_first16), ("vgg_style", vgg_style),
                       ("fpn_style", fpn_style)]:
        model, shape = make()
        model.eval()
        x = torch.randn(*shape)
        torch.onnx.export(model, x, os.path.join(out, name + ".onnx"),
                          input_names=["input"], output_names=["output"], opset_version=13)
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        with torch.no_grad():
            np.save(os.path.join(out, name + ".torch_output.npy"), model(x).numpy())
        manifest["models"][name] = {
            "file": name + ".onnx", "input_file": name + ".input.npy", "input_name": "input",
            "output_name": "output", "torch_output_file": name + ".torch_output.npy"}
        print(os.path.join(out, name + ".onnx"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
