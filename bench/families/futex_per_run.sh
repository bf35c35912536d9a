#!/bin/bash
# System calls a run of a plan makes, per run: `strace -f -c` of `cleave run --plan PLAN` with 10
# and with 60 timed runs, the difference over 50. Counts, not times: the host's load does not
# change them (strace slows every thread, so waits that end in a sleep can be more frequent).
# Usage: futex_per_run.sh BIN MODEL PLAN [SYSCALLS=futex]
set -u
B=$1; M=$2; P=$3; calls=${4:-futex}
export CLEAVE_CACHE_DIR=${CLEAVE_CACHE_DIR:-/tmp/futex_per_run_cache}
counts=()
for r in 10 60; do
  out=$(mktemp)
  strace -f -c -e trace=$calls -o $out $B run $M --plan $P --repeat $r --warmup 5 --fixed-threads \
    --layouts blocked --json >/dev/null 2>&1
  counts+=("$(awk -v c=$calls '$NF==c{print $4}' $out)")
  rm -f $out
done
echo "$calls: ${counts[0]:-0} calls with 10 runs, ${counts[1]:-0} with 60:" \
  "$(python3 -c "print(round((${counts[1]:-0} - ${counts[0]:-0}) / 50, 1))") per run"
