#!/bin/bash
# Source size (lines and bytes of rank_*.cc / worker_*.cc) of squeezenet1_0's generated stream
# programs at 1, 8 and 32 samples, pipelined stages and data-parallel on two ranks or two worker
# threads (static costs, blocked layouts), for each cleave binary given (e.g. main's, a branch's).
# Usage: bench/codegen/stream_sizes.sh NAME=CLEAVE [NAME=CLEAVE]...
set -u
M=$(/usr/bin/python3 -c "import json,os;d=os.path.expanduser('~/.cache/cleave/models');print(os.path.join(d,json.load(open(d+'/manifest.json'))['models']['squeezenet1_0']['file']))")
sides=()
for side in "$@"; do sides+=("${side%%=*}=$(readlink -f "${side#*=}")"); done
W=$(mktemp -d); cd "$W"
echo '{"devices": [{"name": "rank0"}, {"name": "rank1"}], "bandwidth": [[0, 4e9], [4e9, 0]], "latency": [[0, 2e-5], [2e-5, 0]]}' > two.json
for side in "${sides[@]}"; do
  name=${side%%=*}; C=${side#*=}
  for strategy in pipeline data-parallel; do
    for n in 1 8 32; do
      if ! $C plan "$M" --strategy $strategy --machine two.json --samples $n --costs static \
          -o p.json >/dev/null 2>&1; then
        echo "$name $strategy samples=$n: no plan"; continue
      fi
      for form in ranks threads; do
        flag=""; [ $form = ranks ] && flag="--ranks"
        rm -rf g
        if $C codegen "$M" --plan p.json --samples $n --lang cpp $flag --layouts blocked -o g \
            >log 2>&1; then
          echo "$name $strategy samples=$n $form lines=$(cat g/rank_*.cc g/worker_*.cc 2>/dev/null | wc -l)" \
               "bytes=$(cat g/rank_*.cc g/worker_*.cc 2>/dev/null | wc -c)"
        else
          echo "$name $strategy samples=$n $form refused: $(tail -c 160 log | tr '\n' ' ')"
        fi
      done
    done
  done
done
rm -rf "$W"
