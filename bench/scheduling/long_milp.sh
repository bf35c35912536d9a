#!/usr/bin/env bash
# Target 3 of the scheduling issue with a long whole-graph MILP: MILP-SPLIT with CORES solver
# processes against whole-graph MILP with CORES CBC threads and LIMIT seconds, on the scheduling
# benchmark's 20-module single-channel RWNN. Prints a markdown table and, from MILP's progress
# lines, when its incumbent first reached MILP-SPLIT's makespan (if it did).
# Usage (from the repository root): bench/scheduling/long_milp.sh [build/cleave] [LIMIT] [CORES]
set -euo pipefail
cleave=${1:-build/cleave}
limit=${2:-900}
cores=${3:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/rwnn_tasks.sh"
rwnn_tasks "$cleave" 20 "$work/tasks.json"
"$cleave" schedule "$work/tasks.json" --algo milp-split --coarsen --time-limit 60 --no-bound \
  --solver-processes "$cores" --json >"$work/split.json" 2>/dev/null
"$cleave" schedule "$work/tasks.json" --algo milp --coarsen --time-limit "$limit" --no-bound \
  --solver-threads "$cores" --json >"$work/milp.json" 2>"$work/milp.progress"
python3 - "$work" "$cores" <<'PY'
import json, re, sys
from pathlib import Path
work = Path(sys.argv[1])
cores = sys.argv[2]
split = json.loads((work / "split.json").read_text())
milp = json.loads((work / "milp.json").read_text())
print("| algorithm | cores | solve s | makespan ms | status |")
print("|---|---|---|---|---|")
for name, report, processes in (("MILP-SPLIT", split, f"{cores} (solver processes)"),
                                ("MILP", milp, f"{cores} (CBC threads)")):
    print(f"| {name} | {processes} | {report['solve_seconds']:.2f} | "
          f"{report['makespan_seconds'] * 1e3:.4f} | {report['notes']['status']} |")
target = split["makespan_seconds"]
reached = None
last = None
for line in (work / "milp.progress").read_text().splitlines():
    match = re.match(r"milp:\s+([\d.]+) s .*incumbent ([\d.eE+-]+) s", line)
    if not match:
        continue
    last = (float(match.group(1)), float(match.group(2)))
    if reached is None and last[1] <= target * (1 + 1e-6):
        reached = last[0]
print()
print(f"MILP-SPLIT makespan {target * 1e3:.4f} ms in {split['solve_seconds']:.2f} s.")
if reached is not None:
    print(f"MILP's incumbent first reached it at {reached:.1f} s: "
          f"{reached / split['solve_seconds']:.1f}x MILP-SPLIT's solve time.")
else:
    print(f"MILP's incumbent never reached it in {milp['solve_seconds']:.1f} s "
          f"(last progress line: {last}): MILP-SPLIT is at least "
          f"{milp['solve_seconds'] / split['solve_seconds']:.1f}x faster to that plan.")
PY
