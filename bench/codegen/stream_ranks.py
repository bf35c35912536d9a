#!/usr/bin/python3
"""A generated rank program of a multi-sample plan against `mpirun cleave run` of that plan.

    /usr/bin/python3 bench/codegen/stream_ranks.py --cleave build/cleave [--model squeezenet1_0]
        [--strategy pipeline] [--samples 32] [--rounds 3] [--repeat 3] [--work DIR] [--threads]

Plans the corpus model for 2 ranks (a machine file of two equal one-thread ranks, static costs,
`cleave plan --strategy S --machine M --samples N`), generates it with `cleave codegen --plan
P --samples N --lang cpp --ranks --layouts blocked`, builds it, checks every sample's output
bit for bit against `mpirun cleave run --plan gen/plan.json --samples N --seed s` (cleave run
writes its sample 0, whose inputs are seed s), then times whole streams of both sides
interleaved A B B A per round under `mpirun -np 2 -x OMP_NUM_THREADS=1`, and prints the
medians, samples/s and each round's paired ratio (generated / cleave run).

With --threads the same plan runs on two worker threads of one process instead: generated
without --ranks, both sides started without mpirun (`cleave run --plan gen/plan.json --samples
N`), everything else the same. The generated side's median per-sample latency is printed too.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

MODELS_DIR = os.environ.get("CLEAVE_MODELS_DIR", os.path.expanduser("~/.cache/cleave/models"))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x",
          "OMP_NUM_THREADS=1"]
MACHINE = {"devices": [{"name": "rank0"}, {"name": "rank1"}],
           "bandwidth": [[0, 4e9], [4e9, 0]], "latency": [[0, 2e-5], [2e-5, 0]]}


def sh(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def stream_ms(args):
    return json.loads(sh(args + ["--json"]))["latency_ms"]["median"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cleave", default="build/cleave")
    parser.add_argument("--model", default="squeezenet1_0")
    parser.add_argument("--strategy", default="pipeline")
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default="/tmp/cleave_stream_ranks")
    parser.add_argument("--checks", type=int, default=-1,
                        help="samples checked bit for bit (default: all)")
    parser.add_argument("--threads", action="store_true",
                        help="worker threads of one process instead of MPI ranks")
    args = parser.parse_args()
    launch = [] if args.threads else MPIRUN
    cleave = os.path.abspath(args.cleave)
    manifest = json.load(open(os.path.join(MODELS_DIR, "manifest.json")))["models"]
    model = os.path.join(MODELS_DIR, manifest[args.model]["file"])
    n = args.samples
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    work = lambda name: os.path.join(args.work, name)  # noqa: E731
    json.dump(MACHINE, open(work("two.json"), "w"))
    plan = json.loads(sh([cleave, "plan", model, "--strategy", args.strategy, "--machine",
                          work("two.json"), "--samples", str(n), "--costs", "static", "--json",
                          "-o", work("plan.json")]))
    gen = work("gen")
    sh([cleave, "codegen", model, "--plan", work("plan.json"), "--samples", str(n), "--lang",
        "cpp", "--layouts", "blocked", "-o", gen] + ([] if args.threads else ["--ranks"]))
    sh(["cmake", "-S", gen, "-B", gen + "/build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
    sh(["cmake", "--build", gen + "/build"])
    exe = gen + "/build/model_run"
    reference = [cleave, "run", model, "--plan", gen + "/plan.json", "--layouts", "blocked",
                 "--samples", str(n)]

    sh(launch + [exe, "--output-dir", work("out")])
    checks = n if args.checks < 0 else args.checks
    same = 0
    for s in range(checks):
        sh(launch + reference + ["--seed", str(s), "--output-dir", work(f"ref{s}")])
        names = os.listdir(work(f"ref{s}"))
        same += all(np.array_equal(np.load(os.path.join(work("out"), f"sample_{s}", f)),
                                   np.load(os.path.join(work(f"ref{s}"), f))) for f in names)
    print(f"bit-identical: {same} of {checks} samples", flush=True)

    runs = ["--warmup", "1", "--repeat", str(args.repeat)]
    generated, interpreted, ratios = [], [], []
    for r in range(args.rounds):
        a = stream_ms(launch + [exe] + runs)
        b = stream_ms(launch + reference + runs)
        c = stream_ms(launch + reference + runs)
        d = stream_ms(launch + [exe] + runs)
        generated += [a, d]
        interpreted += [b, c]
        ratios.append((a + d) / (b + c))
        print(f"round {r}: generated {a:.1f} {d:.1f} ms, cleave run {b:.1f} {c:.1f} ms", flush=True)
    report = json.loads(sh(launch + [exe, "--warmup", "1", "--json"]))
    print(f"generated per-sample latency: median {report['sample_latency_ms']['median']:.1f} ms, "
          f"max {report['sample_latency_ms']['max']:.1f} ms", flush=True)
    g, i = statistics.median(generated), statistics.median(interpreted)
    print(f"stages: {plan.get('notes', {}).get('stage_nodes')}, predicted {plan['makespan'] * 1e3:.1f} ms")
    print("| side | stream median ms | samples/s |")
    print("|---|---|---|")
    side = "worker-thread" if args.threads else "rank"
    print(f"| generated {side} program | {g:.1f} | {n / g * 1e3:.1f} |")
    print(f"| {'' if args.threads else 'mpirun '}cleave run, same plan | {i:.1f} | {n / i * 1e3:.1f} |")
    print(f"paired ratios generated / cleave run per round: {', '.join(f'{x:.3f}' for x in ratios)}"
          f"; median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    sys.exit(main())
