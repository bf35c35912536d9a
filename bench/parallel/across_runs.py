#!/usr/bin/python3
"""Sets several runs of bench/parallel/run.mjs side by side, per model: planned / ORT, the
best-process ratio and auto's prediction error in each run, and their medians.

On this shared host one run can catch a disturbed stretch for a model (a 2-thread process at
1-thread speed); the median over runs made with the same binary is steadier than any one run.

Usage: /usr/bin/python3 bench/parallel/across_runs.py LABEL=parallel.json [LABEL=...]
A file holding several runs (parallel_other_runs.json) is named LABEL=FILE#RUN_NAME.
"""
import json
import statistics
import sys


def load(argument):
    label, _, path = argument.partition("=")
    path, _, run_name = path.partition("#")
    with open(path) as handle:
        document = json.load(handle)
    if run_name:
        runs = [run for run in document["runs"] if run["name"] == run_name]
        if not runs:
            sys.exit(f"{path}: no run named '{run_name}'")
        document = runs[0]
    return label, {row["name"]: row for row in document["rows"]}


def main():
    if len(sys.argv) < 2 or any("=" not in argument for argument in sys.argv[1:]):
        sys.exit(__doc__)
    runs = [load(argument) for argument in sys.argv[1:]]
    labels = [label for label, _ in runs]
    models = list(runs[0][1])
    header = (
        ["model"]
        + [f"planned / ORT, {label}" for label in labels]
        + ["median", "best processes, median", "auto's prediction error, median", "bitwise equal"]
    )
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 2) + "---|")
    above, within = 0, 0
    for model in models:
        rows = [table[model] for _, table in runs if model in table]
        ratios = [row["parallel_ms"] / row["ort_ms"] for row in rows]
        best = statistics.median(row["best_process_ratio"] for row in rows)
        error = statistics.median(row["prediction_error"] for row in rows)
        bitwise = all(row["bitwise_equal"] for row in rows)
        median = statistics.median(ratios)
        above += median > 1.0
        within += abs(error) <= 0.10
        cells = [model] + [f"{ratio:.3f}" for ratio in ratios]
        cells += [f"{median:.3f}", f"{best:.3f}", f"{error * 100:+.1f}%", "yes" if bitwise else "no"]
        print("| " + " | ".join(cells) + " |")
    print()
    print(
        f"Medians over {len(runs)} runs: planned / ORT above 1.00 on {above} of {len(models)} "
        f"models; auto's prediction within 10% on {within} of {len(models)}."
    )


if __name__ == "__main__":
    main()
