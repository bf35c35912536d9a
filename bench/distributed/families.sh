#!/usr/bin/env bash
# Every family of auto's candidate table run on the emulated cluster's MPI ranks beside its
# prediction, and auto's own pick against the best measured (issue 46 items 2 and 3).
#
#   bench/distributed/families.sh CLEAVE OUT.md [--models "squeezenet1_0 googlenet"]
#       [--ranks "2 3"] [--links "none 1gbit"] [--speeds "full half"] [--rounds 3]
#       [--repeat 10] [--costs profile|analytical|static] [--samples N] [--period-us 10000]
#       [--emulate quota|pace]
#
# Per link shaping, a ping-pong on the emulated cluster calibrates the link model
# (link_machine.py; each end's copy of a message from the unshaped one, and cleave's own cost
# per message sent from `cleave info --send-cost` on two unshaped ranks). Per model and cluster shape (ranks x link x speeds: "half" runs the last
# rank at 50% of a core, a cgroup quota over --period-us, and plans it at speed 0.5; with more
# ranks than cores, every rank gets cores / ranks of a core, quota and speed alike; with
# --emulate pace no rank is capped and each pauses after every task as a device of its speed
# would take longer, emulated_cluster.sh --speed, instead of running under a quota) it writes
# the machine file, asks `cleave plan --machine M --explain --json` for the candidate table, and
# runs the fastest prediction of each family on the ranks: sequential (all on rank 0), task and
# heterogeneous plans (`cleave plan --strategy S --machine M`; auto's own plan file for its
# pick), the spatial split (`cleave split --dim h --machine M --search --objective seconds
# --costs C`: searched on the same cost source as the table's spatial row, and run by
# `run-split` in the plan's convolution family; its predicted ms is that split's own, `cleave
# split --machine M --json`'s machine_prediction, priced as the table's row). With --samples N > 1
# every plan is made for N samples and run as `cleave run --plan P --samples N` on the ranks
# (the MPI executor runs the N samples pipelined across the ranks; measured: the whole stream),
# the data-parallel row included (`cleave plan --strategy data-parallel --samples N --machine M`: sample s on rank s
# mod ranks), the pipeline row (`cleave plan --strategy pipeline --samples N --machine M`: a
# stage per rank, each rank its stage sample after sample, as one task plan over the N
# samples) and the spatial row (`run-split --samples N`: the N samples streamed through the
# split's ranks, each run of the split's one-sample plan pipelined across them).
# Beside the families, a row "auto (timed on ranks)" runs `cleave run MODEL --plan auto
# --machine M --costs C` on the ranks: rank 0 plans, the ranks time auto's choice, the runner-up
# of another family, the spatial split (where predicted within 1.25x of the choice) and
# all-on-rank-0 alike and run the fastest (its row says which it kept each round; its predicted
# ms is the kept plan's).
# Each run is one `emulated_cluster.sh ... cleave run --warmup 1 --repeat R` per round, --rounds
# rounds interleaved (the order reversed every other round); a row's measured ms is the median
# of its rounds' medians, and the table says how far those lie apart (what the bench repeats
# within: on a loaded host launches minutes apart differ more than the runs of one launch). OUT.md gets the link table, the
# family table, and auto's predicted pick and auto timed on the ranks against the best measured
# family, with how many shapes each is within 5% of it.
# Needs root (namespaces, cgroups) and mpicc; on Ctrl-C everything it made is removed. The
# defaults (3 rounds of 10) took 329 s on 2 cores under a load of 3-3.5 from other processes
# (2026-11-30 14:13 UTC; 2 rounds of 3 took 225 s on the quiet host at 12:57); a third link
# shaping such as 10gbit adds half as much again; --rounds 1 or fewer --links shorten it:
#
#   bench/distributed/families.sh build/cleave OUT.md --models "squeezenet1_0 googlenet"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage="usage: $0 CLEAVE OUT.md [--models M] [--ranks \"2 3\"] [--links \"none 1gbit\"] [--speeds \"full half\"] [--rounds N] [--repeat N] [--costs C] [--samples N] [--period-us P] [--emulate quota|pace]"
fail() { echo "families.sh: $*" >&2; exit 2; }
[[ $# -ge 2 ]] || fail "$usage"
cleave="$1" out="$2"
shift 2
models="squeezenet1_0 googlenet" ranks_list="2 3" links="none 1gbit" speeds="full half"
rounds=3 repeat=10 costs=profile samples=1 period=10000 emulate=quota
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || fail "$1 needs a value ($usage)"
  case "$1" in
    --models) models="$2" ;;
    --ranks) ranks_list="$2" ;;
    --links) links="$2" ;;
    --speeds) speeds="$2" ;;
    --rounds) rounds="$2" ;;
    --repeat) repeat="$2" ;;
    --costs) costs="$2" ;;
    --samples) samples="$2" ;;
    --period-us) period="$2" ;;
    --emulate) emulate="$2" ;;
    *) fail "unknown option $1 ($usage)" ;;
  esac
  shift 2
done
# Every argument is checked before anything is made or measured.
[[ -x "$cleave" && -f "$cleave" ]] || fail "CLEAVE: $cleave is not an executable file"
cleave="$(readlink -f "$cleave")"
[[ -d "$(dirname "$out")" ]] || fail "OUT.md: folder $(dirname "$out") does not exist"
[[ "$emulate" == quota || "$emulate" == pace ]] || fail "--emulate: expected quota or pace, got '$emulate'"
for n in $ranks_list; do
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 2 && "$n" -le 8 ]] || fail "--ranks: expected counts 2..8, got '$n'"
done
for link in $links; do
  [[ "$link" == none || "$link" =~ ^[0-9]+(k|m|g)bit$ ]] ||
    fail "--links: expected none or a tc rate such as 10gbit or 500mbit, got '$link'"
done
for speed in $speeds; do
  [[ "$speed" == full || "$speed" == half ]] || fail "--speeds: expected full or half, got '$speed'"
done
[[ "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 1 && "$rounds" -le 50 ]] || fail "--rounds: expected 1..50, got '$rounds'"
[[ "$repeat" =~ ^[0-9]+$ && "$repeat" -ge 1 && "$repeat" -le 100 ]] || fail "--repeat: expected 1..100, got '$repeat'"
[[ "$samples" =~ ^[0-9]+$ && "$samples" -ge 1 && "$samples" -le 64 ]] || fail "--samples: expected 1..64, got '$samples'"
[[ "$period" =~ ^[0-9]+$ && "$period" -ge 10000 && "$period" -le 1000000 ]] ||
  fail "--period-us: expected 10000..1000000 (below 10 ms the kernel delivers less than the quota: emulated_cluster.sh), got '$period'"
[[ "$costs" == profile || "$costs" == analytical || "$costs" == static ]] ||
  fail "--costs: expected profile, analytical or static, got '$costs'"
[[ -n "$models" && -n "$ranks_list" && -n "$links" && -n "$speeds" ]] || fail "empty list ($usage)"
corpus="${CLEAVE_MODELS:-$HOME/.cache/cleave/models}"
model_path() {
  case "$1" in
    inception_demo) echo "$root/models/inception_demo.onnx" ;;
    *.onnx) echo "$1" ;;
    *) echo "$corpus/$1.onnx" ;;
  esac
}
for name in $models; do
  [[ -f "$(model_path "$name")" ]] || fail "--models: no model file $(model_path "$name")"
done
[[ "$(id -u)" == 0 ]] || fail "needs root (network namespaces, cgroups)"
command -v mpicc > /dev/null || fail "needs mpicc (OpenMPI)"

work="$(mktemp -d /tmp/cleave_families.XXXXXX)"
# The planning commands (and the profiles every prediction comes from) run in a cgroup of their
# own with the ranks' claim on the cores (cpu.shares 102400, emulated_cluster.sh): outside it,
# under a load of 3-5 from the host's other processes, the profile made googlenet all on rank 0
# 24-49 ms where the ranks measured 17-22 (2026-11-30 14:08 UTC, docs/results/distributed.md).
# Named as the cluster's groups are (cleave_cluster_PID...), so a leftover is found as theirs.
planner_group="${CLEAVE_CGROUP_ROOT:-/sys/fs/cgroup}/cpu/cleave_cluster_$$_planner"
leave_planner_group() {
  [[ -d "$planner_group" ]] || return 0
  while read -r pid; do echo "$pid" > "$(dirname "$planner_group")/cgroup.procs" 2> /dev/null || true; done \
    < "$planner_group/cgroup.procs"
  rmdir "$planner_group" 2> /dev/null || true
}
# emulated_cluster.sh removes its own namespace and cgroups on Ctrl-C; this removes the rest.
trap 'leave_planner_group; rm -rf "$work"' EXIT
# Without cgroup v1's cpu hierarchy the first cluster run stops with its own error.
if [[ -f "$(dirname "$planner_group")/cgroup.procs" ]] && mkdir "$planner_group" 2> /dev/null; then
  echo 102400 > "$planner_group/cpu.shares"
  echo $$ > "$planner_group/cgroup.procs"
fi
echo "families.sh: work folder $work" >&2
trap 'echo "families.sh: interrupted" >&2; exit 130' INT TERM
cluster="$here/emulated_cluster.sh"
json() { /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
row() { echo "$*" | tee -a "$out"; }
results="$work/results.tsv"
: > "$results"
started=$SECONDS
profile_reuse_given="${CLEAVE_PROFILE_REUSE:-}"
cores="$(nproc)"

: > "$out"
row "Host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%FT%TZ)."
row "Command: bench/distributed/families.sh CLEAVE OUT.md --models \"$models\" --ranks \"$ranks_list\" --links \"$links\" --speeds \"$speeds\" --rounds $rounds --repeat $repeat --costs $costs --samples $samples --period-us $period --emulate $emulate"
row ""

# 1. The link model per shaping, from a ping-pong on the emulated cluster.
mpicc -O2 "$here/pingpong.c" -o "$work/pingpong"
row "| shaping | 8 B round trip µs | 1 MiB round trip µs | 4 MiB round trip µs | 8 B round trip to a waiting rank µs | link model: latency µs, bandwidth GB/s |"
row "|---|---|---|---|---|---|"
rate_of() { [[ "$1" == none ]] || echo "--rate $1"; }
for link in $links; do
  # Three runs, medians taken: one slow run must not set the link model of the whole table.
  # The two ranks in cgroups of their own (quota "-") as in the runs below: with the host's
  # other processes busy, ranks without their cpu.shares measured a 4 MiB round trip at 21-27
  # ms (0.24-0.31 GB/s), with them 1.9-3.2 ms (2.4-4.2 GB/s; the idle host's: 2.1 ms).
  : > "$work/pingpong.$link.txt"
  for _ in 1 2 3; do
    # shellcheck disable=SC2046
    "$cluster" --quota -,- --period-us "$period" $(rate_of "$link") -np 2 -- "$work/pingpong" \
      >> "$work/pingpong.$link.txt"
  done
  "$here/link_machine.py" "$work/pingpong.$link.txt" /dev/null --speeds 1,1 --shaping "$link" | tee -a "$out"
done
# Each end's copy of a message (the machine's endpoint_bandwidth) is the unshaped link's rate
# whatever the shaping: tc slows the wire, not the ranks' copies.
if [[ ! -f "$work/pingpong.none.txt" ]]; then
  for _ in 1 2 3; do
    "$cluster" --quota -,- --period-us "$period" -np 2 -- "$work/pingpong" >> "$work/pingpong.none.txt"
  done
fi
# cleave's own cost per message sent (the machine's send_seconds): its hand-off's probe on two
# unshaped ranks, three runs beside the ping-pong's, medians taken by link_machine.py.
for _ in 1 2 3; do
  "$cluster" --quota -,- --period-us "$period" -np 2 -- "$cleave" info --send-cost \
    >> "$work/pingpong.none.txt"
done
row ""
row "cleave's cost per message sent (\`cleave info --send-cost\` on two unshaped ranks, median of 3 runs): $(awk '$1 == "send_us" { print $2 }' "$work/pingpong.none.txt" | sort -g | sed -n 2p) µs."
row ""

# One measured round of one configuration: appends its line to the results.
run_one() {  # shape family configuration kind artifact model ranks link quota auto
  local shape="$1" family="$2" configuration="$3" kind="$4" artifact="$5" model="$6" n="$7"
  local link="$8" quota="$9" auto="${10}" predicted="${11}" report="$work/r.json" note=""
  local cluster_args=(-np "$n")
  [[ "$link" == none ]] || cluster_args=(--rate "$link" "${cluster_args[@]}")
  if [[ "$emulate" == pace ]]; then
    # Every rank in a cgroup of its own for its cpu.shares, none capped; the speeds as pauses.
    local uncapped="-"
    for ((r = 1; r < n; ++r)); do uncapped+=",-"; done
    cluster_args=(--quota "$uncapped" --speed "$speed_list" "${cluster_args[@]}")
  elif [[ -n "$quota" ]]; then
    # The kernel's quota is 1 ms at least: a smaller share needs a longer period.
    local least="${quota##*,}" shaped_period="$period"
    [[ "$least" == - ]] || ((least * period >= 100000)) || shaped_period=$(((100000 + least - 1) / least))
    cluster_args=(--quota "$quota" --period-us "$shaped_period" "${cluster_args[@]}")
  fi
  local timing=(--warmup 1 --repeat "$repeat" --json) per_run=()
  [[ "$samples" == 1 ]] || per_run=(--samples "$samples")
  if [[ "$kind" == split ]]; then
    "$cluster" "${cluster_args[@]}" -- "$cleave" run-split "$artifact" --layouts "$layouts" \
      "${per_run[@]}" "${timing[@]}" > "$report" 2> "$work/run.err" || { cat "$work/run.err" >&2; return 1; }
  elif [[ "$kind" == auto ]]; then  # artifact: the shape's machine file
    "$cluster" "${cluster_args[@]}" -- "$cleave" run "$model" --plan auto --machine "$artifact" \
      --costs "$costs" "${per_run[@]}" "${timing[@]}" > "$report" 2> "$work/run.err" ||
      { cat "$work/run.err" >&2; return 1; }
    predicted="$(json "$report" "'%.4f' % r['plan']['predicted_ms']")"
    note="kept $(json "$report" "r['plan'].get('auto_check', {}).get('kept_configuration', r['plan']['configuration'])")"
  else
    "$cluster" "${cluster_args[@]}" -- "$cleave" run "$model" --plan "$artifact" "${per_run[@]}" \
      "${timing[@]}" > "$report" 2> "$work/run.err" || { cat "$work/run.err" >&2; return 1; }
    predicted="$(json "$report" "'%.4f' % r['plan']['predicted_ms']")"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$family" "$configuration" "$predicted" \
    "$(json "$report" "'%.4f' % r['latency_ms']['median']")" "$auto" "$note" >> "$results"
}

# 2. Per model and cluster shape: the candidate table, each family's best, auto, interleaved.
for name in $models; do
  model="$(model_path "$name")"
  # A model's first plan checks the cache (or profiles) at the default.
  [[ -n "$profile_reuse_given" ]] || unset CLEAVE_PROFILE_REUSE
  for n in $ranks_list; do
    for link in $links; do
      for speed in $speeds; do
        # More ranks than cores cannot each run at a core's speed: each gets the same share
        # of the host's cores (a quota, and that speed in the machine file), the last half of
        # it for "half".
        share=$((n > cores ? 100 * cores / n : 100))
        rank_speed="$(awk -v s="$share" 'BEGIN { printf "%g", s / 100 }')"
        shape="$name, $n ranks, link $link" speed_list="" quota=""
        if ((share < 100)); then shape+=", each rank ${share}% of a core"; fi
        # A rank at a whole core's share runs uncapped ("-"): a 100% quota throttles a lone busy
        # thread now and then (sequential on rank 0 beside a half-speed rank 1 over a 2 ms
        # period: median 11.6 ms capped at 100%, 9.3 at 200%, 8.9 uncapped, five runs each).
        # Uncapped ranks still get a cgroup each (quota "-"), for its cpu.shares: the host's
        # other processes must not take a rank's core (emulated_cluster.sh).
        local_share="$share"; ((share == 100)) && local_share=-
        for ((r = 1; r < n; ++r)); do speed_list+="$rank_speed,"; quota+="$local_share,"; done
        if [[ "$speed" == half ]]; then
          shape+=", last rank at half"
          speed_list+="$(awk -v s="$share" 'BEGIN { printf "%g", s / 200 }')" quota+="$((share / 2))"
        else
          speed_list+="$rank_speed" quota+="$local_share"
        fi
        machine="$work/machine.json"
        # A shaped link is one tbf bucket on the namespace's loopback for every rank and
        # direction (emulated_cluster.sh): one medium that the messages cross in turn, 125000
        # bytes (its "burst 1mbit") of them at once.
        shared_link=(); [[ "$link" == none ]] || shared_link=(--shared-link --link-burst-bytes 125000)
        "$here/link_machine.py" "$work/pingpong.$link.txt" "$machine" --speeds "$speed_list" \
          --endpoint-from "$work/pingpong.none.txt" "${shared_link[@]}" > /dev/null
        plan_args=(--machine "$machine" --costs "$costs")
        [[ "$samples" == 1 ]] || plan_args+=(--samples "$samples")
        echo "families.sh: $shape: planning" >&2
        "$cleave" plan "$model" "${plan_args[@]}" --explain --json -o "$work/auto.json" > "$work/table.json"
        # One profile per model and run: the first shape's plan made it (or checked the cached
        # one); every later command, the ranks' `--plan auto` too, reuses it unchecked, so that a
        # load swing between shapes does not re-measure it and move every prediction (googlenet
        # all on rank 0 predicted 26.2, 36.4 and 41.3 ms in one run at 13:55 UTC).
        [[ -n "$profile_reuse_given" ]] || export CLEAVE_PROFILE_REUSE=always
        layouts="$(json "$work/table.json" "r.get('convolution_family', 'blocked')")"
        "$root/bench/distributed/families_table.py" pick "$work/table.json" > "$work/picks.tsv"
        IFS=$'\t' read -r _ auto_family auto_configuration auto_predicted _ < <(grep '^auto' "$work/picks.tsv")
        # Each runnable family's artifact: a plan file, or a split folder.
        configs=()
        auto_runs=""
        while IFS=$'\t' read -r family strategy configuration predicted rejected; do
          [[ "$family" == auto ]] && continue
          is_auto=0; [[ "$configuration" == "$auto_configuration" ]] && { is_auto=1; auto_runs=1; }
          index=${#configs[@]}
          case "$family" in
            spatial)
              rm -rf "$work/split$index"  # the previous shape's
              if "$cleave" split "$model" --nodes "$n" --dim h --machine "$machine" --search \
                   --objective seconds --costs "$costs" -o "$work/split$index" --json < /dev/null \
                   > "$work/split.json" 2> "$work/split.err"; then
                # The prediction of the split run, priced as the table's row is: the table's own
                # split can differ from this one (the reused profile's level is checked by each
                # command), and a row must compare a run with its own split's prediction. (One
                # sample: with --samples N the table's row, of the N.)
                [[ "$samples" != 1 ]] ||
                  predicted="$(json "$work/split.json" "'%.4f' % r['machine_prediction']['predicted_ms']")"
                configs+=("$family|$configuration|split|$work/split$index|$is_auto|$predicted")
              else
                printf '%s\t%s\t%s\t%s\t\t%s\t%s\n' "$shape" "$family" "$configuration" "$predicted" \
                  "$is_auto" "cleave split refused: $(head -c 150 "$work/split.err" | tr '\n\t|' '   ')" >> "$results"
              fi ;;
            *)
              if [[ "$is_auto" == 1 ]]; then  # auto's own plan file: what auto runs
                configs+=("$family|$configuration|plan|$work/auto.json|1|$predicted")
                continue
              fi
              limit=(); [[ "$strategy" == milp-split ]] && limit=(--time-limit 0.25)
              "$cleave" plan "$model" "${plan_args[@]}" --strategy "$strategy" "${limit[@]}" \
                -o "$work/plan$index.json" < /dev/null > /dev/null
              configs+=("$family|$configuration|plan|$work/plan$index.json|$is_auto|$predicted") ;;
          esac
        done < "$work/picks.tsv"
        # Auto's plan differs from every family's best by prediction (the 2% margin): its own row.
        [[ -n "$auto_runs" ]] ||
          configs+=("$auto_family|$auto_configuration (auto)|plan|$work/auto.json|1|$auto_predicted")
        # `--plan auto` on the ranks: planned on rank 0, its candidates timed there (auto 2).
        configs+=("auto (timed on ranks)|auto (timed on ranks)|auto|$machine|2|")
        for ((round = 0; round < rounds; ++round)); do
          order=("${configs[@]}")
          if ((round % 2 == 1)); then
            order=(); for ((i = ${#configs[@]} - 1; i >= 0; --i)); do order+=("${configs[$i]}"); done
          fi
          for config in "${order[@]}"; do
            IFS='|' read -r family configuration kind artifact is_auto predicted <<< "$config"
            echo "families.sh: $shape: round $((round + 1)): $configuration" >&2
            if ! run_one "$shape" "$family" "$configuration" "$kind" "$artifact" "$model" "$n" \
                 "$link" "$quota" "$is_auto" "$predicted"; then
              printf '%s\t%s\t%s\t%s\t\t%s\t%s\n' "$shape" "$family" "$configuration" "$predicted" \
                "$is_auto" "the run failed (see stderr)" >> "$results"
            fi
          done
        done
      done
    done
  done
done

row "Columns: predicted ms is the run plan's makespan under the calibrated link model and --costs $costs, rank 0's input hand-out and output gather included (spatial: the split run, priced as the candidate table's row; with --samples N, of all N samples, and measured the whole stream of N); measured median ms is the median over $rounds interleaved rounds of each run's median of $repeat timed inferences (after 1 warm-up), rounds apart how far those rounds' medians lie apart (largest over smallest, less 1); **auto** marks auto's predicted pick (the spatial split where predicted faster than the plan, as \`cleave run --plan auto --machine\` runs it on threads); the row auto (timed on ranks) is \`mpirun cleave run --plan auto --machine M\`: its choice, the runner-up of another family, the spatial split where predicted within 1.25x of the choice, and all on rank 0 timed on the ranks, the fastest run (which it kept each round follows its name; its predicted ms is the kept plan's)."
row ""
"$here/families_table.py" report "$results" | tee -a "$out"
row ""
row "Finished $(date -u +%FT%TZ) after $((SECONDS - started)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)."
