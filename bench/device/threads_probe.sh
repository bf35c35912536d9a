#!/bin/bash
# On a lent many-core machine: what `cleave run --threads T` actually ran with (threads taken, the
# host load it saw, the spin count, the layout family) under the default wait policy and with each
# of cleave's adaptive choices switched off; with OLD=another cleave binary, that one against this
# one instead, alternating, twice each; with PLANS=1, `cleave run --threads T` against the same
# model run through a sequential plan of 1 worker x T threads (the task executor that `bench
# --families` times), alternating, twice each. Usage there, after hybrid.sh's refill of /tmp/corpus:
#   MODELS="googlenet rwnn" THREADS="8 16" [OLD=path] bash bench/device/threads_probe.sh
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
mkdir -p "$out" /tmp/cleave-bundle
[[ -x /tmp/cleave-bundle/cleave ]] || tar -C /tmp/cleave-bundle -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/cleave-bundle/lib
cleave=/tmp/cleave-bundle/cleave
"$cleave" info
echo "cgroup: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || echo none)"
grep -E 'Cpus_allowed_list' /proc/self/status
for i in 1 2 3; do grep procs_running /proc/stat; sleep 0.2; done
uptime
summary() {
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
name, threads, variant = sys.argv[2:5]
layout = d.get("layouts", {}).get("family")
print(f"{name:<14} T{threads:<3} {variant:<10} median {d['latency_ms']['median']:8.2f} ms"
      f"  threads {d.get('threads')}/{d.get('threads_requested')}  load {d.get('host_load')}"
      f"  layout {layout}")
PY
}
for m in ${MODELS:-googlenet rwnn}; do
  input=$(ls /tmp/corpus/"$m".input.npy 2>/dev/null || true)
  feed=()
  [[ -n "$input" ]] && feed=(--input "input=$input")
  for t in ${THREADS:-8 16}; do
    variants=(default spin fixed spin+fixed)
    [[ -n "${OLD:-}" ]] && variants=(old new old2 new2)
    if [[ -n "${PLANS:-}" ]]; then
      variants=(run plan run2 plan2)
      "$cleave" plan "/tmp/corpus/$m.onnx" --strategy sequential --workers 1 \
        --threads-per-worker "$t" -o "/tmp/seq_${m}_$t.json" >/dev/null 2>&1
    fi
    for variant in "${variants[@]}"; do
      env=()
      binary=$cleave
      case $variant in
        old*) binary=$OLD ;;
        plan*) env=(CLEAVE_FIXED_THREADS=1) ;;
        run*) env=(CLEAVE_FIXED_THREADS=1) ;;
        spin) env=(GOMP_SPINCOUNT=300000) ;;
        fixed) env=(CLEAVE_FIXED_THREADS=1) ;;
        spin+fixed) env=(GOMP_SPINCOUNT=300000 CLEAVE_FIXED_THREADS=1) ;;
      esac
      f="$out/probe_${m}_t${t}_${variant}.json"
      how=(--threads "$t")
      [[ $variant == plan* ]] && how=(--plan "/tmp/seq_${m}_$t.json")
      env "${env[@]}" timeout 60 "$binary" run "/tmp/corpus/$m.onnx" "${feed[@]}" "${how[@]}" \
        --warmup 5 --repeat 20 --json >"$f" 2>"$out/probe.err" && summary "$f" "$m" "$t" "$variant" ||
        { echo "failed: $m T$t $variant"; tail -3 "$out/probe.err"; }
    done
  done
done
