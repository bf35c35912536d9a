#!/bin/bash
# A generated C++ program beside 0, 1 and 2 busy processes (`yes`, unpinned): its default
# (threads follow the free cores) against --fixed-threads, alternating, 3 rounds.
# Usage: bench/load/generated_program.sh GEN_BUILD_DIR INPUT.npy [INPUT_NAME]
#   (GEN_BUILD_DIR holds model_run: cleave codegen M --threads 2 --lang cpp -o gen, then
#   cmake -S gen -B gen/build -G Ninja && cmake --build gen/build)
set -euo pipefail
source "$(dirname "$0")/busy.sh"
[ $# -ge 2 ] || { sed -n '2,7p' "$0"; exit 2; }
run=$1/model_run input=$2 name=${3:-input}
lscpu | grep -E 'Model name|CPU family' | tr -s ' '
measure() {
  "$run" --input "$name=$input" --warmup 3 --repeat 10 --json $4 >/tmp/generated_program.json
  /usr/bin/python3 -c "import json; d=json.load(open('/tmp/generated_program.json'))
print('busy $1 round $2 $3', round(d['latency_ms']['median'], 2), d.get('ran_threads_per_worker', '-'))"
}
alternate_under_load measure
