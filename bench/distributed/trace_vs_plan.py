#!/usr/bin/python3
"""Where a plan's time goes on the ranks against where the simulator put it, per rank.

    trace_vs_plan.py PLAN.json TRACE.json [TRACE.json ...]

PLAN.json: a plan file (`cleave plan --machine M -o PLAN.json`: its tasks' predicted start and
finish, its task graph with the machine's endpoint_bandwidth). TRACE.json: the Chrome traces of
`emulated_cluster.sh ... cleave run MODEL --plan PLAN.json --trace TRACE.json` (ranks on one
clock; one run each, so run it several times). Per rank one markdown row, measured figures the
median over the traces:

- compute: the rank's task times. Predicted: each task's finish - start less its sends.
- sends: what the rank does between a task and the next one's wait (copying the outputs other
  ranks read into messages and posting them). Predicted: bytes / endpoint_bandwidth per other
  rank that reads a task's output (the simulator's send_seconds; the largest value to each).
- waits: the rank's waits for inputs (the trace's wait_us, and the first task's start).
  Predicted: the gaps between the rank's predicted tasks.
- last end: the rank's last task's end.
"""
import json
import statistics
import sys


def load_plan(path):
    try:
        plan = json.load(open(path))
        graph = plan["task_graph"]
        workers = plan["workers"]
        placed = {t["task"]: t for t in plan["tasks"]}
        worker_of = {t["task"]: workers.index(t["worker"]) for t in plan["tasks"]}
        order = plan["order"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"{path}: not a plan file with its task graph ({error!r}); expected "
                 "`cleave plan --machine M -o PLAN.json`")
    return plan, graph, placed, worker_of, order


def send_seconds(name, graph, worker_of, output_bytes):
    bandwidth = graph.get("endpoint_bandwidth") or 0
    if not bandwidth:
        return 0.0
    to_worker = {}
    for producer, reader in graph["edges"]:
        if producer != name or worker_of[reader] == worker_of[name]:
            continue
        to_worker[worker_of[reader]] = max(to_worker.get(worker_of[reader], 0),
                                           output_bytes[producer])
    return sum(b / bandwidth for b in to_worker.values())


def load_trace(path, names):
    try:
        events = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"{path}: not a Chrome trace ({error!r})")
    by_name = {e["name"]: e for e in events}
    missing = [n for n in names if n not in by_name]
    if missing:
        sys.exit(f"{path}: no event for task '{missing[0]}' of the plan ({len(missing)} missing): "
                 "a trace of another plan?")
    return by_name


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    plan, graph, placed, worker_of, order = load_plan(sys.argv[1])
    output_bytes = {}
    for task in graph["tasks"]:
        value = task["output_bytes"]
        output_bytes[task["name"]] = sum(value) if isinstance(value, list) else value
    traces = [load_trace(path, list(placed)) for path in sys.argv[2:]]
    print(f"Predicted makespan {plan['makespan'] * 1e3:.2f} ms; {len(traces)} traces.")
    print()
    print("| rank | tasks | compute ms: predicted, measured | sends ms: predicted, measured | "
          "waits ms: predicted, measured | last end ms: predicted, measured |")
    print("|---|---:|---|---|---|---|")
    for rank, names in enumerate(order):
        if not names:
            continue
        compute = sends = waits = 0.0
        previous_end = 0.0
        for name in names:
            send = send_seconds(name, graph, worker_of, output_bytes)
            waits += placed[name]["start"] - previous_end
            sends += send
            compute += placed[name]["finish"] - placed[name]["start"] - send
            previous_end = placed[name]["finish"]
        measured = {"compute": [], "sends": [], "waits": [], "end": []}
        for trace in traces:
            wait = lambda n: trace[n].get("args", {}).get("wait_us", 0)
            measured["compute"].append(sum(trace[n]["dur"] for n in names) / 1e3)
            measured["waits"].append((sum(wait(n) for n in names) + trace[names[0]]["ts"] -
                                      wait(names[0])) / 1e3)
            measured["sends"].append(sum(
                max(0.0, trace[b]["ts"] - wait(b) - trace[a]["ts"] - trace[a]["dur"])
                for a, b in zip(names, names[1:])) / 1e3)
            measured["end"].append((trace[names[-1]]["ts"] + trace[names[-1]]["dur"]) / 1e3)
        m = {k: statistics.median(v) for k, v in measured.items()}
        print(f"| {rank} | {len(names)} | {compute * 1e3:.2f}, {m['compute']:.2f} | "
              f"{sends * 1e3:.2f}, {m['sends']:.2f} | {waits * 1e3:.2f}, {m['waits']:.2f} | "
              f"{previous_end * 1e3:.2f}, {m['end']:.2f} |")


if __name__ == "__main__":
    main()
