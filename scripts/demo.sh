#!/usr/bin/env bash
# cleave's main job on the shipped demo model: inspect it, plan it, run it in parallel, compare.
set -euo pipefail
cd "$(dirname "$0")/.."

model=${1:-models/inception_demo.onnx}
out=build/demo
mkdir -p "$out"
cleave=./build/cleave

echo "== inspect: how much parallelism the graph has"
"$cleave" inspect "$model" --dot "$out/graph.dot" $(command -v dot >/dev/null && echo --svg "$out/graph.svg")
echo
echo "== plan: profile every node here, then cluster the graph onto 2 workers"
"$cleave" plan "$model" --workers 2 -o "$out/plan.json" --gantt "$out/predicted.svg"
echo
echo "== run: the plan on 2 pinned worker threads"
"$cleave" run "$model" --plan "$out/plan.json" --warmup 3 --repeat 20 \
  --trace "$out/trace.json" --gantt "$out/measured.svg"
echo
echo "== bench: sequential vs parallel, interleaved"
"$cleave" bench "$model" --workers 2 --repeat 30
echo
echo "charts: $out/graph.svg (graph, critical path in red), $out/predicted.svg and $out/measured.svg (Gantt),"
echo "        $out/trace.json (open in chrome://tracing or ui.perfetto.dev)"
