#!/usr/bin/python3
"""Where a 2-worker plan's tasks lose time against the sequential plan's trace of the same
pass: per worker, its tasks that read a value made on the other worker against those that read
only their own, and per op type of the latter. Reads spin_trace.sh folders (MODE-i.json beside
seq-i.json) and worker_split.sh folders (MODE-i.trace.json beside seq-i.trace.json); LC.json is
the 2-worker plan whose workers name the tasks' places.
Usage: remote_reads.py FOLDER MODE [MODE...]"""
import collections, json, os, statistics, sys

D, modes = sys.argv[1], sys.argv[2:]
lc = json.load(open(os.path.join(D, "lc.json")))
worker_of = {t["task"]: t["worker"] for t in lc["tasks"]}
remote = collections.defaultdict(list)
size = {t["name"]: t.get("output_bytes", 0) for t in lc["task_graph"]["tasks"]}
for edge in lc["task_graph"]["edges"]:
    a, b = edge[0], edge[1]
    if worker_of[a] != worker_of[b]:
        remote[b].append(a)


def trace(path):
    events = json.load(open(path))["traceEvents"]
    return {e["name"].split("@")[0]: e["dur"] for e in events if e.get("ph") == "X"}


def pairs(mode):
    for i in range(1, 20):
        for suffix in (".json", ".trace.json"):
            a, s = os.path.join(D, f"{mode}-{i}{suffix}"), os.path.join(D, f"seq-{i}{suffix}")
            if os.path.exists(a) and os.path.exists(s) and not a.endswith(".trace.trace.json"):
                try:
                    yield trace(a), trace(s)
                except (KeyError, ValueError):
                    pass
                break


def op(name):
    return name.split("/")[-1].split("_")[0]


for mode in modes:
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    ops = collections.defaultdict(lambda: collections.defaultdict(list))
    for a, s in pairs(mode):
        g = collections.defaultdict(lambda: [0.0, 0.0, 0])
        o = collections.defaultdict(lambda: [0.0, 0.0])
        for name, dur in a.items():
            if name not in s:
                continue
            key = (worker_of[name], "reads the other worker's values" if remote[name]
                   else "reads its own values only")
            g[key][0] += dur
            g[key][1] += s[name]
            g[key][2] += 1
            if not remote[name] and worker_of[name] == lc["workers"][0]:
                o[op(name)][0] += dur
                o[op(name)][1] += s[name]
        for k, v in g.items():
            for field, x in zip(("traced", "seq", "n"), v):
                groups[k][field].append(x)
        for k, v in o.items():
            ops[k]["traced"].append(v[0])
            ops[k]["seq"].append(v[1])
    for k, r in sorted(groups.items()):
        m = {f: statistics.median(x) for f, x in r.items()}
        print(f"{mode}: {k[0]}, {int(m['n'])} tasks that {k[1]}: {m['traced']:.0f} us, "
              f"sequential {m['seq']:.0f} us ({m['traced'] / m['seq']:.2f}x, "
              f"{m['traced'] - m['seq']:+.0f} us)")
    for k, r in sorted(ops.items(), key=lambda kv: -statistics.median(kv[1]["traced"])):
        t, q = statistics.median(r["traced"]), statistics.median(r["seq"])
        print(f"  {mode}: worker 0's own-value {k}: {t:.0f} us, sequential {q:.0f} us "
              f"({t / q:.2f}x)")
reads = [(a, b) for b, l in remote.items() for a in l if worker_of[b] == lc["workers"][0]]
print(f"worker 0 reads {len(reads)} values of worker 1: {sum(size[a] for a, _ in reads):.0f} "
      f"bytes")
