#!/usr/bin/env bash
# The distributed benchmark of docs/results/distributed.md: per model and batch, one process (1
# and 2 threads) against 2 MPI ranks of 1 thread on the emulated cluster, unshaped and shaped to
# 10 and 1 Gbit/s, with each plan's prediction from a link model calibrated by a measured
# ping-pong beside the measured latency; the spatial split naive against optimised; unequal
# rank speeds; a pipelined stream's throughput; bytes sent and peak RSS per rank.
#
#   bench/distributed/benchmark.sh CLEAVE OUT.md [--models "vgg_style resnet50 ..."]
#       [--batches "1 8"] [--repeat 5] [--costs profile|analytical]
#
# Models are looked up in $CLEAVE_MODELS (default ~/.cache/cleave/models, the corpus), except
# vgg_style (bench/spatial/make_models.py) and inception_demo (models/). Needs root (network
# namespaces, cgroups) and mpicc. Writes OUT.md (markdown tables, with the host and commands)
# and prints it; removes its work folder at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cleave="$(readlink -f "${1:?usage: $0 CLEAVE OUT.md [--models M] [--batches B] [--repeat R]}")"
out="${2:?usage: $0 CLEAVE OUT.md}"
shift 2
models="vgg_style resnet50 mobilenet_v2 googlenet" batches="1 8" repeat=5 costs=profile
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --costs) costs="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
corpus="${CLEAVE_MODELS:-$HOME/.cache/cleave/models}"
work="$(mktemp -d /tmp/cleave_dist_bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cluster="$here/emulated_cluster.sh"
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca btl_tcp_if_include lo
     -x OMP_NUM_THREADS=1)
json() { /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
per_rank() { json "$1" "' / '.join('%.${3:-1}f' % (p['$2'] / 2**20) for p in r['per_rank'])"; }
row() { echo "$*" | tee -a "$out"; }

: > "$out"
row "Host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%FT%TZ)."
row "Command: bench/distributed/benchmark.sh CLEAVE OUT.md --models \"$models\" --batches \"$batches\" --repeat $repeat --costs $costs"
row ""

# 1. The link model, per shaping, from a ping-pong on the emulated cluster.
mpicc -O2 "$here/pingpong.c" -o "$work/pingpong"
row "| shaping | 8 B round trip µs | 1 MiB round trip µs | 4 MiB round trip µs | 8 B round trip to a waiting rank µs | link model: latency µs, bandwidth GB/s |"
row "|---|---|---|---|---|---|"
for shaping in none 10gbit 1gbit; do
  rate=(); [[ "$shaping" != none ]] && rate=(--rate "$shaping")
  "$cluster" "${rate[@]}" -np 2 -- "$work/pingpong" > "$work/pingpong.$shaping.txt"
  "$here/link_machine.py" "$work/pingpong.$shaping.txt" "$work/cal_$shaping.json" --speeds 1,1 \
    --shaping "$shaping" | tee -a "$out"
  "$here/link_machine.py" "$work/pingpong.$shaping.txt" "$work/cal_${shaping}_unequal.json" \
    --speeds 1,0.5 > /dev/null
done
row ""

# 2. Per model and batch.
row "Columns: median ms over --repeat runs (after 1 warm-up); predicted ms is the plan's makespan under the calibrated link model and --costs $costs; MiB sent and peak RSS per rank (rank 0 / rank 1)."
row ""
row "| model | batch | configuration | predicted ms | median ms | measured / predicted | MiB sent | peak RSS MiB |"
row "|---|---|---|---|---|---|---|---|"
for model_name in $models; do
  case "$model_name" in
    vgg_style) [[ -f "$work/vgg_style.onnx" ]] || /usr/bin/python3 "$root/bench/spatial/make_models.py" "$work" >/dev/null
               model="$work/vgg_style.onnx" ;;
    inception_demo) model="$root/models/inception_demo.onnx" ;;
    *) model="$corpus/$model_name.onnx" ;;
  esac
  for batch in $batches; do
    shape=()
    if [[ "$batch" != 1 ]]; then
      shape=(--shape "$(/usr/bin/python3 -c '
import onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
i = [i for i in m.graph.input if i.name not in inits][0]
dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
print(i.name + "=" + ",".join([sys.argv[2]] + [str(d) for d in dims[1:]]))' "$model" "$batch")")
    fi
    tag="$model_name b$batch"
    # Layouts as each side chooses by default: one process runs the measured family that
    # `cleave plan` costs with (cached per model), and MPI ranks run the family the plan
    # records. run-split is given the family one process chose.
    common=("${shape[@]}" --warmup 1 --repeat "$repeat" --json)
    for threads in 1 2; do
      "$cleave" run "$model" --threads "$threads" "${common[@]}" > "$work/t$threads.json"
      row "| $model_name | $batch | 1 process, $threads thread(s) | | $(json "$work/t$threads.json" "'%.2f' % r['latency_ms']['median']") | | | $(json "$work/t$threads.json" "'%.0f' % (r['peak_rss_bytes'] / 2**20)") |"
    done
    single="$(json "$work/t1.json" "r['latency_ms']['median']")"
    family="$(json "$work/t1.json" "r['layouts']['family']")"
    # Plans for the calibrated link model; each run on the cluster shaped as calibrated.
    for shaping in none 10gbit 1gbit; do
      rate=(); [[ "$shaping" != none ]] && rate=(--rate "$shaping")
      strategies="auto"; [[ "$shaping" == none ]] && strategies="auto heft lc"
      for strategy in $strategies; do
        plan="$work/plan.$strategy.$shaping.json"
        "$cleave" plan "$model" "${shape[@]}" --strategy "$strategy" --costs "$costs" \
          --machine "$work/cal_$shaping.json" -o "$plan" > /dev/null
        "$cluster" "${rate[@]}" -np 2 -- "$cleave" run "$model" --plan "$plan" "${common[@]}" > "$work/r.json"
        row "| $model_name | $batch | 2 ranks, $(json "$work/r.json" "r['plan']['strategy']") ($strategy), link $shaping | $(json "$work/r.json" "'%.2f' % r['plan']['predicted_ms']") | $(json "$work/r.json" "'%.2f' % r['latency_ms']['median']") | $(json "$work/r.json" "'%.2f' % (r['latency_ms']['median'] / max(r['plan']['predicted_ms'], 1e-9))") | $(per_rank "$work/r.json" bytes_sent 2) | $(per_rank "$work/r.json" peak_rss_bytes 0) |"
      done
    done
    # Unequal rank speeds: rank 1 at half a core, planned for it.
    plan="$work/plan.unequal.json"
    "$cleave" plan "$model" "${shape[@]}" --costs "$costs" --machine "$work/cal_none_unequal.json" -o "$plan" > /dev/null
    "$cluster" --quota 100,50 -np 2 -- "$cleave" run "$model" --plan "$plan" "${common[@]}" > "$work/r.json"
    row "| $model_name | $batch | 2 ranks, $(json "$work/r.json" "r['plan']['strategy']") (auto), rank 1 at 50% CPU, planned for it | $(json "$work/r.json" "'%.2f' % r['plan']['predicted_ms']") | $(json "$work/r.json" "'%.2f' % r['latency_ms']['median']") | $(json "$work/r.json" "'%.2f' % (r['latency_ms']['median'] / max(r['plan']['predicted_ms'], 1e-9))") | $(per_rank "$work/r.json" bytes_sent 2) | $(per_rank "$work/r.json" peak_rss_bytes 0) |"
    # Spatial split, naive (every layer along H, no fused tiles) and optimised (auto).
    for split in naive optimised; do
      args=(--dim h --no-fuse); [[ "$split" == optimised ]] && args=(--dim auto --machine "$work/cal_none.json")
      rm -rf "$work/split"
      if "$cleave" split "$model" "${shape[@]}" --nodes 2 "${args[@]}" -o "$work/split" > /dev/null 2> "$work/split.err"; then
        "$cluster" -np 2 -- "$cleave" run-split "$work/split" --layouts "$family" --warmup 1 --repeat "$repeat" --json > "$work/r.json"
        row "| $model_name | $batch | 2 ranks, spatial split $split ($family) | | $(json "$work/r.json" "'%.2f' % r['latency_ms']['median']") | | $(per_rank "$work/r.json" bytes_sent 2) | $(per_rank "$work/r.json" peak_rss_bytes 0) |"
      else
        row "| $model_name | $batch | 2 ranks, spatial split $split: refused ($(head -c 150 "$work/split.err" | tr '\n|' '  ')) | | | | | |"
      fi
    done
    # A pipelined stream of 8 samples through the unshaped auto plan.
    "$cluster" -np 2 -- "$cleave" run "$model" --plan "$work/plan.auto.none.json" "${shape[@]}" \
      --warmup 1 --repeat "$repeat" --samples 8 --json > "$work/s.json"
    row "| $model_name | $batch | 2 ranks, stream of 8 (auto plan): $(json "$work/s.json" "'%.1f samples/s, per-sample median %.2f ms' % (r['throughput_samples_per_s'], r['sample_latency_ms']['median'])"); 1 process, 1 thread: $(/usr/bin/python3 -c "print('%.1f samples/s' % (1000 / $single))") | | $(json "$work/s.json" "'%.2f' % r['latency_ms']['median']") per 8 | | $(per_rank "$work/s.json" bytes_sent 2) | $(per_rank "$work/s.json" peak_rss_bytes 0) |"
  done
done
row ""
row "Finished $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)."
