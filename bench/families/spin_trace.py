#!/usr/bin/python3
"""Summarise spin_trace.sh's folder: per mode, median over passes of the run's median ms,
and per worker of the lc plan, its tasks' traced time against the same nodes' time in the
sequential plan's trace of the same pass, and its waits."""
import json, statistics, sys, glob, os, collections
D = sys.argv[1]
lc = json.load(open(os.path.join(D, "lc.json")))
worker_of = {t["task"]: t["worker"] for t in lc["tasks"]}
pred = {t["task"]: (t["finish"] - t["start"]) * 1e6 for t in lc["tasks"]}
def trace(path):
    ev = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    return {e["name"].split("@")[0]: (e["dur"], e.get("args", {}).get("wait_us", 0)) for e in ev}
def ms(path):
    d = json.load(open(path))
    return d.get("latency_ms", {}).get("median")
print("lc predicted (plan file) ms:", lc["makespan"] * 1e3)
for mode in ("default", "spin0", "spin300k", "seq"):
    runs = sorted(glob.glob(os.path.join(D, f"{mode}-*.out")))
    meds = [ms(r) for r in runs if os.path.getsize(r) > 0]
    meds = [m for m in meds if m is not None]
    print(f"{mode}: run median ms over passes {statistics.median(meds) if meds else None} ({[round(m,2) for m in meds]})")
    if mode == "seq": continue
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for i in range(1, 10):
        p, s = os.path.join(D, f"{mode}-{i}.json"), os.path.join(D, f"seq-{i}.json")
        if not (os.path.exists(p) and os.path.exists(s)): continue
        a, b = trace(p), trace(s)
        sums = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
        for name, (dur, wait) in a.items():
            w = worker_of.get(name)
            if w is None or name not in b: continue
            sums[w][0] += dur; sums[w][1] += b[name][0]; sums[w][2] += wait; sums[w][3] += pred[name]; sums[w][4] += 1
        for w, v in sums.items():
            for k, x in zip(("traced", "seq", "wait", "pred", "n"), v): rows[w][k].append(x)
    for w, r in sorted(rows.items()):
        med = {k: statistics.median(v) for k, v in r.items()}
        print(f"  {w}: {int(med['n'])} tasks: traced {med['traced']:.0f} us, same nodes in the sequential trace {med['seq']:.0f} us ({med['traced']/med['seq']:.2f}x), predicted {med['pred']:.0f} us, waits {med['wait']:.0f} us")
