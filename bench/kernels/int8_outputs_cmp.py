#!/usr/bin/python3
"""Whether two cleave builds write the same bytes for the held-out int8 models: AVX2 and native, 1
and 2 threads.

usage: int8_outputs_cmp.py BASE BRANCH [--models DIR] [--only a,b] [--work DIR]

Each build runs every *_int8 model of the manifest (`cleave run --output-dir`, its manifest
inputs, `--fixed-threads`) under ONEDNN_MAX_CPU_ISA=AVX2 (the kernels without VNNI: the clamped
data and split weights) and natively, at 1 and 2 threads; every output file must equal, byte
for byte, the base's at 1 thread on the same ISA (int8 sums are exact in any order, so thread
counts must not change a bit either). Exits 1 on any difference or failed run.
"""
import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("branch")
    ap.add_argument("--models", default=os.environ.get("CLEAVE_HELDOUT_DIR") or
                    os.path.expanduser("~/.cache/cleave/heldout"))
    ap.add_argument("--only", help="comma-separated models (default: every *_int8 one)")
    ap.add_argument("--work", help="where the outputs go (default: a temporary folder)")
    args = ap.parse_args()
    entries = json.load(open(os.path.join(args.models, "manifest.json")))["models"]
    names = args.only.split(",") if args.only else sorted(n for n in entries if n.endswith("_int8"))
    missing = [n for n in names if n not in entries]
    if missing:
        sys.exit(f"int8_outputs_cmp.py: not in {args.models}/manifest.json: {', '.join(missing)}")
    work = args.work or tempfile.mkdtemp(prefix="int8-cmp-")
    cache = tempfile.mkdtemp(prefix="int8-cmp-cache-")
    failures, runs, files = [], 0, 0
    for name in names:
        inputs = sum([["--input", f"{i['name']}={os.path.join(args.models, i['file'])}"]
                      for i in entries[name]["inputs"]], [])
        for isa in ("avx2", "native"):
            env = dict(os.environ, CLEAVE_CACHE_DIR=cache)
            env.pop("ONEDNN_MAX_CPU_ISA", None)
            if isa == "avx2":
                env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
            reference = None
            for label, binary in (("base", args.base), ("branch", args.branch)):
                for threads in (1, 2):
                    out = os.path.join(work, name, f"{label}-{isa}-{threads}")
                    os.makedirs(out, exist_ok=True)
                    run = subprocess.run([binary, "run", os.path.join(args.models, name + ".onnx"),
                                          *inputs, "--threads", str(threads), "--fixed-threads",
                                          "--output-dir", out], env=env, capture_output=True,
                                         text=True)
                    runs += 1
                    if run.returncode != 0:
                        failures.append(f"{name} {label} {isa} {threads}T: exit {run.returncode}: "
                                        f"{run.stderr.strip()[-300:]}")
                        continue
                    if reference is None:
                        reference = out
                        continue
                    for f in sorted(os.listdir(reference)):
                        files += 1
                        other = os.path.join(out, f)
                        if not os.path.exists(other) or not filecmp.cmp(
                                os.path.join(reference, f), other, shallow=False):
                            failures.append(f"{name} {label} {isa} {threads}T: {f} differs from "
                                            f"the base's at 1 thread")
    print(f"{len(names)} models, {runs} runs, {files} output files compared with the base's at "
          f"1 thread; outputs in {work}")
    for f in failures:
        print("DIFFERS:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
