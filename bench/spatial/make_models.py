# Generates the two extra networks of docs/results/spatial.md with random weights (seeded):
# a VGG-style stack and the first 16 layers of YOLOv2 (DeepThings' benchmark, 608x608 input).
# Usage: /usr/bin/python3 bench/spatial/make_models.py OUT_DIR
import os
import sys

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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, make in [("yolov2_16", yolov2_first16), ("vgg_style", vgg_style)]:
        model, shape = make()
        model.eval()
        torch.onnx.export(model, torch.randn(*shape), os.path.join(out, name + ".onnx"),
                          input_names=["input"], output_names=["output"], opset_version=13)
        print(os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
