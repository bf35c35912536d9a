#!/bin/bash
# Generated stream program against `cleave stream run --workers 1`, interleaved A B B A for 3
# rounds, seconds per pass over the items. The generated side runs 3 passes and reports their
# median (its first pass prepares the kernels, which `cleave stream run` does before its timer).
# Usage: bench/codegen/stream_time.sh CLEAVE STREAM_RUN PROGRAM.json ITEMS.npy N
set -eu
C=$1 G=$2 P=$3 X=$4 N=$5
field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
gen() { "$G" --input "x=$X" --items "$N" --repeat 3 --json | field seconds_median; }
ref() { "$C" stream run "$P" --input "x=$X" --items "$N" --json | field seconds; }
echo "generated_s cleave_stream_run_s cleave_stream_run_s generated_s"
for _ in 1 2 3; do echo "$(gen) $(ref) $(ref) $(gen)"; done
