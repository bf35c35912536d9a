#!/bin/bash
# Whether a profile's level moves: per model, a fresh profile's sequential prediction (the
# table's run_seconds at the most threads) against `cleave run --threads N` medians taken right
# after, then ROUNDS more times GAP seconds apart: the first profile reused
# (CLEAVE_PROFILE_REUSE=always) beside a fresh one made then, and the bench's sequential row.
# Usage: bench/families/level.sh CLEAVE OUT_DIR [MODELS...]  Env: THREADS (2), ROUNDS (3),
# GAP (120), REPEAT (30). Prints one line per model and round.
set -u
cleave=$1 out=$2
shift 2
models=("${@:-squeezenet1_0 googlenet regnet_y_400mf efficientnet_b0}")
read -r -a models <<<"${models[*]}"
threads=${THREADS:-2} rounds=${ROUNDS:-3} gap=${GAP:-120} repeat=${REPEAT:-30}
dir=$HOME/.cache/cleave/models
cpus="0-$((threads - 1))"
mkdir -p "$out"
pred() { # the sequential prediction of the one profile in cache folder $1, ms
  python3 -c "import json,glob,sys;d=json.load(open(glob.glob('$1/profiles/*.json')[0]));print(f\"{d['run_seconds'][-1]*1e3:.3f}\")"
}
median() { python3 -c "import json;print(f\"{json.load(open('$1'))['latency_ms']['median']:.3f}\")"; }
bench_seq() { # measured and predicted ms of the bench's sequential 1 x N row
  python3 -c "
import json
r=[f for f in json.load(open('$1'))['families'] if f['family']=='sequential' and f['configuration']=='1 worker x $threads threads']
print(f\"{r[0]['measured_seconds']*1e3:.3f} {r[0]['predicted_seconds']*1e3:.3f}\" if r else '- -')"
}
for round in $(seq 0 "$rounds"); do
  for m in "${models[@]}"; do
    first=$out/cache-$m-0 fresh=$out/cache-$m-$round
    rm -rf "$fresh"
    CLEAVE_PROFILE_REUSE=never CLEAVE_CACHE_DIR=$fresh taskset -c $cpus "$cleave" plan \
      "$dir/$m.onnx" --workers 1 --threads-per-worker "$threads" >/dev/null 2>&1
    CLEAVE_CACHE_DIR=$first taskset -c $cpus "$cleave" run "$dir/$m.onnx" --threads "$threads" \
      --fixed-threads --warmup 3 --repeat "$repeat" --json >"$out/run-$m-$round.json" 2>/dev/null
    CLEAVE_PROFILE_REUSE=always CLEAVE_CACHE_DIR=$first taskset -c $cpus "$cleave" bench \
      "$dir/$m.onnx" --families --workers "$threads" --repeat 10 --warmup 3 --json \
      >"$out/bench-$m-$round.json" 2>/dev/null
    echo "round $round $(date -u +%T) $m first_pred=$(pred "$first") fresh_pred=$(pred "$fresh")" \
      "run_median=$(median "$out/run-$m-$round.json") bench_seq_meas_pred=$(bench_seq "$out/bench-$m-$round.json")" \
      "load=$(cut -d' ' -f1 /proc/loadavg)"
  done
  [ "$round" -lt "$rounds" ] && sleep "$gap"
done
