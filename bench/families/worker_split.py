#!/usr/bin/python3
"""Summarises worker_split.sh's folder: per plan, the median over passes of the run's median ms,
and per worker its tasks' traced time (last traced run) against the same nodes in the
sequential plan's trace of the same pass, and its waits.
Usage: worker_split.py OUT [VARIANT...]"""
import collections, glob, json, os, statistics, sys

D = sys.argv[1]
variants = sys.argv[2:] or ["seq", "one", "idle", "idle_free", "idle_core1", "lc", "swap"]


def trace(path):
    events = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    return {e["name"].split("@")[0]: (e["dur"], e.get("tid"), e.get("args", {}).get("wait_us", 0))
            for e in events}


def median_ms(path):
    try:
        return json.load(open(path)).get("latency_ms", {}).get("median")
    except (ValueError, OSError):
        return None


for v in variants:
    meds = [median_ms(p) for p in sorted(glob.glob(os.path.join(D, f"{v}-*.out")))]
    meds = [m for m in meds if m is not None]
    if not meds:
        continue
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for i in range(1, 20):
        p = os.path.join(D, f"{v}-{i}.trace.json")
        s = os.path.join(D, f"seq-{i}.trace.json")
        if not (os.path.exists(p) and os.path.exists(s)):
            continue
        a, b = trace(p), trace(s)
        sums = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
        for name, (dur, tid, wait) in a.items():
            if name not in b:
                continue
            sums[tid][0] += dur
            sums[tid][1] += b[name][0]
            sums[tid][2] += wait
            sums[tid][3] += 1
        for w, x in sums.items():
            for k, y in zip(("traced", "seq", "wait", "n"), x):
                rows[w][k].append(y)
    print(f"{v}: run median ms over passes {statistics.median(meds):.3f} "
          f"({', '.join(f'{m:.2f}' for m in meds)})")
    for w, r in sorted(rows.items(), key=lambda kv: str(kv[0])):
        m = {k: statistics.median(x) for k, x in r.items()}
        print(f"  worker {w}: {int(m['n'])} tasks: traced {m['traced']:.0f} us, same nodes in "
              f"the sequential trace {m['seq']:.0f} us ({m['traced'] / m['seq']:.2f}x), "
              f"waits {m['wait']:.0f} us")
