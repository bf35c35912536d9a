#!/usr/bin/python3
"""Export one small model per op family (grouped, dilated, depthwise convolutions, hard swish,
attention) to ONNX, for per-op comparisons with ONNX Runtime (bench/kernels/ops_vs_ort.mjs).

Same files, manifest and seeding as export_corpus.py (whose code this reuses), written by default
to ~/.cache/cleave/ops. Run with /usr/bin/python3. Random weights, nothing downloaded. Each model
repeats one op a few times with the BatchNorm and activation a real network puts after it (both
runtimes fold those into the op), so that its time is that op family's.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_corpus as corpus  # noqa: E402

torch = corpus.torch
nn = torch.nn


def conv_stack(channels, groups, kernel=3, dilation=1, count=4, activation=nn.ReLU):
    """`count` times Conv(channels -> channels, groups) + BatchNorm + activation, size-keeping."""
    layers = []
    for _ in range(count):
        layers += [nn.Conv2d(channels, channels, kernel, padding=dilation * (kernel // 2),
                             dilation=dilation, groups=groups, bias=False),
                   nn.BatchNorm2d(channels), activation()]
    return nn.Sequential(*layers)


class Repeat(nn.Module):
    """`count` independent copies of a block, applied one after another."""

    def __init__(self, make, count):
        super().__init__()
        self.blocks = nn.ModuleList(make() for _ in range(count))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class SqueezeExcitation(nn.Module):
    """MobileNet-V3's gate: pool, 1x1 conv, ReLU, 1x1 conv, HardSigmoid, times the input."""

    def __init__(self, channels, squeeze):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        s = torch.nn.functional.hardsigmoid(self.expand(torch.relu(self.reduce(s))))
        return x * s


class HardSwishes(nn.Module):
    """HardSwish between scalings, so that no runtime can merge the activations."""

    def __init__(self, count):
        super().__init__()
        self.count = count

    def forward(self, x):
        for i in range(self.count):
            x = torch.nn.functional.hardswish(x * (1.0 + 0.25 * i))
        return x


class SelfAttention(nn.Module):
    """The MatMul-Softmax-MatMul chain of multi-head attention (ViT-S: 6 heads of 64)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attention = torch.softmax(q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5, dim=-1)
        return self.proj((attention @ v).transpose(1, 2).reshape(n, t, c))


class LayerNorms(nn.Module):
    """LayerNorm (exported as its ReduceMean/Sub/Pow/Sqrt/Div chain at opset 13) after Linear."""

    def __init__(self, width, count):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width))
                                    for _ in range(count))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


GRID = (1, 256, 28, 28)  # ResNeXt's / RegNet's third stage at 224x224.
TOKENS = (1, 197, 384)  # ViT-S/16 at 224x224.

corpus.MODELS = {
    # Grouped 3x3 convolutions at every channels-per-group count (1 is depthwise).
    **{f"grouped_cpg{cpg}": ((lambda cpg=cpg: conv_stack(256, 256 // cpg)), GRID)
       for cpg in (1, 2, 4, 8, 16, 32, 64)},
    "dense_3x3": (lambda: conv_stack(256, 1, count=2), GRID),
    # MobileNet's / EfficientNet's 5x5 depthwise convolutions.
    "depthwise_k5": (lambda: conv_stack(240, 240, kernel=5), (1, 240, 28, 28)),
    # DeepLabV3's dilated backbone (2, 4) and ASPP head (12); LR-ASPP's dilated depthwise 5x5.
    **{f"dilated_d{d}": ((lambda d=d: conv_stack(128, 1, dilation=d, count=2)), (1, 128, 28, 28))
       for d in (2, 4, 12)},
    "dilated_depthwise_k5_d2": (lambda: conv_stack(480, 480, kernel=5, dilation=2),
                                (1, 480, 14, 14)),
    # Hard swish alone, after a convolution (where both runtimes fuse it), and the HardSigmoid
    # gate of squeeze-excitation.
    "hardswish": (lambda: HardSwishes(4), (1, 96, 56, 56)),
    "conv_hardswish": (lambda: conv_stack(96, 1, kernel=1, activation=nn.Hardswish),
                       (1, 96, 56, 56)),
    "se_hardsigmoid": (lambda: Repeat(lambda: SqueezeExcitation(96, 24), 4), (1, 96, 28, 28)),
    # Attention's chains.
    "attention": (lambda: Repeat(lambda: SelfAttention(384, 6), 2), TOKENS),
    "layernorm": (lambda: LayerNorms(384, 4), TOKENS),
}

if __name__ == "__main__":
    if not any(arg == "--out" or arg.startswith("--out=") for arg in sys.argv[1:]):
        default = os.path.join(os.path.expanduser("~"), ".cache", "cleave", "ops")
        sys.argv[1:1] = ["--out", os.environ.get("CLEAVE_OPS_DIR", default)]
    sys.exit(corpus.main())
