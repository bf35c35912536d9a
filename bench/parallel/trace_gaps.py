#!/usr/bin/python3
"""Where a parallel run's time went, per worker, from a `cleave run --trace` file: the span from
the worker's start (its first task's start less that task's wait) to its last task's end, the
time inside tasks, the time waiting for inputs, and the rest (the executor's own work between
tasks), also per task.

Usage: /usr/bin/python3 bench/parallel/trace_gaps.py TRACE.json [TRACE.json ...]
"""
import json
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| trace | worker | tasks | span us | in tasks us | waiting us | between tasks us | per task us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in sys.argv[1:]:
        with open(path) as handle:
            events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
        for worker in sorted({e["tid"] for e in events}):
            mine = sorted((e for e in events if e["tid"] == worker), key=lambda e: e["ts"])
            span = mine[-1]["ts"] + mine[-1]["dur"] - (mine[0]["ts"] - mine[0]["args"]["wait_us"])
            busy = sum(e["dur"] for e in mine)
            waiting = sum(e["args"]["wait_us"] for e in mine)
            between = span - busy - waiting
            print(f"| {path} | {worker} | {len(mine)} | {span:.0f} | {busy:.0f} | {waiting:.0f} | "
                  f"{between:.0f} | {between / len(mine):.2f} |")


if __name__ == "__main__":
    main()
