#!/usr/bin/python3
"""A plan file's prediction under both hand-off prices: the value arriving after latency +
bytes / bandwidth (before `shared_memory`), and the reader paying bytes / bandwidth inside its
task, delayed by the latency only (src/plan/simulator.cc with Machine::shared_memory). The
plan file's own task graph (times, busy times, links, task and run seconds), orders as given.
Usage: resimulate.py PLAN.json [PLAN.json...]"""
import json, sys


def simulate(plan, shared):
    g = plan["task_graph"]
    names = [t["name"] for t in g["tasks"]]
    index = {n: i for i, n in enumerate(names)}
    workers = {w: k for k, w in enumerate(plan["workers"])}
    worker = {index[t["task"]]: workers[t["worker"]] for t in plan["tasks"]}
    orders = [[index[n] for n in o] for o in plan["order"]]
    several = sum(1 for o in orders if o) >= 2
    busy = several and all(t.get("busy_time") for t in g["tasks"])
    bandwidth, latency = g["bandwidth"], g.get("latency")
    inputs = {i: [] for i in range(len(names))}
    for edge in g["edges"]:
        a, b = index[edge[0]], index[edge[1]]
        size = edge[2] if len(edge) > 2 else g["tasks"][a].get("output_bytes", 0)
        inputs[b].append((a, size))
    finish, position, free = {}, [0] * len(orders), [0.0] * len(orders)
    task_s, run_s = (g.get("task_seconds", 0), g.get("run_seconds", 0)) if several else (0, 0)
    done, remote_read = 0, 0.0
    while done < len(names):
        progressed = False
        for w, order in enumerate(orders):
            if position[w] == len(order):
                continue
            t = order[position[w]]
            if any(a not in finish for a, _ in inputs[t]):
                continue
            start, reads = free[w], 0.0
            for a, size in inputs[t]:
                if worker[a] == w:
                    start = max(start, finish[a])
                    continue
                lat = latency[worker[a]][w] if latency else 0.0
                per_byte = size / bandwidth[worker[a]][w]
                start = max(start, finish[a] + lat + (0 if shared else per_byte))
                reads += per_byte if shared else 0
            info = g["tasks"][t]
            time = (info["busy_time"] if busy else info["time"])[w]
            finish[t] = start + time + task_s + reads
            remote_read += reads
            free[w] = finish[t]
            position[w] += 1
            done += 1
            progressed = True
        if not progressed:
            raise SystemExit("deadlock")
    return max(finish.values()) + run_s, remote_read


for path in sys.argv[1:]:
    plan = json.load(open(path))
    before, _ = simulate(plan, False)
    after, reads = simulate(plan, True)
    print(f"{path}: {plan.get('configuration')}: file {plan['makespan'] * 1e3:.3f} ms, "
          f"arriving {before * 1e3:.3f} ms, reader pays {after * 1e3:.3f} ms "
          f"(reads {reads * 1e6:.0f} us in all)")
