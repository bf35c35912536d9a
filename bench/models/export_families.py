#!/usr/bin/python3
"""Export architectures the corpus lacks (dilated, grouped, hard-swish, attention, Einsum, 3-D) to ONNX.

Same files, manifest and seeding as export_corpus.py (whose code this reuses), written by default
to ~/.cache/cleave/families. Run with /usr/bin/python3. Random weights, nothing downloaded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_corpus as corpus  # noqa: E402

torch = corpus.torch
tvm = corpus.tvm
IMAGE = corpus.IMAGE


class OutOnly(torch.nn.Module):
    """torchvision's segmentation models return a dict; the exporter wants one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def _segmentation(name):
    import torchvision.models.segmentation as seg
    return lambda: OutOnly(getattr(seg, name)(weights=None, weights_backbone=None, aux_loss=None))


def _video(name):
    import torchvision.models.video as video
    return getattr(video, name)(weights=None)


corpus.MODELS = {
    # ResNet-50 backbone with dilations 2 and 4 in its last two stages, and an ASPP head of
    # dilations 12, 24 and 36.
    "deeplabv3_resnet50": (_segmentation("deeplabv3_resnet50"), IMAGE),
    # MobileNet-V3 with hard-swish, squeeze-excitation and dilated depthwise convolutions.
    "lraspp_mobilenet_v3_large": (_segmentation("lraspp_mobilenet_v3_large"), IMAGE),
    # 32 groups of 4 to 32 channels each.
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(weights=None), IMAGE),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(weights=None), IMAGE),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(weights=None), IMAGE),
    "swin_t": (lambda: tvm.swin_t(weights=None), IMAGE),
    # Block and grid attention written as Einsum, MBConv with squeeze-excitation.
    "maxvit_t": (lambda: tvm.maxvit_t(weights=None), IMAGE),
    # 3-D convolutions on a 16-frame clip.
    "r3d_18": (lambda: _video("r3d_18"), (1, 3, 16, 112, 112)),
    # Dilated ResNet-50 with a plain head; MobileNet-V3 with ASPP on a 14x14 map.
    "fcn_resnet50": (_segmentation("fcn_resnet50"), IMAGE),
    "deeplabv3_mobilenet_v3_large": (_segmentation("deeplabv3_mobilenet_v3_large"), IMAGE),
    "regnet_x_1_6gf": (lambda: tvm.regnet_x_1_6gf(weights=None), IMAGE),
    # Squeeze-excitation on grouped convolutions; MobileNet-V3-Small's searched blocks;
    # EfficientNet at a larger width; ViT with 32x32 patches; wider bottlenecks.
    "regnet_y_800mf": (lambda: tvm.regnet_y_800mf(weights=None), IMAGE),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(weights=None), IMAGE),
    "efficientnet_b3": (lambda: tvm.efficientnet_b3(weights=None), IMAGE),
    "vit_b_32": (lambda: tvm.vit_b_32(weights=None), IMAGE),
    "wide_resnet50_2": (lambda: tvm.wide_resnet50_2(weights=None), IMAGE),
    "shufflenet_v2_x2_0": (lambda: tvm.shufflenet_v2_x2_0(weights=None), IMAGE),
    "convnext_small": (lambda: tvm.convnext_small(weights=None), IMAGE),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(weights=None), IMAGE),
    # Video: (2+1)-D factorised convolutions, mixed 3-D/2-D, and separable 3-D Inception (S3D).
    "r2plus1d_18": (lambda: _video("r2plus1d_18"), (1, 3, 16, 112, 112)),
    "mc3_18": (lambda: _video("mc3_18"), (1, 3, 16, 112, 112)),
    "s3d": (lambda: _video("s3d"), (1, 3, 16, 224, 224)),
}

if __name__ == "__main__":
    if not any(arg == "--out" or arg.startswith("--out=") for arg in sys.argv[1:]):
        default = os.path.join(os.path.expanduser("~"), ".cache", "cleave", "families")
        sys.argv[1:1] = ["--out", os.environ.get("CLEAVE_FAMILIES_DIR", default)]
    sys.exit(corpus.main())
