#!/usr/bin/python3
"""Plans that separate a multi-worker plan's costs: from a 2-worker plan LC (cleave plan -o),
writes into OUT
  one.json     every task on one worker, in LC's order merged by predicted start (1 worker,
               run on the caller's thread);
  idle.json    the same order on worker 0 of a 2-worker plan whose worker 1 has no task
               (a worker thread of its own, pinned, with the hand-off; nothing crosses cores);
  idle_free.json  idle.json with both workers allowed on both cores (not pinned to one);
  idle_core1.json idle.json with worker 0 pinned to core 1;
  swap.json    LC with the workers' cores exchanged (worker 0 on core 1), to tell the core
               from the plan.
Usage: worker_variants.py LC OUT"""
import copy, json, os, sys

lc = json.load(open(sys.argv[1]))
out = sys.argv[2]
os.makedirs(out, exist_ok=True)
merged = [t["task"] for t in sorted(lc["tasks"], key=lambda t: (t["start"], t["finish"]))]
first = lc["workers"][0]


def write(name, plan):
    with open(os.path.join(out, name), "w") as f:
        json.dump(plan, f)


one = copy.deepcopy(lc)
one["workers"] = [first]
one["order"] = [merged]
one["transfers"] = []
for t in one["tasks"]:
    t["worker"] = first
g = one["task_graph"]
g["devices"] = g["devices"][:1]
g["bandwidth"] = [[0.0]]
if "latency" in g:
    g["latency"] = [[0.0]]
for t in g["tasks"]:
    for key in ("time", "busy_time"):
        if key in t:
            t[key] = t[key][:1]
one["configuration"] = "lc order, 1 worker x 1 thread"
write("one.json", one)

idle = copy.deepcopy(lc)
idle["order"] = [merged, []]
idle["transfers"] = []
for t in idle["tasks"]:
    t["worker"] = first
idle["configuration"] = "lc order on worker 0 of 2, worker 1 idle"
write("idle.json", idle)

free = copy.deepcopy(idle)
both = sorted(set(c for d in free["task_graph"]["devices"] for c in d["cores"]))
for d in free["task_graph"]["devices"]:
    d["cores"] = both
free["configuration"] = "lc order on worker 0 of 2, not pinned"
write("idle_free.json", free)

core1 = copy.deepcopy(idle)
devices = core1["task_graph"]["devices"]
devices[0]["cores"], devices[1]["cores"] = devices[1]["cores"], devices[0]["cores"]
core1["configuration"] = "lc order on worker 0 of 2, on core 1"
write("idle_core1.json", core1)

swap = copy.deepcopy(lc)
devices = swap["task_graph"]["devices"]
devices[0]["cores"], devices[1]["cores"] = devices[1]["cores"], devices[0]["cores"]
swap["configuration"] = "lc, cores exchanged"
write("swap.json", swap)
print(f"{len(merged)} tasks; lc worker 0 has {len(lc['order'][0])}, worker 1 {len(lc['order'][1])}")
