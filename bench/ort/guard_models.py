#!/usr/bin/python3
"""Writes the guard models: small models of the kinds users bring that CI checks against
ONNX Runtime's outputs (committed beside them by bench/ort/guard_reference.mjs).

  detector_nms.onnx     a convolutional box and score head ending in torchvision's NMS
                        (NonMaxSuppression, then a Gather of the kept boxes: output length
                        known only at run time)
  decoder_dynamic.onnx  a transformer decoder layer with symbolic batch and sequence dims
  cnn_qdq.onnx          a small CNN in QDQ int8 form (scripts/quantize_model.py)

Each model gets one seeded input set, NAME.input_K.npy. Uses python3-torch, -torchvision,
-onnx and -numpy; the QDQ model calibrates with `cleave run` (--cleave).

usage: guard_models.py OUT_DIR [--cleave build/cleave]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import torchvision


class Detector(torch.nn.Module):
    """Boxes and scores from a feature map, then non-maximum suppression."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.boxes = torch.nn.Conv2d(8, 4, 1)
        self.scores = torch.nn.Conv2d(8, 1, 1)
        # Each cell's top-left corner on the 8 x 8 feature map, 2 pixels apart.
        ys, xs = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
        self.register_buffer("grid", torch.stack([xs.flatten(), ys.flatten()], dim=1) * 2.0)

    def forward(self, image):
        f = self.features(image)
        boxes = self.boxes(f).flatten(2).transpose(1, 2)[0]  # [N, 4]
        # Corners (x1, y1, x2, y2) with x2 > x1 and y2 > y1, on a 16-pixel grid.
        xy = boxes[:, :2] * 4.0 + self.grid
        wh = torch.nn.functional.softplus(boxes[:, 2:]) * 8.0 + 1.0
        corners = torch.cat([xy, xy + wh], dim=1)
        scores = torch.sigmoid(self.scores(f).flatten())
        keep = torchvision.ops.nms(corners, scores, 0.3)
        return corners[keep], scores[keep]


def export(module, args, path, names, outputs, dynamic=None, opset=13):
    module.eval()
    torch.onnx.export(module, args, path, input_names=names, output_names=outputs,
                      dynamic_axes=dynamic, opset_version=opset, do_constant_folding=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--cleave", default="build/cleave")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    image = torch.from_numpy(rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32))
    export(Detector(), (image,), f"{args.out}/detector_nms.onnx", ["image"], ["boxes", "scores"],
           opset=11)
    np.save(f"{args.out}/detector_nms.input_0.npy", image.numpy())

    decoder = torch.nn.TransformerDecoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                               dropout=0.0, batch_first=True)
    target = torch.from_numpy(rng.uniform(-1, 1, (2, 5, 32)).astype(np.float32))
    memory = torch.from_numpy(rng.uniform(-1, 1, (2, 7, 32)).astype(np.float32))
    export(decoder, (target, memory), f"{args.out}/decoder_dynamic.onnx", ["target", "memory"],
           ["decoded"], dynamic={"target": {0: "batch", 1: "target_length"},
                                 "memory": {0: "batch", 1: "memory_length"},
                                 "decoded": {0: "batch", 1: "target_length"}})
    np.save(f"{args.out}/decoder_dynamic.input_0.npy", target.numpy())
    np.save(f"{args.out}/decoder_dynamic.input_1.npy", memory.numpy())

    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=4), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))
    pixels = torch.from_numpy(rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32))
    export(cnn, (pixels,), f"{args.out}/cnn_float.onnx", ["pixels"], ["logits"])
    quantizer = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "quantize_model.py")
    subprocess.run([sys.executable, quantizer, f"{args.out}/cnn_float.onnx",
                    f"{args.out}/cnn_qdq.onnx", "--cleave", args.cleave], check=True)
    os.remove(f"{args.out}/cnn_float.onnx")
    np.save(f"{args.out}/cnn_qdq.input_0.npy", pixels.numpy())


if __name__ == "__main__":
    main()
