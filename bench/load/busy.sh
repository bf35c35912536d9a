# Sourced by the load benchmarks: processes that keep cores busy (`yes > /dev/null`, unpinned),
# and the rounds that alternate cleave's default with --fixed-threads beside them.
busy_pids=()
# Whatever ends the script (its last line, ^C, a reader that goes away), no busy process stays.
trap 'stop_busy' EXIT
trap 'exit 130' INT TERM HUP PIPE
# start_busy N: N busy processes, then a second for them to settle.
start_busy() {
  busy_pids=()
  for _ in $(seq 1 "$1"); do yes >/dev/null & busy_pids+=($!); done
  sleep 1
}
stop_busy() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  busy_pids=()
  wait 2>/dev/null || true
}
# alternate_under_load FN: for 0, 1 and 2 busy processes, 3 rounds of `FN BUSY ROUND MODE FLAG`
# with MODE default (FLAG empty) and then fixed (FLAG --fixed-threads).
alternate_under_load() {
  local busy round mode flag
  for busy in 0 1 2; do
    start_busy "$busy"
    for round in 1 2 3; do
      for mode in default fixed; do
        flag=""
        [ "$mode" = fixed ] && flag=--fixed-threads
        "$1" "$busy" "$round" "$mode" "$flag"
      done
    done
    stop_busy
  done
}
