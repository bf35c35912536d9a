#!/bin/bash
# Runs a short command as if the host were quiet when it is not: the command at real-time
# priority (chrt -f 20; its threads inherit it), and on every core a real-time spinner of lower
# priority (chrt -f 10) that holds the core whenever none of the command's threads runs there,
# so that other processes' threads (builds at nice 10) do not share the cores meanwhile. A core
# the command leaves idle thus runs a spinner (a busy neighbour), not another process. Linux
# keeps 5% of each second for other tasks (sched_rt_runtime_us). GOMP_SPINCOUNT is an idle
# host's (300000) unless set; profiles do not wait for free cores (the spinners hold them).
# It starves every other process while it runs: keep commands to seconds. Each spinner is one
# process (no wrapper that a spinner of the same priority would keep from running), ends by
# itself after HOLD_SECONDS (default 30) and is killed (SIGKILL) when the command ends.
# Usage: hold.sh COMMAND [ARGS...]
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-300000}
export CLEAVE_CORE_WAIT_SECONDS=0
spinners=()
for cpu in $(seq 0 $(($(nproc) - 1))); do
  chrt -f 10 taskset -c $cpu bash -c "end=\$((SECONDS + ${HOLD_SECONDS:-30})); while [ \$SECONDS -lt \$end ]; do :; done" &
  spinners+=($!)
done
trap 'kill -9 ${spinners[*]} 2>/dev/null' EXIT
chrt -f 20 "$@"
