#!/usr/bin/python3
"""Summarises caller_ab.sh's folder: per model and pass, the median run of the lc plan and of the
sequential executor with binary A (main) and B (branch), their ratios, and the medians over passes.
Usage: caller_ab.py OUT"""
import json, glob, statistics, sys, collections
D = sys.argv[1]
r = collections.defaultdict(dict)
for p in glob.glob(f"{D}/*.*.[AB].*.json"):
    m, kind, b, i, _ = p.split("/")[-1].rsplit(".", 4)
    try: r[(m, kind, b)][int(i)] = json.load(open(p))["latency_ms"]["median"]
    except Exception: pass
models = sorted(set(k[0] for k in r))
print("| model | pass | main: lc plan ms | main: sequential ms | main lc/seq | branch: lc plan ms | branch: sequential ms | branch lc/seq | branch lc / main lc |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for m in models:
    rows = []
    for i in sorted(r[(m, "lc", "A")]):
        try:
            a, sa, b, sb = r[(m, "lc", "A")][i], r[(m, "seq", "A")][i], r[(m, "lc", "B")][i], r[(m, "seq", "B")][i]
        except KeyError: continue
        rows.append((a, sa, b, sb))
        print(f"| {m} | {i} | {a:.3f} | {sa:.3f} | {a/sa:.3f} | {b:.3f} | {sb:.3f} | {b/sb:.3f} | {b/a:.3f} |")
    if rows:
        med = lambda k: statistics.median(k)
        print(f"| {m} | median | {med([x[0] for x in rows]):.3f} | {med([x[1] for x in rows]):.3f} | {med([x[0]/x[1] for x in rows]):.3f} | {med([x[2] for x in rows]):.3f} | {med([x[3] for x in rows]):.3f} | {med([x[2]/x[3] for x in rows]):.3f} | {med([x[2]/x[0] for x in rows]):.3f} |")
