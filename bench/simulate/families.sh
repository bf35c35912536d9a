#!/usr/bin/env bash
# Which family `auto` picks as the cluster grows: `cleave plan --simulate` of a few corpus
# models on the committed machine files of 8, 64 and 512 ranks (4 cores and 128 MiB for weights
# each, 10 Gbit/s links with 20 us per message), on paper only.
#
#   bench/simulate/families.sh CLEAVE [--costs static|analytical] [--samples "1 64"] [MODEL...]
#
# MODELs default to googlenet, resnet50 and vit_b_16 of the corpus ($CLEAVE_CORPUS, else
# ~/.cache/cleave/models; bench/models/export_corpus.py writes them): vit_b_16's 330 MiB of
# weights outgrow one rank, googlenet's and resnet50's do not. Writes the markdown report to
# stdout: CPU (lscpu), command, and per count of samples in flight a table: per model and
# cluster the chosen family and configuration, its predicted latency (all samples), the best
# row of every other family with why it was not chosen, and the planning time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cleave="$(readlink -f "${1:?usage: $0 CLEAVE [--costs static|analytical] [--samples "1 64"] [MODEL...]}")"
shift
costs=static samples="1 64" models=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --costs) costs="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    *) models+=("$(readlink -f "$1")"); shift ;;
  esac
done
corpus="${CLEAVE_CORPUS:-$HOME/.cache/cleave/models}"
if [[ ${#models[@]} -eq 0 ]]; then
  for name in googlenet resnet50 vit_b_16; do models+=("$corpus/$name.onnx"); done
fi
work="$(mktemp -d /tmp/cleave_families.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "# Families on paper: \`cleave plan --simulate\` on clusters of 8, 64 and 512 ranks"
echo
echo "CPU (planning only): $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
echo
echo "Command: \`bench/simulate/families.sh build/cleave --costs $costs --samples \"$samples\"\`" \
  "(machine files machines/cluster-{8,64,512}.json), $(date -u +%Y-%m-%d)"
echo
echo "Predictions only: nothing here ran on a cluster. \`--costs $costs\`; spatial splits are"
echo "searched along H over the first 8 ranks at most, pipelined stages' hand-offs are not priced."
echo
for n in $samples; do
echo
echo "## $n sample(s) in flight"
echo
echo "| model | ranks | chosen family | configuration | predicted ms | best other families (ms, why not) | planning ms |"
echo "|---|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  name="$(basename "$model" .onnx)"
  for ranks in 8 64 512; do
    out="$work/$name.$ranks.$n.json"
    if ! nice -n 5 "$cleave" plan "$model" --costs "$costs" --samples "$n" \
      --machine "$root/machines/cluster-$ranks.json" --simulate --json >"$out" 2>"$work/err"; then
      echo "| $name | $ranks | (failed: $(tail -1 "$work/err" | tr '|' '/')) | | | | |"
      continue
    fi
    /usr/bin/python3 - "$out" "$name" "$ranks" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
rows = plan["candidates"]
chosen = next(r for r in rows if r["chosen"])
others = {}
for r in rows:
    if r["chosen"] or r["family"] == chosen["family"]:
        continue
    seconds = r["predicted_seconds"]
    best = others.get(r["family"])
    if best is None or (seconds is not None and (best["predicted_seconds"] is None or seconds < best["predicted_seconds"])):
        others[r["family"]] = r
def ms(r):
    return "-" if r["predicted_seconds"] is None else f'{r["predicted_seconds"] * 1e3:.2f}'
def why(r):
    text = r["rejected"]
    return text if len(text) <= 90 else text[:87] + "..."
text = "; ".join(f'{f} {ms(r)} ({why(r)})' for f, r in sorted(others.items()))
print(f'| {sys.argv[2]} | {sys.argv[3]} | {chosen["family"]} | {chosen["configuration"]} | '
      f'{ms(chosen)} | {text.replace("|", "/")} | {plan["planning_ms"]:.0f} |')
PY
  done
done
done
