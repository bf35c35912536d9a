#!/usr/bin/env python3
# milp and heft on small random task graphs with priced message ends: each planner's estimate
# (notes.planner_makespan) beside the simulator's prediction of its plan.
#
#   /usr/bin/python3 bench/scheduling/priced_random_graphs.py CLEAVE [--seeds 12]
#
# Seeds 1..N: 7-10 tasks on 3 devices (the third twice as fast), 1-2 producers per task, 100-600
# byte values over 100 B/s links with 0.5 s latency, endpoint_bandwidth 200; every third graph's
# last task is a Concat (copies_remote_inputs), every even one reads a model input in its first
# task and gathers a model output from its last. One line per seed: seed, tasks, then per
# planner (estimate, simulated, status).
import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path


def graph(seed):
    r = random.Random(seed)
    n, d = r.randint(7, 10), 3
    tasks = []
    for i in range(n):
        base = round(r.uniform(1, 10), 2)
        tasks.append({"name": f"t{i}", "time": [base, base, round(base * 0.5, 3)],
                      "output_bytes": r.choice([100, 300, 600])})
    edges = set()
    for j in range(1, n):
        for i in r.sample(range(j), min(j, r.randint(1, 2))):
            edges.add((i, j))
    if seed % 3 == 0:
        tasks[-1]["copies_remote_inputs"] = True
    if seed % 2 == 0:
        tasks[0]["model_inputs"] = [{"name": "x", "bytes": 300}]
        tasks[-1]["model_outputs"] = [{"name": "y", "bytes": 300}]
    return {"devices": [{"name": f"d{k}"} for k in range(d)],
            "bandwidth": [[0 if a == b else 100 for b in range(d)] for a in range(d)],
            "latency": [[0 if a == b else 0.5 for b in range(d)] for a in range(d)],
            "endpoint_bandwidth": 200, "tasks": tasks,
            "edges": [[f"t{i}", f"t{j}"] for i, j in sorted(edges)]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cleave")
    parser.add_argument("--seeds", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(1, args.seeds + 1):
            path = Path(folder) / f"g{seed}.json"
            text = graph(seed)
            path.write_text(json.dumps(text))
            row = [seed, len(text["tasks"])]
            for algo in ("milp", "heft"):
                plan_path = Path(folder) / f"p{seed}{algo}.json"
                done = subprocess.run([args.cleave, "schedule", str(path), "--algo", algo, "-o",
                                       str(plan_path), "--time-limit", "20"],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"{args.cleave} schedule {path} --algo {algo}: {done.stderr.strip()}")
                plan = json.loads(plan_path.read_text())
                row.append((round(plan["notes"].get("planner_makespan", float("nan")), 3),
                            round(plan["makespan"], 3), plan["notes"].get("status")))
            print(*row, flush=True)


if __name__ == "__main__":
    main()
