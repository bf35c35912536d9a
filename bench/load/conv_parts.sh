#!/bin/bash
# ResNet-50's convolutions beside 0, 1 and 2 busy processes: 1-thread primitives, 2-thread
# primitives, and parts claimed by 2 threads (bench/conv_parts.cc), with sleeping at once at
# barriers (GOMP_SPINCOUNT=0) as cleave does on a busy host.
# Usage: bench/load/conv_parts.sh [PARTS] [PASSES]   (from the repository root)
set -euo pipefail
source "$(dirname "$0")/busy.sh"
parts=${1:-8}
passes=${2:-15}
g++ -O2 -std=c++20 -fopenmp bench/conv_parts.cc -ldnnl -o /tmp/conv_parts
lscpu | grep -E '^(Model name|CPU family|Model):' | tr -s ' '
for busy in 0 1 2; do
  start_busy "$busy"
  for round in 1 2 3; do
    echo "busy $busy round $round: $(GOMP_SPINCOUNT=0 /tmp/conv_parts "$parts" "$passes")"
  done
  stop_busy
done
