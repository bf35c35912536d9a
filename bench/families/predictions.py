#!/usr/bin/python3
"""Measured / predicted of auto's chosen plan per model, over repeated `families.sh` runs:
medians across the runs of each label. Usage: predictions.py LABEL=DIR[,DIR...] ...
(each DIR holds one run's MODEL_wN.json files from `cleave bench --families --json`)."""
import glob
import json
import os
import statistics
import sys


def chosen_rows(folder):
    for path in sorted(glob.glob(os.path.join(folder, "*_w*.json"))):
        name, cores = os.path.basename(path)[:-5].rsplit("_w", 1)
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError):
            continue
        chosen = next((r for r in report.get("families", []) if r["chosen"]), None)
        if chosen:
            yield (int(cores), name), chosen


def main():
    labels = []
    runs = {}
    for arg in sys.argv[1:]:
        label, folders = arg.split("=", 1)
        labels.append(label)
        for folder in folders.split(","):
            for key, row in chosen_rows(folder):
                runs.setdefault(key, {}).setdefault(label, []).append(row)
    header = "| cores | model | auto's choice | predicted ms |"
    rule = "|---:|---|---|---:|"
    for label in labels:
        header += f" {label}: measured ms | {label}: meas/pred | {label}: runs |"
        rule += "---:|---:|---:|"
    print(header)
    print(rule)
    for (cores, name), by_label in sorted(runs.items()):
        first = next(iter(by_label.values()))[0]
        line = (f"| {cores} | {name} | {first['family']}: {first['configuration']} | "
                f"{first['predicted_seconds'] * 1e3:.2f} |")
        for label in labels:
            rows = by_label.get(label, [])
            if not rows:
                line += " - | - | 0 |"
                continue
            measured = statistics.median(r["measured_seconds"] for r in rows)
            ratio = statistics.median(r["ratio"] for r in rows)
            line += f" {measured * 1e3:.2f} | {ratio:.2f} | {len(rows)} |"
        print(line)


if __name__ == "__main__":
    main()
