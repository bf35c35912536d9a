#!/usr/bin/python3
"""Tabulates `cleave bench --families --json` files (families.sh): auto's choice beside the
fastest family measured in the same run, and measured / predicted of the chosen plan."""
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
        fastest = min(families, key=lambda r: r["measured_seconds"])
        yield int(cores), name, chosen, fastest


def main():
    folder = sys.argv[1]
    print("| cores | model | auto's choice | predicted ms | measured ms | meas/pred | "
          "fastest family measured | its ms | auto / fastest |")
    print("|---:|---|---|---:|---:|---:|---|---:|---:|")
    for cores, name, chosen, fastest in sorted(rows(folder), key=lambda r: (r[0], r[1])):
        print(f"| {cores} | {name} | {chosen['family']}: {chosen['configuration']} | "
              f"{chosen['predicted_seconds'] * 1e3:.2f} | {chosen['measured_seconds'] * 1e3:.2f} | "
              f"{chosen['ratio']:.2f} | {fastest['family']}: {fastest['configuration']} | "
              f"{fastest['measured_seconds'] * 1e3:.2f} | "
              f"{chosen['measured_seconds'] / fastest['measured_seconds']:.3f} |")


if __name__ == "__main__":
    main()
