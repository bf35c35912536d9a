#!/bin/bash
# Times auto's candidate families on every model of a folder at several core counts
# (`cleave bench --families`), one JSON per model and core count; summarize.py tabulates them.
# Usage: bench/families/families.sh CLEAVE MODELS_DIR OUT_DIR [CORES...]   (default cores: 2)
set -u
usage() { sed -n '2,4s/^# \{0,1\}//p' "$0"; }
case ${1:-} in -h | --help) usage && exit 0 ;; esac
if [ $# -lt 3 ]; then
  usage >&2
  exit 2
fi
cleave=$1 models=$2 out=$3
[ -x "$cleave" ] || { echo "families.sh: $cleave: not an executable cleave binary" >&2 && exit 2; }
[ -d "$models" ] || { echo "families.sh: $models: no such folder of models" >&2 && exit 2; }
shift 3
cores=("${@:-2}")
mkdir -p "$out"
for n in "${cores[@]}"; do
  for model in "$models"/*.onnx; do
    name=$(basename "$model" .onnx)
    echo "== $name on $n core(s): $(uptime)" >&2
    taskset -c "0-$((n - 1))" "$cleave" bench "$model" --families --workers "$n" --repeat 10 \
      --warmup 3 --json >"$out/${name}_w$n.json" || echo "failed: $name on $n core(s)" >&2
  done
done
