#!/usr/bin/env python3
"""Where a second intra-op thread starts to pay, from cached cost profiles.

Reads every 2-thread profile `cleave plan --costs profile` cached (PROFILES, default
~/.cache/cleave/profiles/*-t2-*.json), sets aside those with disturbed blocks, and prints per
octave of work the median 2-thread / 1-thread time of the nodes: convolutions by FLOPs, other
nodes by bytes written. The thresholds of src/runtime/intra_op_team.h come from these tables
(docs/results/heldout-speed.md, 2026-11-29).

Usage: /usr/bin/python3 bench/profile_crossover.py [PROFILES...]
"""
import collections
import glob
import json
import math
import os
import sys


def octaves(rows, key):
    buckets = collections.defaultdict(list)
    for row in rows:
        if key(row) > 0:
            buckets[int(math.floor(math.log2(key(row))))].append(row)
    for octave in sorted(buckets):
        ratios = sorted(r["seconds"][1] / r["seconds"][0] for r in buckets[octave])
        t1 = sorted(r["seconds"][0] * 1e6 for r in buckets[octave])
        print(f"  [2^{octave}, 2^{octave + 1}): {len(ratios):4} nodes, 1 thread {t1[len(t1) // 2]:7.1f} us,"
              f" 2/1 threads median {ratios[len(ratios) // 2]:.2f}"
              f" [{ratios[len(ratios) // 4]:.2f}, {ratios[3 * len(ratios) // 4]:.2f}]")


def main():
    paths = sys.argv[1:] or glob.glob(os.path.expanduser("~/.cache/cleave/profiles/*-t2-*.json"))
    rows, used = [], 0
    for path in paths:
        with open(path) as f:
            profile = json.load(f)
        if any(profile.get("disturbed_blocks", [])):
            continue
        used += 1
        rows += [n for n in profile["nodes"] if len(n["seconds"]) >= 2 and n["seconds"][0] > 0]
    print(f"{used} undisturbed profiles of {len(paths)}, {len(rows)} nodes")
    print("Conv by FLOPs:")
    octaves([r for r in rows if r["op"] == "Conv"], lambda r: r["flops"])
    print("other nodes (not Conv, Gemm, views) by output bytes:")
    octaves([r for r in rows if r["op"] not in ("Conv", "Gemm", "Reshape", "Flatten")],
            lambda r: r["output_bytes"])


if __name__ == "__main__":
    main()
