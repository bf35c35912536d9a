#!/usr/bin/env bash
# MILP-SPLIT's module solves one after another against one process per core, alternating in one
# run, on the scheduling benchmark's 10-module single-channel RWNN. Writes a markdown table.
# Usage (from the repository root): bench/scheduling/solver_processes.sh [build/cleave] [rounds]
set -euo pipefail
cleave=${1:-build/cleave}
rounds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/rwnn_tasks.sh"
rwnn_tasks "$cleave" 10 "$work/tasks.json"
echo "| round | solver processes | solve s | makespan ms | status |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for processes in 1 0; do
    "$cleave" schedule "$work/tasks.json" --algo milp-split --coarsen --time-limit 60 --no-bound \
      --solver-processes "$processes" --json 2>/dev/null |
      python3 -c "import json, sys; d = json.load(sys.stdin); n = d['notes']
print(f\"| $round | ${processes/#0/one per core ($(nproc))} | {d['solve_seconds']:.2f} | {d['makespan_seconds'] * 1e3:.4f} | {n['status']} |\")"
  done
done
