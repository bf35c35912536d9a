#!/usr/bin/python3
"""Generated C++ programs against `cleave run` of their plan, each side's threads and CPU time.

    /usr/bin/python3 bench/codegen/program_sides.py --cleave build/cleave --model M
        --folder F [--plan P] [--samples N] [--before EXE] [--rounds 4] [--busy K]

F is a folder `cleave codegen` wrote and built (F/build/model_run): one from
bench/codegen/stream_ranks.py --threads --work W (F = W/gen, a stream of N samples) or from
bench/codegen/run.py --keep K --configs lc (F = K/MODEL/cpp_lc_2_workers, --plan K/MODEL/lc.json,
one sample on the model's own input). Sides, run A B C D D C B A per round: the generated
program (`--before EXE`: also an older build of it, e.g. copied before relinking against a
changed runtime), `cleave run --plan` (which follows the host's free cores: folds the workers
onto fewer threads when other processes hold the cores) and `cleave run --plan` with
CLEAVE_FIXED_THREADS=1 (the plan's threads whatever the load). Per run: the median latency of
the process (--warmup, --repeat), the threads it ran the workers on (`plan.threads` / `threads`),
the host's other runnable threads it saw, and from the child's rusage its CPU seconds, voluntary
and involuntary context switches and minor page faults. Prints per-side medians and per-round
paired ratios. --busy K runs K busy processes (`yes`) meanwhile, so that every side that follows
the load folds.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

MODELS_DIR = os.environ.get("CLEAVE_MODELS_DIR", os.path.expanduser("~/.cache/cleave/models"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cleave", default="build/cleave")
    parser.add_argument("--model", required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--plan", help="default: FOLDER/plan.json")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--before", help="an older build of FOLDER's program, timed as a side")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0)
    args = parser.parse_args()
    manifest = json.load(open(os.path.join(MODELS_DIR, "manifest.json")))["models"][args.model]
    model = os.path.join(MODELS_DIR, manifest["file"])
    plan = args.plan or os.path.join(args.folder, "plan.json")
    # One sample runs on the model's own input; a stream on cleave run's seeded ones.
    given = [] if args.samples > 1 else [
        "--input", f"{manifest['input_name']}={os.path.join(MODELS_DIR, manifest['input_file'])}"]
    runs = ["--warmup", str(args.warmup), "--repeat", str(args.repeat), "--json"] + given
    reference = [os.path.abspath(args.cleave), "run", model, "--plan", plan, "--layouts", "blocked"]
    if args.samples > 1:
        reference += ["--samples", str(args.samples)]
    sides = {"generated": ([os.path.join(args.folder, "build", "model_run")], {})}
    if args.before:
        sides["generated before"] = ([args.before], {})
    sides["cleave run"] = (reference, {})
    sides["cleave run fixed"] = (reference, {"CLEAVE_FIXED_THREADS": "1"})
    order = list(sides)
    results = {side: [] for side in order}
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
    try:
        for _ in range(args.rounds):
            for side in order + order[::-1]:
                command, env = sides[side]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run(command + runs, capture_output=True, text=True,
                                     env={**os.environ, **env})
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if out.returncode != 0:
                    raise RuntimeError(f"{' '.join(command + runs)} failed:\n{out.stderr}")
                report = json.loads(out.stdout)
                row = {"ms": report["latency_ms"]["median"],
                       "threads": report.get("plan", {}).get("threads",
                                                             report.get("threads", "plan's")),
                       "other_runnable": report.get("host_load", {}).get("other_runnable", "-"),
                       "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                       "voluntary_cs": after.ru_nvcsw - before.ru_nvcsw,
                       "involuntary_cs": after.ru_nivcsw - before.ru_nivcsw,
                       "minor_faults": after.ru_minflt - before.ru_minflt}
                results[side].append(row)
                print(side, json.dumps(row), flush=True)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    print("| side | median ms | threads per run | median CPU s | voluntary / involuntary "
          "context switches | minor faults |")
    print("|---|---|---|---|---|---|")
    for side in order:
        rows = results[side]
        med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
        print(f"| {side} | {med('ms'):.1f} | {' '.join(str(r['threads']) for r in rows)} | "
              f"{med('cpu_s'):.2f} | {med('voluntary_cs'):.0f} / {med('involuntary_cs'):.0f} | "
              f"{med('minor_faults'):.0f} |")
    for a in order:
        for b in order[order.index(a) + 1:]:
            ratios = [(results[a][2 * r]["ms"] + results[a][2 * r + 1]["ms"]) /
                      (results[b][2 * r]["ms"] + results[b][2 * r + 1]["ms"])
                      for r in range(args.rounds)]
            print(f"paired {a} / {b} per round: {', '.join(f'{x:.3f}' for x in ratios)}; "
                  f"median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    sys.exit(main())
