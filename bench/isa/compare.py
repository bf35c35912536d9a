#!/usr/bin/env python3
"""cleave capped to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2) against cleave uncapped, on the same CPU.

For each model and thread count: rounds of `cleave run --json` alternating which ISA goes first
(median latency of all timed runs, ratio capped / uncapped), then one run per ISA with
ONEDNN_VERBOSE=1 whose oneDNN primitives are summed by implementation, so that AVX2 paths that
fall to oneDNN's reference kernels (`ref:`) or take a much larger share show up. Each ISA has
its own cache folder, so the layout family is measured per ISA.

  python3 bench/isa/compare.py --cleave build/cleave --models m1.onnx,m2.onnx \
      [--threads 1,2] [--rounds 3] [--runs 10] [--markdown out.md]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

ISAS = {"uncapped": None, "AVX2": "AVX2"}


def environment(isa, cache):
    env = dict(os.environ)
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    env.pop("DNNL_MAX_CPU_ISA", None)
    if ISAS[isa]:
        env["ONEDNN_MAX_CPU_ISA"] = ISAS[isa]
    env["CLEAVE_CACHE_DIR"] = os.path.join(cache, isa)
    return env


def run_json(args, model, threads, isa, cache):
    command = [args.cleave, "run", model, "--threads", str(threads), "--warmup", "3",
               "--repeat", str(args.runs), "--json"]
    out = subprocess.run(command, env=environment(isa, cache), check=True, capture_output=True,
                         text=True, timeout=900).stdout
    return json.loads(out)


def implementations(args, model, threads, isa, cache, family):
    env = environment(isa, cache)
    env["ONEDNN_VERBOSE"] = "1"
    command = [args.cleave, "run", model, "--threads", str(threads), "--layouts", family,
               "--warmup", "1", "--repeat", "3"]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True,
                         timeout=900).stdout
    by_impl = collections.Counter()
    for line in out.splitlines():
        fields = line.split(",")
        if len(fields) < 6 or fields[0] != "onednn_verbose" or fields[1] != "exec":
            continue
        by_impl[f"{fields[3]} {fields[4]}"] += float(fields[-1])
    return by_impl


def arguments(description, runs, models_help="comma-separated ONNX files"):
    """The options both ISA scripts take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cleave", default="build/cleave")
    parser.add_argument("--models", required=True, help=models_help)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--markdown")
    return parser.parse_args()


def interleaved(rounds, measure):
    """Per ISA, the results of `measure(isa)` over the rounds, alternating which goes first."""
    results = {isa: [] for isa in ISAS}
    for round_index in range(rounds):
        order = list(ISAS) if round_index % 2 == 0 else list(reversed(ISAS))
        for isa in order:
            results[isa].append(measure(isa))
    return results


def write_markdown(path, lines):
    if path:
        with open(path, "w") as out:
            out.write("\n".join(lines) + "\n")


def main():
    args = arguments(__doc__.splitlines()[0], runs=10)
    cache = tempfile.mkdtemp(prefix="cleave_isa_")
    lines = ["| model | threads | uncapped ms | AVX2 ms | AVX2 / uncapped | layouts (uncapped, AVX2) "
             "| oneDNN `ref:` share (uncapped, AVX2) | largest oneDNN implementations, uncapped "
             "| the same, AVX2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for model in args.models.split(","):
        name = os.path.basename(model).removesuffix(".onnx")
        for threads in [int(t) for t in args.threads.split(",")]:
            reports = interleaved(args.rounds,
                                  lambda isa: run_json(args, model, threads, isa, cache))
            median = {isa: statistics.median(t for r in reports[isa] for t in r["latency_ms"]["runs"])
                      for isa in ISAS}
            family = {isa: reports[isa][-1]["layouts"]["family"] for isa in ISAS}
            shares = {}
            top = {}
            for isa in ISAS:
                by_impl = implementations(args, model, threads, isa, cache, family[isa])
                total = sum(by_impl.values()) or 1.0
                ref = sum(t for impl, t in by_impl.items() if " ref" in impl)
                shares[isa] = ref / total
                top[isa] = ", ".join(f"{impl} {100 * t / total:.0f}%"
                                     for impl, t in by_impl.most_common(4))
            row = (f"| {name} | {threads} | {median['uncapped']:.2f} | {median['AVX2']:.2f} | "
                   f"{median['AVX2'] / median['uncapped']:.3f} | {family['uncapped']}, "
                   f"{family['AVX2']} | {100 * shares['uncapped']:.1f}%, "
                   f"{100 * shares['AVX2']:.1f}% | {top['uncapped']} | {top['AVX2']} |")
            print(row, flush=True)
            lines.append(row)
    write_markdown(args.markdown, lines)


if __name__ == "__main__":
    sys.exit(main())
