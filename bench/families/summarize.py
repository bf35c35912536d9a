#!/usr/bin/python3
"""Tabulates `cleave bench --families --json` files (families.sh): auto's choice by prediction
and what `run --plan auto` runs (the plan its timed check keeps), each beside the fastest
family measured in the same run, and measured / predicted of the chosen plan."""
import glob
import json
import os
import sys


def rows(folder):
    for path in sorted(glob.glob(os.path.join(folder, "*_w*.json"))):
        name, cores = os.path.basename(path)[:-5].rsplit("_w", 1)
        with open(path) as f:
            report = json.load(f)
        families = report["families"]
        chosen = next(r for r in families if r["chosen"])
        # Files from before the check was timed mark no row: auto then ran its choice.
        runs = next((r for r in families if r.get("auto_runs")), chosen)
        fastest = min(families, key=lambda r: r["measured_seconds"])
        yield int(cores), name, chosen, runs, fastest


def label(row):
    return f"{row['family']}: {row['configuration']}"


def main():
    folder = sys.argv[1]
    print("| cores | model | auto's choice | predicted ms | measured ms | meas/pred | "
          "auto runs | its ms | fastest family measured | its ms | choice / fastest | "
          "auto runs / fastest |")
    print("|---:|---|---|---:|---:|---:|---|---:|---|---:|---:|---:|")
    for cores, name, chosen, runs, fastest in sorted(rows(folder), key=lambda r: (r[0], r[1])):
        best = fastest["measured_seconds"]
        print(f"| {cores} | {name} | {label(chosen)} | "
              f"{chosen['predicted_seconds'] * 1e3:.2f} | {chosen['measured_seconds'] * 1e3:.2f} | "
              f"{chosen['ratio']:.2f} | {'same' if runs is chosen else label(runs)} | "
              f"{runs['measured_seconds'] * 1e3:.2f} | {label(fastest)} | {best * 1e3:.2f} | "
              f"{chosen['measured_seconds'] / best:.3f} | {runs['measured_seconds'] / best:.3f} |")


if __name__ == "__main__":
    main()
