#!/usr/bin/python3
"""Generated code over the held-out corpus: every model as C++ and as PyTorch, against `cleave run`.

    /usr/bin/python3 bench/codegen/check_heldout.py --cleave build/cleave \
        [--models DIR] [--only a,b] [--skip-cpp] [--skip-pytorch] [--markdown FILE]

DIR (default ~/.cache/cleave/heldout) is what bench/models/export_heldout.py writes: each model
with its input files and a manifest. Per model, `cleave run` on the manifest's inputs, with the
manifest's input shapes as --shape (the graph the generated code is made from; a detector's
outputs under --shape differ from those without it, even for its declared shape), gives the reference outputs; `cleave codegen --lang cpp` (sequential plan, the manifest's input shapes) is
built and run on the same inputs and must be bit-identical; `--lang pytorch` is run with
Debian's torch and must be within the corpus's float tolerance of cleave
(|gen - cleave| <= 1e-3*|cleave| + 1e-4*max|cleave|), or, for an int8 output whose manifest
entry gives its quantum, within one quantum. A model that does not emit, build or run
is listed with the first line of the error. Prints a Markdown table; exits 1 when any model
fails.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def sh(args, cwd=None, timeout=1800):
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return r.returncode, (r.stderr.strip() or r.stdout.strip())


def first_error(text):
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()[:160]
    lines = text.strip().splitlines()
    return lines[-1][:160] if lines else "(no message)"


def compare(reference_dir, actual_dir, outputs, exact):
    """Returns (ok, worst): worst is the largest |difference| over the outputs."""
    worst = 0.0
    ok = True
    for out in outputs:
        ref = np.load(os.path.join(reference_dir, out["name"] + ".npy"))
        path = os.path.join(actual_dir, out["name"] + ".npy")
        if not os.path.exists(path):
            return False, float("nan")
        got = np.load(path)
        if got.shape != ref.shape:
            return False, float("nan")
        if ref.size == 0:
            continue
        if exact:
            ok &= got.tobytes() == ref.tobytes()
        r = ref.astype(np.float64)
        g = got.astype(np.float64)
        diff = np.abs(g - r)
        worst = max(worst, float(diff.max()))
        if not exact and out.get("quantum"):
            # An int8 output: off by at most one quantum, ONNX Runtime's own int8 tolerance.
            ok &= bool((diff <= out["quantum"] * 1.001).all())
        elif not exact:
            allowed = 1e-3 * np.abs(r) + 1e-4 * float(np.abs(r).max())
            ok &= bool((diff <= allowed).all())
    return ok, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cleave", default="build/cleave")
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/cleave/heldout"))
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-cpp", action="store_true")
    ap.add_argument("--skip-pytorch", action="store_true")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args()
    cleave = os.path.realpath(args.cleave)
    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)["models"]
    only = set(filter(None, args.only.split(",")))
    rows = []
    failed = 0
    work = tempfile.mkdtemp(prefix="cleave_heldout_codegen_")
    try:
        for name, entry in sorted(manifest.items()):
            if only and name not in only:
                continue
            model = os.path.join(args.models, entry["file"])
            inputs = [f"{i['name']}={os.path.join(args.models, i['file'])}" for i in entry["inputs"]]
            shapes = [f"{i['name']}={','.join(str(d) for d in i['shape'])}" for i in entry["inputs"]]
            input_args = sum([["--input", i] for i in inputs], [])
            shape_args = sum([["--shape", s] for s in shapes], [])
            ref = os.path.join(work, name + "_ref")
            rc, err = sh([cleave, "run", model, *shape_args, *input_args, "--output-dir", ref])
            if rc != 0:
                rows.append((name, "run failed: " + first_error(err), "", ""))
                failed += 1
                continue
            # The outputs as cleave wrote them (a model may have several).
            quanta = {o["name"]: o.get("quantum") for o in entry["outputs"]}
            outputs = [{"name": os.path.splitext(f)[0], "quantum": quanta.get(os.path.splitext(f)[0])}
                       for f in sorted(os.listdir(ref)) if f.endswith(".npy")]
            cpp_cell = "skipped"
            if not args.skip_cpp:
                out = os.path.join(work, name + "_cpp")
                rc, err = sh([cleave, "codegen", model, *shape_args, "--lang", "cpp", "-o", out])
                if rc != 0:
                    cpp_cell = "emit: " + first_error(err)
                else:
                    rc, err = sh(["cmake", "-S", out, "-B", out + "/build", "-G", "Ninja"])
                    if rc == 0:
                        rc, err = sh(["cmake", "--build", out + "/build"])
                    if rc != 0:
                        cpp_cell = "build: " + first_error(err)
                    else:
                        rc, err = sh([out + "/build/model_run", *input_args,
                                      "--output-dir", out + "/out"])
                        if rc != 0:
                            cpp_cell = "run: " + first_error(err)
                        else:
                            ok, worst = compare(ref, out + "/out", outputs, exact=True)
                            cpp_cell = "bit-identical" if ok else f"DIFFERS (max {worst:.2e})"
                shutil.rmtree(out, ignore_errors=True)
            py_cell = "skipped"
            if not args.skip_pytorch:
                out = os.path.join(work, name + "_py")
                rc, err = sh([cleave, "codegen", model, *shape_args, "--lang", "pytorch", "-o", out])
                if rc != 0:
                    py_cell = "emit: " + first_error(err)
                else:
                    rc, err = sh(["/usr/bin/python3", out + "/run.py", *input_args,
                                  "--output-dir", out + "/out"])
                    if rc != 0:
                        py_cell = "run: " + first_error(err)
                    else:
                        ok, worst = compare(ref, out + "/out", outputs, exact=False)
                        py_cell = (f"within tolerance (max {worst:.2e})" if ok
                                   else f"DIFFERS (max {worst:.2e})")
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(ref, ignore_errors=True)
            good = (cpp_cell in ("bit-identical", "skipped")
                    and (py_cell == "skipped" or py_cell.startswith("within")))
            failed += 0 if good else 1
            rows.append((name, "ran", cpp_cell, py_cell))
            print(f"{name}: cpp {cpp_cell}; pytorch {py_cell}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["| model | cleave run | C++ (`--lang cpp`) | PyTorch (`--lang pytorch`) |",
             "|---|---|---|---|"]
    lines += [f"| {n} | {r} | {c} | {p} |" for n, r, c, p in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
