#!/bin/bash
# A generated C++ program beside 0, 1 and 2 busy processes (`yes`, unpinned): its default
# (threads follow the free cores) against --fixed-threads, alternating, 3 rounds.
# Usage: bench/load/generated_program.sh GEN_BUILD_DIR INPUT.npy [INPUT_NAME]
#   (GEN_BUILD_DIR holds model_run: cleave codegen M --threads 2 --lang cpp -o gen, then
#   cmake -S gen -B gen/build -G Ninja && cmake --build gen/build)
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0"; exit 2; }
run=$1/model_run input=$2 name=${3:-input}
lscpu | grep -E 'Model name|CPU family' | tr -s ' '
for busy in 0 1 2; do
  pids=()
  for _ in $(seq 1 "$busy"); do yes >/dev/null & pids+=($!); done
  sleep 1
  for round in 1 2 3; do
    for mode in default fixed; do
      flag=""
      [ "$mode" = fixed ] && flag=--fixed-threads
      "$run" --input "$name=$input" --warmup 3 --repeat 10 --json $flag >/tmp/generated_program.json
      /usr/bin/python3 -c "import json; d=json.load(open('/tmp/generated_program.json'))
print('busy $busy round $round $mode', round(d['latency_ms']['median'], 2), d.get('ran_threads_per_worker', '-'))"
    done
  done
  for p in "${pids[@]}"; do kill "$p"; done
  wait 2>/dev/null || true
done
