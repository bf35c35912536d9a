#!/bin/bash
# A profile cached while busy loops load the host, then used once they have ended: per binary, a
# fresh CLEAVE_CACHE_DIR, two busy loops (nice 0) while `cleave plan` profiles, the loops ended,
# then `cleave bench --families` on the same cache (its stderr says whether the cached table was
# reused or made again). Prints each family's predicted and measured ms.
# Usage: bench/families/stale_profile.sh MODEL OUT_DIR CLEAVE...   (docs/results/predictions-2cores.md)
set -u
model=$1 out=$2
shift 2
for cleave in "$@"; do
  dir=$out/$(echo "$cleave" | tr / _)
  rm -rf "$dir" && mkdir -p "$dir"
  (while :; do :; done) &
  loop1=$!
  (while :; do :; done) &
  loop2=$!
  sleep 1
  echo "== $cleave: profiling beside 2 busy loops: $(uptime)"
  CLEAVE_CACHE_DIR=$dir CLEAVE_CORE_WAIT_SECONDS=0 taskset -c 0-1 "$cleave" plan "$model" \
    --workers 2 -o "$dir/plan.json" >/dev/null 2>"$dir/plan.err"
  kill "$loop1" "$loop2"
  wait "$loop1" "$loop2" 2>/dev/null
  sleep 3
  echo "== $cleave: bench once the loops ended: $(uptime)"
  CLEAVE_CACHE_DIR=$dir taskset -c 0-1 "$cleave" bench "$model" --families --workers 2 \
    --repeat 10 --warmup 3 --json >"$dir/bench.json" 2>"$dir/bench.err"
  cat "$dir/bench.err"
  /usr/bin/python3 - "$dir" <<'PY'
import glob, json, sys
folder = sys.argv[1]
for row in json.load(open(folder + "/bench.json"))["families"]:
    print(f"{row['family']} ({row['configuration']}): predicted {row['predicted_seconds'] * 1e3:.2f} ms, "
          f"measured {row['measured_seconds'] * 1e3:.2f} ms, "
          f"measured / predicted {row['measured_seconds'] / row['predicted_seconds']:.2f}")
table = json.load(open(glob.glob(folder + "/profiles/*.json")[0]))
print("cached run_seconds", table["run_seconds"], "conditions", table.get("conditions"))
PY
done
