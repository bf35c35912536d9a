#!/usr/bin/python3
"""Export a corpus of real architectures (random weights) to ONNX for cleave's benchmarks and tests.

Must be run with /usr/bin/python3: Debian's torch/torchvision/onnx/numpy are
installed only for the system interpreter, not for the pyenv python3 on PATH.
Nothing is downloaded; every model is built with weights=None.
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
import zlib

try:
    import numpy as np
    import onnx
    import torch
    import torchvision.models as tvm
except ImportError as exc:  # the usual cause is running the pyenv python3
    sys.exit(f"export_corpus: {exc}; run this script with /usr/bin/python3 "
             "(Debian's python3-torch/torchvision/onnx are only visible to it)")

OPSET = 13
INPUT_NAME = "input"
OUTPUT_NAME = "output"
MIN_OUTPUT_STD = 1e-3
IMAGE = (1, 3, 224, 224)


def _transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)
    # enable_nested_tensor would route eval-mode inference through the fused
    # nested-tensor kernel, which has no ONNX symbolic in torch 1.13.
    return torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


# name -> (constructor, input shape). Order is the order of a full run.
MODELS = {
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(weights=None), IMAGE),
    "googlenet": (lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=True), IMAGE),
    "inception_v3": (lambda: tvm.inception_v3(weights=None, aux_logits=False, init_weights=True),
                     (1, 3, 299, 299)),
    "resnet50": (lambda: tvm.resnet50(weights=None), IMAGE),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None), IMAGE),
    "densenet121": (lambda: tvm.densenet121(weights=None), IMAGE),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(weights=None), IMAGE),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(weights=None), IMAGE),
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(weights=None), IMAGE),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(weights=None), IMAGE),
    "convnext_tiny": (lambda: tvm.convnext_tiny(weights=None), IMAGE),
    "vit_b_16": (lambda: tvm.vit_b_16(weights=None), IMAGE),
    # A BERT-base-like stack scaled down so the corpus has an attention model
    # that is not a vision transformer.
    "transformer_encoder": (_transformer_encoder, (1, 128, 256)),
}


def model_seed(name):
    # Derived from the name rather than the run order so that exporting a
    # subset (--models) yields byte-identical models to a full run.
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


NEAR_ZERO = 1e-4


def perturb_degenerate_params(model, calib):
    """Replace torchvision's identity/zero init with values that exercise every op.

    Default init leaves BatchNorm as an exact identity and some heads at zero
    (vit_b_16 outputs exact zeros), so a runtime that dropped a BN, a bias or
    a whole head would still match PyTorch. Random-but-sane values make
    correctness comparisons meaningful.
    """
    bns = [m for m in model.modules()
           if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
    with torch.no_grad():
        for m in bns:
            if m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
        for p in model.parameters():
            # Near-zero too, not just exact zero: convnext's layer_scale (1e-6)
            # and vit's MLP biases (1e-6) are below any fp32 comparison
            # tolerance, so an error in the ops they scale would go unnoticed.
            if float(p.abs().max()) >= NEAR_ZERO:
                continue
            if p.dim() >= 2:
                # Zero weight matrices (e.g. vit's head): scale by fan-in so the
                # layer's output stays O(1) instead of vanishing or exploding.
                p.normal_(0.0, 1.0 / math.sqrt(p[0].numel()))
            else:
                p.normal_(0.0, 0.02)
    if bns:
        calibrate_batchnorm(model, bns, calib)


def calibrate_batchnorm(model, bns, calib):
    """Set each BN's running stats from its measured input, then perturb them.

    Plain running_mean ~ N(0, 0.1), running_var ~ U(0.5, 1.5) ignores the real
    scale of the activations, so un-normalised conv stacks compound: that gave
    inception_v3 (trunc_normal std 0.1 convs) an output std of 2e13 and
    resnet50 ~250. Applying those perturbations in units of the measured
    mean/std keeps activations O(1) while BN is still far from an identity.

    Measured in eval mode, in execution order (a pre-hook fires just before
    each BN runs), so every BN sees inputs produced by the already-calibrated
    eval-mode layers before it. A train-mode pass instead normalises with
    batch statistics that the eval-mode model never reproduces; the mismatch
    compounded to output stds of ~1000 (efficientnet_b0) in testing.
    """
    def set_stats(m, inputs):
        t = inputs[0]
        dims = [0] + list(range(2, t.dim()))
        mean, var = t.mean(dims), t.var(dims)
        std = var.sqrt()
        m.running_mean.copy_(mean + torch.randn_like(std) * 0.1 * std)
        m.running_var.copy_(var * torch.empty_like(var).uniform_(0.5, 1.5))

    model.eval()
    hooks = [m.register_forward_pre_hook(set_stats) for m in bns]
    try:
        with torch.no_grad():
            model(calib)
    finally:
        for h in hooks:
            h.remove()


def atomic_write(path, write_fn, suffix):
    """Write via a temp file in the same directory, then rename into place.

    Same directory so os.replace is an atomic rename on one filesystem; an
    interrupted run leaves at most a stray temp file, never a truncated model
    that a later run would mistake for a finished one.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=suffix, dir=directory)
    os.close(fd)
    try:
        write_fn(tmp)
        # mkstemp creates 0600; give the result the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_npy(path, array):
    def write(tmp):
        with open(tmp, "wb") as f:
            np.save(f, array)
    atomic_write(path, write, ".npy")


def export_one(name, out_dir):
    ctor, input_shape = MODELS[name]
    torch.manual_seed(model_seed(name))
    model = ctor()
    gen = torch.Generator().manual_seed(model_seed(name) + 1)
    x = torch.randn(*input_shape, generator=gen, dtype=torch.float32)
    # A separate batch, so BN stats are not fitted to the exact reference input
    # and every channel has several values even at 1x1 spatial size.
    calib = torch.randn(4, *input_shape[1:], generator=gen, dtype=torch.float32)
    perturb_degenerate_params(model, calib)
    model.eval()

    # Deliberately not under no_grad: in eval mode with grad disabled,
    # TransformerEncoderLayer takes a fused fast path, while the exporter
    # traces with grad enabled. Running the reference the same way keeps it
    # on the exact code path that was exported.
    y = model(x)
    if not isinstance(y, torch.Tensor):
        raise RuntimeError(f"{name}: expected a single output tensor, got {type(y).__name__}")
    y = y.detach()
    std = float(y.std())
    if not math.isfinite(std) or not bool(torch.isfinite(y).all()):
        raise RuntimeError(f"{name}: output has non-finite values (std={std})")
    if std <= MIN_OUTPUT_STD:
        raise RuntimeError(f"{name}: output std {std:.3g} <= {MIN_OUTPUT_STD}; the model is "
                           "(near-)degenerate and useless for correctness checks")

    onnx_path = os.path.join(out_dir, name + ".onnx")

    def write_onnx(tmp):
        torch.onnx.export(model, (x,), tmp, opset_version=OPSET, do_constant_folding=True,
                          input_names=[INPUT_NAME], output_names=[OUTPUT_NAME])
        # Check before the rename so an invalid graph never gets the final name.
        onnx.checker.check_model(tmp)

    # The .npy companions go first: the .onnx is the "done" marker that makes a
    # later run skip this model, so it must only appear once they exist.
    save_npy(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    save_npy(os.path.join(out_dir, name + ".torch_output.npy"), y.numpy())
    t0 = time.monotonic()
    atomic_write(onnx_path, write_onnx, ".onnx")
    seconds = time.monotonic() - t0

    nodes = len(onnx.load(onnx_path, load_external_data=False).graph.node)
    return manifest_entry(name, list(input_shape), list(y.shape), std, nodes, seconds)


def manifest_entry(name, input_shape, output_shape, std, nodes, seconds):
    return {
        "file": name + ".onnx",
        "input_file": name + ".input.npy",
        "torch_output_file": name + ".torch_output.npy",
        "input_name": INPUT_NAME,
        "input_shape": input_shape,
        "output_name": OUTPUT_NAME,
        "output_shape": output_shape,
        "output_std": std,
        "node_count": nodes,
        "export_seconds": None if seconds is None else round(seconds, 2),
        "seed": model_seed(name),
        "opset": OPSET,
    }


def entry_from_files(name, out_dir):
    """Rebuild a manifest entry for a skipped model whose entry is missing."""
    x = np.load(os.path.join(out_dir, name + ".input.npy"))
    y = np.load(os.path.join(out_dir, name + ".torch_output.npy"))
    nodes = len(onnx.load(os.path.join(out_dir, name + ".onnx"), load_external_data=False).graph.node)
    # The export time of an earlier run is unknown.
    return manifest_entry(name, list(x.shape), list(y.shape), float(y.std(ddof=1)), nodes, None)


def format_row(name, e, status):
    secs = "-" if e["export_seconds"] is None else f"{e['export_seconds']:.1f}"
    shape = lambda s: "x".join(str(d) for d in s)
    return (f"{name:<20} {status:<8} {e['file']:<25} {e['input_name']:<6} {shape(e['input_shape']):<12} "
            f"{shape(e['output_shape']):<12} {e['output_std']:>10.4g} {e['node_count']:>6} {secs:>7}")


def main():
    default_dir = os.environ.get("CLEAVE_MODELS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "cleave", "models")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_dir,
                    help="output directory (default: $CLEAVE_MODELS_DIR or ~/.cache/cleave/models; "
                         "%(default)s)")
    ap.add_argument("--models", help="comma-separated subset of model names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the model names and input shapes, then exit")
    ap.add_argument("--force", action="store_true", help="re-export models whose .onnx already exists")
    args = ap.parse_args()

    if args.list:
        for name, (_, shape) in MODELS.items():
            print(f"{name:<20} {'x'.join(map(str, shape))}")
        return 0

    names = list(MODELS)
    if args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            sys.exit(f"export_corpus: unknown model(s): {', '.join(unknown)} (see --list)")

    out_dir = args.out
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "manifest.json")
    manifest = {"models": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest["generator"] = {"script": "bench/models/export_corpus.py", "torch": torch.__version__,
                             "onnx": onnx.__version__, "opset": OPSET}

    def write_manifest():
        def write(tmp):
            with open(tmp, "w") as f:
                json.dump(manifest, f, indent=2, sort_keys=True)
                f.write("\n")
        atomic_write(manifest_path, write, ".json")

    print(f"writing to {out_dir}")
    print(f"{'model':<20} {'status':<8} {'file':<25} {'input':<6} {'in shape':<12} "
          f"{'out shape':<12} {'out std':>10} {'nodes':>6} {'export s':>7}")
    failures = []
    for name in names:
        onnx_path = os.path.join(out_dir, name + ".onnx")
        try:
            if os.path.exists(onnx_path) and not args.force:
                entry = manifest["models"].get(name) or entry_from_files(name, out_dir)
                status = "cached"
            else:
                entry = export_one(name, out_dir)
                status = "exported"
        except Exception as exc:  # keep going so one broken model doesn't hide the others
            failures.append(name)
            print(f"{name:<20} FAILED   {type(exc).__name__}: {exc}", flush=True)
            continue
        manifest["models"][name] = entry
        # Rewritten after every model so an interrupted run keeps what it finished.
        write_manifest()
        print(format_row(name, entry, status), flush=True)

    if failures:
        print(f"export_corpus: FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
