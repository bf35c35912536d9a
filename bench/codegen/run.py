#!/usr/bin/python3
"""Benchmarks `cleave codegen` over the model corpus; prints a markdown report.

    /usr/bin/python3 bench/codegen/run.py --cleave build/cleave [--models a,b] [--repeat 20]
        [--configs 1t,2t,lc,ranks] [--time-models a,b] [--no-ort] [--skip-cpp] [--skip-pytorch]

Per model: generation time, C++ build time, the generated program's latency against
`cleave run` (sequential plans at 1 and 2 threads, the lc plan on 2 workers, and with `ranks`
the lc plan on 2 MPI ranks, generated with --ranks, against `mpirun -np 2 cleave run --plan`),
whether the outputs are bit-identical, binary and resident size, and ONNX Runtime's latency at
the same thread count (bench/ort/ort_run.mjs; needs `npm install` in bench/ort); then the
generated PyTorch: its 2-worker plan as threads against its own sequential twin and against
`cleave run` with the same plan (the Ramiel paper's Table IV), and its largest difference from
cleave's outputs. Runs alternate (A B C C B A) so that drift on a busy host hits every side
alike.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MODELS_DIR = os.environ.get("CLEAVE_MODELS_DIR", os.path.expanduser("~/.cache/cleave/models"))


def sh(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def timed(args):
    start = time.perf_counter()
    sh(args)
    return time.perf_counter() - start


def latency(args):
    report = json.loads(sh(args + ["--json"]))
    return report["latency_ms"]["median"], report


MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl",
          "tcp,self", "--mca", "btl_tcp_if_include", "lo", "-x", "OMP_NUM_THREADS=1"]


ORT_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ort", "ort_run.mjs")


def ort_latency(model, given, input_name, threads, repeat):
    report = json.loads(sh(["node", ORT_RUN, model, given, input_name, str(threads), "3",
                            str(repeat)]))
    return statistics.median(report["runs"]), report


def num(x, spec):
    """x formatted, or "-" for a figure not measured (nan)."""
    return "-" if x != x else format(x, spec)


def alternate3(a, b, c, rounds=2):
    """Medians of A, B and C run as A B C C B A, `rounds` times."""
    xs, ys, zs = [], [], []
    for _ in range(rounds):
        xs.append(a())
        ys.append(b())
        zs.append(c())
        zs.append(c())
        ys.append(b())
        xs.append(a())
    return statistics.median(xs), statistics.median(ys), statistics.median(zs)


def alternate_all(functions, rounds=2):
    """Medians of each function, run forwards then backwards (A B C D D C B A), `rounds` times."""
    samples = [[] for _ in functions]
    for _ in range(rounds):
        for k in list(range(len(functions))) + list(reversed(range(len(functions)))):
            samples[k].append(functions[k]())
    return [statistics.median(xs) for xs in samples]


def alternate(a, b, rounds=2):
    """Medians of A and B run as A B B A, `rounds` times."""
    xs, ys = [], []
    for _ in range(rounds):
        xs.append(a())
        ys.append(b())
        ys.append(b())
        xs.append(a())
    return statistics.median(xs), statistics.median(ys)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cleave", default="build/cleave")
    parser.add_argument("--models", default="")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--skip-cpp", action="store_true")
    parser.add_argument("--skip-pytorch", action="store_true")
    parser.add_argument("--keep", help="keep the generated folders here")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: take programs already generated and built there (a "
                             "timing pass after a loaded build pass; generate/build s then '-')")
    parser.add_argument("--configs", default="1t,2t,lc",
                        help="C++ plans: 1t (sequential, 1 thread), 2t (2 threads), lc (2 workers), "
                             "ranks (the lc plan on 2 MPI ranks)")
    parser.add_argument("--time-models", default=None,
                        help="models whose latency is measured (default: all); the others get "
                             "generation, build, bit-identity and sizes only")
    parser.add_argument("--no-ort", action="store_true", help="no ONNX Runtime column")
    args = parser.parse_args()
    cleave = os.path.abspath(args.cleave)
    manifest = json.load(open(os.path.join(MODELS_DIR, "manifest.json")))["models"]
    names = args.models.split(",") if args.models else sorted(manifest)
    names = [n for n in names if os.path.exists(os.path.join(MODELS_DIR, manifest[n]["file"]))]
    timed_names = set(args.time_models.split(",")) if args.time_models is not None else set(names)
    configs = args.configs.split(",")
    work = args.keep or tempfile.mkdtemp(prefix="cleave_codegen_bench_")
    os.makedirs(work, exist_ok=True)
    runs = ["--warmup", "3", "--repeat", str(args.repeat)]
    cpp_rows, py_rows = [], []
    for name in names:
        entry = manifest[name]
        model = os.path.join(MODELS_DIR, entry["file"])
        given = os.path.join(MODELS_DIR, entry["input_file"])
        folder = os.path.join(work, name)
        plan = os.path.join(folder, "lc.json")
        if not (args.reuse and os.path.exists(plan)):
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            sh([cleave, "plan", model, "--strategy", "lc", "--workers", "2", "--costs", "static",
                "-o", plan])
        inputs = ["--input", f"{entry['input_name']}={given}"]
        if not args.skip_cpp:
            for key, label, plan_args, run_args, ort_threads in [
                ("1t", "1 thread", ["--threads", "1"], ["--threads", "1"], 1),
                ("2t", "2 threads", ["--threads", "2"], ["--threads", "2"], 2),
                ("lc", "lc, 2 workers", ["--plan", plan], ["--plan", plan], 2),
                ("ranks", "lc, 2 MPI ranks", ["--plan", plan, "--ranks"], ["--plan", plan], 2),
            ]:
                if key not in configs:
                    continue
                # Rank programs and their reference run under mpirun, 2 ranks of 1 thread.
                launch = MPIRUN if key == "ranks" else []
                out = os.path.join(folder, "cpp_" + label.replace(" ", "_").replace(",", ""))
                exe = out + "/build/model_run"
                gen_s = build_s = float("nan")
                if not (args.reuse and os.path.exists(exe)):
                    gen_s = timed([cleave, "codegen", model, "--lang", "cpp", "--layouts",
                                   "blocked", "-o", out, "--force"] + plan_args)
                    build_s = timed(["cmake", "-S", out, "-B", out + "/build", "-G", "Ninja"])
                    build_s += timed(["cmake", "--build", out + "/build"])
                shutil.rmtree(out + "/o", ignore_errors=True)
                shutil.rmtree(out + "/r", ignore_errors=True)
                sh(launch + [exe] + inputs + ["--output-dir", out + "/o"])
                sh(launch + [cleave, "run", model, "--layouts", "blocked", "--output-dir",
                             out + "/r"] + inputs + run_args)
                same = all(
                    np.array_equal(np.load(os.path.join(out, "o", f)), np.load(os.path.join(out, "r", f)))
                    for f in os.listdir(out + "/o"))
                generated = lambda: latency(launch + [exe] + inputs + runs)[0]  # noqa: E731
                interpreter = lambda: latency(launch + [cleave, "run", model, "--layouts",  # noqa: E731
                                                        "blocked"] + inputs + run_args + runs)[0]
                ort = lambda: ort_latency(model, given, entry["input_name"], ort_threads,  # noqa: E731
                                          args.repeat)[0]
                gen_ms = run_ms = ort_ms = float("nan")
                if name in timed_names and args.no_ort:
                    gen_ms, run_ms = alternate(generated, interpreter)
                elif name in timed_names:
                    gen_ms, run_ms, ort_ms = alternate3(generated, interpreter, ort)
                _, gen_report = latency(launch + [exe] + inputs + ["--repeat", "3"])
                _, run_report = latency(launch + [cleave, "run", model, "--layouts", "blocked"] +
                                        inputs + run_args + ["--repeat", "3"])
                if launch:
                    # Rank 0's report: the largest rank's peak, as the memory a machine needs.
                    for report in (gen_report, run_report):
                        report["peak_rss_bytes"] = max(
                            r["peak_rss_bytes"] for r in report.get("per_rank", [report]))
                ort_rss = float("nan")
                if not args.no_ort:
                    ort_rss = ort_latency(model, given, entry["input_name"], ort_threads,
                                          3)[1]["peak_rss_bytes"] / 2**20
                cpp_rows.append([name, label, num(gen_s, ".2f"), num(build_s, ".1f"),
                                 num(gen_ms, ".2f"),
                                 num(run_ms, ".2f"), num(ort_ms, ".2f"), num(gen_ms / run_ms, ".3f"),
                                 num(gen_ms / ort_ms, ".3f"), "yes" if same else "NO",
                                 f"{os.path.getsize(exe) / 2**20:.1f}",
                                 f"{os.path.getsize(cleave) / 2**20:.1f}",
                                 f"{gen_report['peak_rss_bytes'] / 2**20:.0f}",
                                 f"{run_report['peak_rss_bytes'] / 2**20:.0f}",
                                 num(ort_rss, ".0f")])
                print(" | ".join(cpp_rows[-1]), file=sys.stderr, flush=True)
        if not args.skip_pytorch:
            out = os.path.join(folder, "py")
            gen_s = float("nan")
            if not (args.reuse and os.path.exists(out + "/run.py")):
                gen_s = timed([cleave, "codegen", model, "--lang", "pytorch", "--plan", plan,
                               "-o", out, "--force"])
            run_py = ["/usr/bin/python3", out + "/run.py"] + inputs
            shutil.rmtree(out + "/o", ignore_errors=True)
            shutil.rmtree(out + "/r", ignore_errors=True)
            sh(run_py + ["--output-dir", out + "/o"])
            sh([cleave, "run", model, "--output-dir", out + "/r"] + inputs)
            diff = max(float(np.max(np.abs(np.load(os.path.join(out, "o", f)) -
                                           np.load(os.path.join(out, "r", f)))))
                       for f in os.listdir(out + "/o"))
            parallel = lambda: latency(run_py + runs)[0]  # noqa: E731
            sequential = lambda: latency(run_py + runs + ["--sequential"])[0]  # noqa: E731
            # The paper's baseline: the same nodes on one thread.
            sequential_1t = lambda: latency(run_py + runs + ["--sequential", "--threads", "1"])[0]  # noqa: E731,E501
            interpreter = lambda: latency([cleave, "run", model, "--plan", plan] + inputs +  # noqa: E731
                                          runs)[0]
            par_ms = seq_ms = seq1_ms = cleave_ms = float("nan")
            if name in timed_names:
                par_ms, seq_ms, seq1_ms, cleave_ms = alternate_all(
                    [parallel, sequential, sequential_1t, interpreter])
            py_rows.append([name, num(gen_s, ".2f"), num(seq1_ms, ".2f"), num(seq_ms, ".2f"),
                            num(par_ms, ".2f"), num(seq1_ms / par_ms, ".2f"),
                            num(seq_ms / par_ms, ".2f"), num(cleave_ms, ".2f"),
                            num(par_ms / cleave_ms, ".2f"), f"{diff:.1e}"])
            print(" | ".join(py_rows[-1]), file=sys.stderr, flush=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if cpp_rows:
        print("| model | plan | generate s | build s | generated ms | cleave run ms | ORT ms | "
              "generated / cleave run | generated / ORT | bit-identical | binary MiB | cleave MiB | "
              "generated RSS MiB | cleave RSS MiB | ORT RSS MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for row in cpp_rows:
            print("| " + " | ".join(row) + " |")
        print()
    if py_rows:
        print("| model | generate s | sequential 1 thread ms | sequential 2 threads ms | "
              "2 workers x 1 thread ms | speedup vs 1 thread | speedup vs 2 threads | "
              "cleave run (same plan) ms | 2 workers / cleave run | max abs diff vs cleave |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in py_rows:
            print("| " + " | ".join(row) + " |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
