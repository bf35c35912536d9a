#!/usr/bin/python3
"""Export a held-out corpus of architectures (random weights) beyond export_corpus.py's 13, plus INT8 versions.

Must be run with /usr/bin/python3 (Debian's torch/torchvision/onnx, as export_corpus.py).
Nothing is downloaded: every model and backbone is built with weights=None.
Same layout as export_corpus.py (NAME.onnx, NAME.input.npy, NAME.torch_output.npy,
manifest.json); models with several inputs or outputs also list them all in the manifest
("inputs", "outputs"), and sequence models keep symbolic batch and sequence dims.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_corpus import atomic_write, model_seed, perturb_degenerate_params, save_npy  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402
import torchvision.models as tvm  # noqa: E402
import torchvision.models.detection as tvd  # noqa: E402
import torchvision.models.optical_flow as tvf  # noqa: E402
import torchvision.models.segmentation as tvs  # noqa: E402
import torchvision.models.video as tvv  # noqa: E402

OPSET = 13
MIN_OUTPUT_STD = 1e-3
# Small inputs keep the CPU time low; 224 only where an adaptive pool to 6x6/7x7 (alexnet,
# vgg) or swin's 7x7 windows need it, since ONNX has no adaptive pool of a non-divisible size,
# or where 128 leaves the random-weight model ill-conditioned (efficientnet_v2_s).
SMALL = (1, 3, 128, 128)
IMAGE = (1, 3, 224, 224)
CLIP = (1, 3, 8, 64, 64)
HERE = os.path.dirname(os.path.abspath(__file__))
QUANTIZE = os.path.join(HERE, "..", "..", "scripts", "quantize_model.py")


class Spec:
    """One model: constructor, example inputs, names, symbolic dims, and opset."""

    def __init__(self, ctor, shapes, inputs=("input",), outputs=("output",), dynamic=None,
                 opset=OPSET, wrap=None, image_list=False):
        self.ctor, self.shapes, self.inputs, self.outputs = ctor, shapes, inputs, outputs
        self.dynamic, self.opset, self.wrap, self.image_list = dynamic, opset, wrap, image_list


class Spread(torch.nn.Module):
    """Calls the model with a tuple spread into arguments, as perturb_degenerate_params passes one."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, xs):
        return self.model(*xs)


class FirstOut(torch.nn.Module):
    """Segmentation models return {"out": ..., "aux": ...}; the graph output is "out"."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class Detections(torch.nn.Module):
    """A detector takes a list of CHW images and returns a list of dicts; export one image."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        d = self.model([image])[0]
        return d["boxes"], d["scores"], d["labels"]


class LastFlow(torch.nn.Module):
    """RAFT returns the flow of every refinement step; the last one is the answer."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, a, b):
        return self.model(a, b, num_flow_updates=4)[-1]


class Decoder(torch.nn.Module):
    """A GPT-like decoder stack: causal self-attention on tgt, cross-attention on memory."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                                 batch_first=True)
        self.stack = torch.nn.TransformerDecoder(layer, num_layers=3)

    def forward(self, tgt, memory):
        n = tgt.shape[1]
        # The mask's size follows the traced sequence dim, so it stays symbolic in the graph.
        # (Built from arange, not triu: the exporter has Trilu only from opset 14.)
        i = torch.arange(n)
        causal = torch.zeros(n, n).masked_fill(i[None, :] > i[:, None], float("-inf"))
        return self.stack(tgt, memory, tgt_mask=causal)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                                 batch_first=True)
        self.stack = torch.nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False)

    def forward(self, x):
        return self.stack(x)


class Recurrent(torch.nn.Module):
    """Two stacked LSTM/GRU layers and a linear head on every step."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=64, hidden_size=128, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(128, 32)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class MelFrontEnd(torch.nn.Module):
    """Log-mel spectrogram: STFT as a strided Conv1d of windowed cos/sin, power, mel MatMul, log."""

    def __init__(self, n_fft=400, hop=160, mels=64, rate=16000):
        super().__init__()
        bins = n_fft // 2 + 1
        t = torch.arange(n_fft, dtype=torch.float64)
        k = torch.arange(bins, dtype=torch.float64)[:, None]
        window = 0.5 - 0.5 * torch.cos(2 * math.pi * t / n_fft)
        phase = 2 * math.pi * k * t / n_fft
        kernel = torch.cat([torch.cos(phase) * window, -torch.sin(phase) * window])
        self.register_buffer("kernel", kernel[:, None, :].float())
        self.register_buffer("mel", mel_filters(bins, mels, rate).float())
        self.bins, self.hop = bins, hop

    def forward(self, wave):
        spec = torch.nn.functional.conv1d(wave[:, None, :], self.kernel, stride=self.hop)
        power = spec[:, : self.bins] ** 2 + spec[:, self.bins:] ** 2
        return torch.log(torch.matmul(power.transpose(1, 2), self.mel) + 1e-6)


def mel_filters(bins, mels, rate):
    """Triangular filters evenly spaced on the HTK mel scale, bins x mels."""
    to_mel = lambda f: 2595.0 * math.log10(1.0 + f / 700.0)
    edges = torch.linspace(0.0, to_mel(rate / 2), mels + 2, dtype=torch.float64)
    hz = 700.0 * (10 ** (edges / 2595.0) - 1.0)
    freqs = torch.linspace(0.0, rate / 2, bins, dtype=torch.float64)[:, None]
    lo, mid, hi = hz[:-2], hz[1:-1], hz[2:]
    return torch.clamp(torch.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), min=0.0)


def classify(fn, shape=SMALL, **kw):
    return Spec(lambda: fn(weights=None, **kw), [shape])


def no_backbone(fn, **kw):
    return lambda: fn(weights=None, weights_backbone=None, **kw)


def seq(batch_seq):
    """Symbolic dims of a [batch, seq, feature] input."""
    return {0: "batch", 1: batch_seq}


# name -> Spec. Order is the order of a full run.
MODELS = {
    "alexnet": classify(tvm.alexnet, IMAGE),
    "vgg11": classify(tvm.vgg11, IMAGE),
    "vgg11_bn": classify(tvm.vgg11_bn, IMAGE),
    "resnet18": classify(tvm.resnet18),
    "resnet34": classify(tvm.resnet34),
    "resnet101": classify(tvm.resnet101),
    "resnext50_32x4d": classify(tvm.resnext50_32x4d),
    "wide_resnet50_2": classify(tvm.wide_resnet50_2),
    "densenet169": classify(tvm.densenet169),
    "squeezenet1_1": classify(tvm.squeezenet1_1),
    "mobilenet_v3_small": classify(tvm.mobilenet_v3_small),
    "mobilenet_v3_large": classify(tvm.mobilenet_v3_large),
    "mnasnet0_5": classify(tvm.mnasnet0_5),
    "shufflenet_v2_x0_5": classify(tvm.shufflenet_v2_x0_5),
    "efficientnet_b1": classify(tvm.efficientnet_b1),
    # At 128x128 its last stage's 4x4 maps give BatchNorm calibration too few samples: logits
    # reached std 477, beyond fp32 agreement between any two runtimes.
    "efficientnet_v2_s": classify(tvm.efficientnet_v2_s, IMAGE),
    "regnet_x_400mf": classify(tvm.regnet_x_400mf),
    "swin_t": classify(tvm.swin_t, IMAGE),
    "fcn_resnet50": Spec(no_backbone(tvs.fcn_resnet50, aux_loss=False), [SMALL], wrap=FirstOut),
    "deeplabv3_mobilenet_v3_large": Spec(no_backbone(tvs.deeplabv3_mobilenet_v3_large, aux_loss=False),
                                         [SMALL], wrap=FirstOut),
    "lraspp_mobilenet_v3_large": Spec(no_backbone(tvs.lraspp_mobilenet_v3_large), [SMALL], wrap=FirstOut),
    # Detectors end in their NMS; a low score threshold keeps boxes in the output of random weights.
    "ssdlite320_mobilenet_v3_large": Spec(
        no_backbone(tvd.ssdlite320_mobilenet_v3_large, score_thresh=0.0, topk_candidates=50,
                    detections_per_img=50),
        [(3, 320, 320)], outputs=("boxes", "scores", "labels"), wrap=Detections, image_list=True),
    "fasterrcnn_mobilenet_v3_large_320_fpn": Spec(
        no_backbone(tvd.fasterrcnn_mobilenet_v3_large_320_fpn, box_score_thresh=0.0,
                    box_detections_per_img=50),
        [(3, 320, 320)], outputs=("boxes", "scores", "labels"), wrap=Detections, image_list=True),
    "retinanet_resnet50_fpn": Spec(
        no_backbone(tvd.retinanet_resnet50_fpn, min_size=320, max_size=320, score_thresh=0.0,
                    topk_candidates=100, detections_per_img=50),
        [(3, 320, 320)], outputs=("boxes", "scores", "labels"), wrap=Detections, image_list=True),
    "r3d_18": classify(tvv.r3d_18, CLIP),
    "mc3_18": classify(tvv.mc3_18, CLIP),
    "r2plus1d_18": classify(tvv.r2plus1d_18, CLIP),
    # GridSample needs opset 16.
    "raft_small": Spec(lambda: tvf.raft_small(weights=None), [SMALL, SMALL], inputs=("image1", "image2"),
                       opset=16, wrap=LastFlow),
    "transformer_encoder_dyn": Spec(Encoder, [(2, 48, 128)], dynamic={"input": seq("seq")}),
    "transformer_decoder": Spec(Decoder, [(2, 40, 128), (2, 56, 128)], inputs=("tgt", "memory"),
                                dynamic={"tgt": seq("tgt_seq"), "memory": seq("mem_seq"),
                                         "output": seq("tgt_seq")}),
    "lstm": Spec(lambda: Recurrent(torch.nn.LSTM), [(2, 50, 64)], dynamic={"input": seq("seq")}),
    "gru": Spec(lambda: Recurrent(torch.nn.GRU), [(2, 50, 64)], dynamic={"input": seq("seq")}),
    "mel_frontend": Spec(MelFrontEnd, [(2, 16000)], dynamic={"input": {0: "batch", 1: "samples"},
                                                             "output": {0: "batch", 1: "frames"}}),
}

# Models that also get a QDQ int8 version (scripts/quantize_model.py), NAME_int8.onnx beside.
INT8 = ["resnet18", "squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x0_5", "mnasnet0_5",
        "regnet_x_400mf", "efficientnet_b1", "r3d_18", "lraspp_mobilenet_v3_large",
        "transformer_decoder", "mel_frontend"]


def as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def check_outputs(name, ys):
    """Refuse degenerate references: non-finite values, or a first output with ~zero spread.

    Only the first output's spread counts: a detector's scores from random weights are all
    near 1/classes, while its boxes (the first output) still vary.
    """
    for k, y in enumerate(ys):
        if y.is_floating_point() and not bool(torch.isfinite(y).all()):
            raise RuntimeError(f"{name}: output {k} has non-finite values")
    first = ys[0]
    if first.is_floating_point() and first.numel() > 1 and float(first.std()) <= MIN_OUTPUT_STD:
        raise RuntimeError(f"{name}: output std {float(first.std()):.3g} <= {MIN_OUTPUT_STD}; the "
                           "model is (near-)degenerate and useless for correctness checks")


def export_one(name, out_dir):
    spec = MODELS[name]
    torch.manual_seed(model_seed(name))
    model = spec.ctor()
    if spec.wrap:
        model = spec.wrap(model)
    gen = torch.Generator().manual_seed(model_seed(name) + 1)
    xs = [torch.randn(*s, generator=gen, dtype=torch.float32) for s in spec.shapes]
    # A separate calibration batch of 4 distinct samples (export_corpus.py's reason: BN stats not
    # fitted to the reference input, several values per channel); detectors take one image.
    calib = [torch.randn(*(s if spec.image_list else (4 * s[0], *s[1:])), generator=gen,
                         dtype=torch.float32) for s in spec.shapes]
    perturb_degenerate_params(Spread(model), tuple(calib))
    model.eval()
    # Not under no_grad, as export_corpus.py: the exporter traces with grad enabled.
    ys = [y.detach() for y in as_tuple(model(*xs))]
    check_outputs(name, ys)

    def write_onnx(tmp):
        torch.onnx.export(model, tuple(xs), tmp, opset_version=spec.opset, do_constant_folding=True,
                          input_names=list(spec.inputs), output_names=list(spec.outputs),
                          dynamic_axes=spec.dynamic)
        onnx.checker.check_model(tmp)

    inputs = [{"name": n, "file": f"{name}.input.npy" if k == 0 else f"{name}.input_{k}.npy"}
              for k, n in enumerate(spec.inputs)]
    outputs = [{"name": n, "torch_file": f"{name}.torch_output.npy" if k == 0 else f"{name}.torch_output_{k}.npy"}
               for k, n in enumerate(spec.outputs)]
    for i, x in zip(inputs, xs):
        save_npy(os.path.join(out_dir, i["file"]), x.numpy())
    for o, y in zip(outputs, ys):
        save_npy(os.path.join(out_dir, o["torch_file"]), y.numpy())
    t0 = time.monotonic()
    atomic_write(os.path.join(out_dir, name + ".onnx"), write_onnx, ".onnx")
    seconds = time.monotonic() - t0
    return entry(name, os.path.join(out_dir, name + ".onnx"), spec.opset, inputs, outputs, xs, ys, seconds)


def entry(name, file, opset, inputs, outputs, xs, ys, seconds):
    """A manifest entry; the single-input fields keep export_corpus.py's readers working."""
    for i, x in zip(inputs, xs):
        i["shape"] = list(x.shape)
    for o, y in zip(outputs, ys):
        o["shape"] = list(y.shape)
    nodes = len(onnx.load(file, load_external_data=False).graph.node)
    first = ys[0]
    return {
        "file": os.path.basename(file),
        "input_file": inputs[0]["file"],
        "torch_output_file": outputs[0]["torch_file"],
        "input_name": inputs[0]["name"],
        "input_shape": inputs[0]["shape"],
        "output_name": outputs[0]["name"],
        "output_shape": outputs[0]["shape"],
        "output_std": float(first.float().std()) if first.numel() > 1 else 0.0,
        "inputs": inputs,
        "outputs": outputs,
        "node_count": nodes,
        "export_seconds": None if seconds is None else round(seconds, 2),
        "seed": model_seed(name),
        "opset": opset,
    }


def output_quanta(path, names):
    """Per output, the scale of the DequantizeLinear that makes it (through shape-only ops), or None.

    An int8 output equals ONNX Runtime's within one quantum of that scale; an output computed in
    float after the last DequantizeLinear has no quantum and keeps the float tolerance.
    """
    model = onnx.load(path, load_external_data=False)
    producer = {o: n for n in model.graph.node for o in n.output}
    consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    quanta = []
    for name in names:
        node = producer.get(name)
        while node is not None and node.op_type in ("Reshape", "Flatten", "Transpose", "Identity",
                                                    "Squeeze", "Unsqueeze"):
            node = producer.get(node.input[0])
        scale = consts.get(node.input[1]) if node is not None and node.op_type == "DequantizeLinear" else None
        quanta.append(None if scale is None or scale.size != 1 else float(scale.reshape(())))
    return quanta


def quantize_one(name, out_dir, manifest, cleave, quantize_args=()):
    base = manifest["models"][name]
    path = os.path.join(out_dir, name + "_int8.onnx")

    def write(tmp):
        # quantize_model.py calibrates on static shapes: give it a copy with the example's
        # shapes, then put the symbolic dims back on the quantized graph's inputs and outputs.
        model = onnx.load(os.path.join(out_dir, base["file"]))
        kept = {v.name: onnx.ValueInfoProto.FromString(v.SerializeToString())
                for v in list(model.graph.input) + list(model.graph.output)}
        for v, i in zip(model.graph.input, base["inputs"]):
            for d, size in zip(v.type.tensor_type.shape.dim, i["shape"]):
                d.dim_value = size
        static = tmp + ".static.onnx"
        onnx.save(model, static)
        try:
            run = subprocess.run(["/usr/bin/python3", QUANTIZE, static, tmp, "--cleave", cleave,
                                  *quantize_args], check=True, capture_output=True, text=True)
            for line in run.stderr.splitlines():  # its tie-margin summary
                print(f"{name + '_int8':<42} {line}", flush=True)
        finally:
            os.unlink(static)
        quantized = onnx.load(tmp)
        for v in list(quantized.graph.input) + list(quantized.graph.output):
            if v.name in kept:
                v.CopyFrom(kept[v.name])
        onnx.checker.check_model(quantized)
        onnx.save(quantized, tmp)

    t0 = time.monotonic()
    try:
        atomic_write(path, write, ".onnx")
    except subprocess.CalledProcessError as exc:
        raise RuntimeError((exc.stderr or exc.stdout).strip().splitlines()[-1]) from None
    e = json.loads(json.dumps(base))
    e["file"] = name + "_int8.onnx"
    e["node_count"] = len(onnx.load(path, load_external_data=False).graph.node)
    e["export_seconds"] = round(time.monotonic() - t0, 2)
    e["float_model"] = name
    for o, q in zip(e["outputs"], output_quanta(path, [o["name"] for o in e["outputs"]])):
        o["quantum"] = q
    return e


def main():
    default_dir = os.environ.get("CLEAVE_HELDOUT_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "cleave", "heldout")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_dir,
                    help="output directory (default: $CLEAVE_HELDOUT_DIR or ~/.cache/cleave/heldout)")
    ap.add_argument("--only", help="comma-separated subset of model names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the model names and input shapes, then exit")
    ap.add_argument("--force", action="store_true", help="re-export models whose .onnx already exists")
    ap.add_argument("--no-int8", action="store_true", help="skip the QDQ int8 versions")
    ap.add_argument("--cleave", default=os.path.join(HERE, "..", "..", "build", "cleave"),
                    help="cleave binary that quantize_model.py calibrates with")
    ap.add_argument("--quantize-args", default="",
                    help="extra options for quantize_model.py, space-separated (e.g. --quantize-args=--no-tie-margin)")
    args = ap.parse_args()

    if args.list:
        for name, spec in MODELS.items():
            shapes = " ".join("x".join(map(str, s)) for s in spec.shapes)
            print(f"{name:<40} {shapes}{'  +int8' if name in INT8 else ''}")
        return 0
    names = list(MODELS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            sys.exit(f"export_heldout: unknown model(s): {', '.join(unknown)} (see --list)")

    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"models": {}, "failed": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest.setdefault("failed", {})
    manifest["generator"] = {"script": "bench/models/export_heldout.py", "torch": torch.__version__,
                             "onnx": onnx.__version__}

    def write_manifest():
        def write(tmp):
            with open(tmp, "w") as f:
                json.dump(manifest, f, indent=2, sort_keys=True)
                f.write("\n")
        atomic_write(manifest_path, write, ".json")

    print(f"writing to {args.out}")
    jobs = [(n, False) for n in names] + ([] if args.no_int8 else [(n, True) for n in names if n in INT8])
    failures = []
    for name, int8 in jobs:
        key = name + "_int8" if int8 else name
        if os.path.exists(os.path.join(args.out, key + ".onnx")) and key in manifest["models"] \
                and not args.force:
            print(f"{key:<42} cached", flush=True)
            continue
        try:
            if int8 and name not in manifest["models"]:
                raise RuntimeError(f"the float model {name} did not export")
            e = quantize_one(name, args.out, manifest, args.cleave, args.quantize_args.split()) if int8 else export_one(name, args.out)
        except Exception as exc:  # keep going: the failures are part of the result
            failures.append(key)
            manifest["models"].pop(key, None)
            manifest["failed"][key] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
            write_manifest()
            print(f"{key:<42} FAILED {manifest['failed'][key]}", flush=True)
            continue
        manifest["failed"].pop(key, None)
        manifest["models"][key] = e
        write_manifest()
        shapes = " ".join("x".join(map(str, o["shape"])) for o in e["outputs"])
        print(f"{key:<42} exported {e['node_count']:>5} nodes  out {shapes}  {e['export_seconds']}s", flush=True)
    if failures:
        print(f"export_heldout: FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
