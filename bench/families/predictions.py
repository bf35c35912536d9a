#!/usr/bin/python3
"""Measured / predicted of auto's chosen plan per model, over repeated `families.sh` runs:
medians across the runs of each label. Usage: predictions.py [--every-family] LABEL=DIR[,DIR...]
(each DIR holds one run's MODEL_wN.json files from `cleave bench --families --json`); with
--every-family, one line per model and measured family instead of auto's choice alone; with
--own-predictions, each label's own predicted ms (binaries that predict differently).
Rows are matched by family and configuration, not by which one each binary chose."""
import glob
import json
import os
import statistics
import sys


def chosen_rows(folder, every_family):
    for path in sorted(glob.glob(os.path.join(folder, "*_w*.json"))):
        name, cores = os.path.basename(path)[:-5].rsplit("_w", 1)
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError):
            continue
        for row in report.get("families", []):
            if every_family:
                yield (int(cores), name, row["family"], row["configuration"]), row
            elif row["chosen"]:
                yield (int(cores), name), row


def main():
    every_family = "--every-family" in sys.argv[1:]
    own = "--own-predictions" in sys.argv[1:]
    labels = []
    runs = {}
    for arg in sys.argv[1:]:
        if arg in ("--every-family", "--own-predictions"):
            continue
        label, folders = arg.split("=", 1)
        labels.append(label)
        for folder in folders.split(","):
            for key, row in chosen_rows(folder, every_family):
                runs.setdefault(key, {}).setdefault(label, []).append(row)
    family = "family" if every_family else "auto's choice"
    header = f"| cores | model | {family} |" + ("" if own else " predicted ms |")
    rule = "|---:|---|---|" + ("" if own else "---:|")
    for label in labels:
        if own:
            header += f" {label}: predicted ms |"
            rule += "---:|"
        header += f" {label}: measured ms | {label}: meas/pred | {label}: runs |"
        rule += "---:|---:|---:|"
    if len(labels) == 2:
        header += f" {labels[1]} / {labels[0]} measured |"
        rule += "---:|"
    print(header)
    print(rule)
    for (cores, name, *_), by_label in sorted(runs.items()):
        first = next(iter(by_label.values()))[0]
        chosen = " (auto's choice)" if every_family and first["chosen"] else ""
        line = f"| {cores} | {name} | {first['family']}: {first['configuration']}{chosen} |"
        if not own:
            line += f" {first['predicted_seconds'] * 1e3:.2f} |"
        for label in labels:
            rows = by_label.get(label, [])
            if not rows:
                line += " - | - | - | 0 |" if own else " - | - | 0 |"
                continue
            if own:
                line += f" {statistics.median(r['predicted_seconds'] for r in rows) * 1e3:.2f} |"
            measured = statistics.median(r["measured_seconds"] for r in rows)
            ratio = statistics.median(r["ratio"] for r in rows)
            line += f" {measured * 1e3:.2f} | {ratio:.2f} | {len(rows)} |"
        if len(labels) == 2:
            medians = [statistics.median(r["measured_seconds"] for r in by_label.get(label, []))
                       if by_label.get(label) else None for label in labels]
            line += f" {medians[1] / medians[0]:.3f} |" if all(medians) else " - |"
        print(line)


if __name__ == "__main__":
    main()
