#!/usr/bin/env bash
# Emulated cluster: MPI ranks in a network namespace of their own, talking TCP over its
# loopback shaped by tc, each rank's CPU capped by a cgroup v1 quota. Everything it creates
# (namespace, qdisc, cgroups) is removed at the end, also on failure or Ctrl-C.
#
#   bench/distributed/emulated_cluster.sh [--rate 1gbit] [--qdisc tbf|htb] [--quota 100,50]
#       [--period-us 100000] [--speed 1,0.5] [--memory 512M] -np N -- COMMAND ARGS...
#
# runs `mpirun -np N ... COMMAND ARGS...` inside the namespace. --rate shapes the loopback
# (every rank-to-rank byte crosses it; tc has no netem here, so there is no added latency);
# --quota gives rank i that percent of one core (cfs_quota_us over a period of --period-us,
# default 100 ms), one entry per rank: a period near one inference (10000-20000) makes a 50%
# rank run at about half speed throughout, where a 100 ms one lets it run a short inference at
# full speed and then stalls it; "-" leaves a rank uncapped. Periods under 10 ms are refused:
# the kernel does not deliver the quota there (a lone busy loop under 66% of a core got 35% of
# one over 2 ms, 42% over 5 ms, 66% over 10, 20 and 100 ms; 50% got 33%; 100% got 52%:
# docs/results/distributed.md, 2026-11-29 20:12 UTC). Each rank's cgroup gets cpu.shares
# 102400 (100 times the default): a rank on a cluster node has its share to itself, and here
# the host's other processes (each session an autogroup of weight 1024) must not take it.
# A capped rank reads its own quota under /sys/fs/cgroup/cpu, as a container's process reads
# its limit, so cleave's ranks wait as they do under any quota (support/cpu_quota.h).
# --speed s0,s1,... (one per rank, 0.01 to 1) makes rank i a device s_i times as fast another
# way: after each task the rank pauses (1/s_i - 1) times the task's compute time before handing
# its outputs on (CLEAVE_EMULATED_SPEEDS, src/distributed/emulated_speed.h), so the slowdown is
# uniform per task where a quota stalls a rank in whole periods.
# --memory caps each rank's memory (cgroup memory.limit_in_bytes). Needs root, and for --quota
# and --memory the cgroup v1 cpu and memory hierarchies under /sys/fs/cgroup (CLEAVE_CGROUP_ROOT
# names another folder, for tests): without them it stops before making anything.
set -euo pipefail

rate="" qdisc="tbf" quotas="" period=100000 memory="" ranks="" speeds=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rate) rate="$2"; shift 2 ;;
    --qdisc) qdisc="$2"; shift 2 ;;
    --quota) quotas="$2"; shift 2 ;;
    --period-us) period="$2"; shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --speed) speeds="$2"; shift 2 ;;
    -np) ranks="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "emulated_cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n "$ranks" && $# -gt 0 ]] || { echo "usage: $0 [--rate R] [--quota q0,q1,..] [--speed s0,s1,..] [--memory M] -np N -- COMMAND ..." >&2; exit 2; }
[[ "$qdisc" == tbf || "$qdisc" == htb ]] || { echo "--qdisc must be tbf or htb" >&2; exit 2; }
[[ "$period" =~ ^[0-9]+$ && "$period" -ge 10000 && "$period" -le 1000000 ]] ||
  { echo "--period-us: expected 10000..1000000 microseconds (below 10 ms the kernel delivers less than the quota), got '$period'" >&2; exit 2; }

# Every hierarchy the options need is checked before a namespace or group is made: a host with
# cgroup v2 only (or none mounted) gets one clear error and nothing left behind.
cgroup_root="${CLEAVE_CGROUP_ROOT:-/sys/fs/cgroup}"
v1_hierarchy() {  # kind option: the mount of cgroup v1's `kind` controller, or an error
  local folder mount
  folder="$(readlink -f "$cgroup_root/$1" 2>/dev/null || true)"
  mount="$(awk -v m="$folder" -v k="$1" '$2 == m && $3 == "cgroup" && $4 ~ "(^|,)" k "(,|$)" {print $2}' /proc/self/mounts)"
  [[ -n "$folder" && -n "$mount" && -f "$folder/cgroup.procs" ]] || {
    echo "emulated_cluster.sh: $2 needs cgroup v1's $1 hierarchy, and $cgroup_root/$1 is not one (a cgroup v2-only host: boot with systemd.unified_cgroup_hierarchy=0, or mount it: mount -t cgroup -o $1 cgroup $cgroup_root/$1); nothing was made" >&2
    exit 2
  }
}
[[ -z "$quotas" ]] || v1_hierarchy cpu --quota
[[ -z "$memory" ]] || v1_hierarchy memory --memory

speed_env=()
if [[ -n "$speeds" ]]; then
  IFS=, read -r -a speed_list <<< "$speeds"
  [[ "${#speed_list[@]}" == "$ranks" ]] ||
    { echo "--speed: expected one speed per rank ($ranks), got '$speeds'" >&2; exit 2; }
  speed_env=(-x "CLEAVE_EMULATED_SPEEDS=$speeds")
fi

name="cleave_cluster_$$"
cgroups=()
cleanup() {
  ip netns del "$name" 2>/dev/null || true
  for group in "${cgroups[@]}"; do
    # Processes left in a group (a killed run) go back to the root group first.
    if [[ -f "$group/cgroup.procs" ]]; then
      while read -r pid; do echo "$pid" > "$(dirname "$group")/cgroup.procs" 2>/dev/null || true; done < "$group/cgroup.procs"
    fi
    rmdir "$group" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

ip netns add "$name"
ip netns exec "$name" ip link set lo up
if [[ -n "$rate" ]]; then
  if [[ "$qdisc" == tbf ]]; then
    ip netns exec "$name" tc qdisc add dev lo root tbf rate "$rate" burst 1mbit latency 100ms
  else
    ip netns exec "$name" tc qdisc add dev lo root handle 1: htb default 10
    ip netns exec "$name" tc class add dev lo parent 1: classid 1:10 htb rate "$rate" ceil "$rate"
  fi
fi

# One cgroup per rank; a wrapper started by mpirun moves its rank into its group, then execs.
wrapper=()
if [[ -n "$quotas" || -n "$memory" ]]; then
  IFS=, read -r -a quota_list <<< "${quotas}"
  for ((r = 0; r < ranks; ++r)); do
    if [[ -n "$quotas" ]]; then
      group="$cgroup_root/cpu/${name}_r$r"
      mkdir "$group"; cgroups+=("$group")
      echo "$period" > "$group/cpu.cfs_period_us"
      percent="${quota_list[$r]:-100}"
      if [[ "$percent" == - ]]; then
        quota=-1  # Uncapped: a rank at full speed beside capped ones.
      else
        [[ "$percent" =~ ^[0-9]+$ ]] || { echo "--quota: expected a percent or - per rank, got '$percent'" >&2; exit 2; }
        quota=$((percent * period / 100))
        # The kernel takes no quota below 1 ms.
        ((quota >= 1000)) || { echo "--quota $percent% of --period-us $period is below the kernel's 1000 us: give a longer period" >&2; exit 2; }
      fi
      echo "$quota" > "$group/cpu.cfs_quota_us"
      echo 102400 > "$group/cpu.shares"
    fi
    if [[ -n "$memory" ]]; then
      group="$cgroup_root/memory/${name}_r$r"
      mkdir "$group"; cgroups+=("$group")
      echo "$memory" > "$group/memory.limit_in_bytes"
    fi
  done
  # `ip netns exec` remounts /sys, so inside the namespace /sys/fs/cgroup is empty: the rank
  # joins its groups through this script's mount namespace, and refuses to run outside them.
  outer_mounts="/proc/$$/ns/mnt"
  wrapper=(bash -c 'r=${OMPI_COMM_WORLD_RANK:-0}
    for kind in cpu memory; do
      g='"$cgroup_root"'/$kind/'"$name"'_r$r
      if nsenter --mount='"$outer_mounts"' test -d "$g"; then
        nsenter --mount='"$outer_mounts"' sh -c "echo $$ > $g/cgroup.procs" ||
          { echo "rank $r: cannot join $g" >&2; exit 1; }
      fi
    done
    exec "$@"' rank)
fi

# The ranks see their own quota, as a container's processes see theirs: `ip netns exec` mounts
# a fresh /sys in which /sys/fs/cgroup is empty, so a capped rank took itself for uncapped and
# spun waiting for messages (runtime/wait_policy.h sleeps at once under a quota), spending its
# quota and, with more ranks than cores, its neighbours' cores (squeezenet1_0's split on 3
# ranks at 66%: 21.1 ms spinning, 13.6 sleeping; docs/results/distributed.md). The namespace's
# mounts are its own: the host's are untouched.
in_namespace=()
if [[ -n "$quotas" ]]; then
  cpu_mount="$(readlink -f "$cgroup_root/cpu")"
  cpu_options="$(awk -v m="$cpu_mount" '$2 == m && $3 == "cgroup" {print $4}' /proc/self/mounts)"
  [[ -n "$cpu_options" ]] || { echo "emulated_cluster.sh: no cgroup v1 cpu hierarchy at $cpu_mount" >&2; exit 2; }
  in_namespace=(bash -c 'mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup &&
    mkdir -p "$1" && mount -t cgroup -o "$2" cgroup "$1" &&
    { [[ "$1" == /sys/fs/cgroup/cpu ]] || ln -s "$1" /sys/fs/cgroup/cpu; } || exit 2
    shift 2; exec "$@"' mount_cgroups "$cpu_mount" "$cpu_options")
fi

status=0
ip netns exec "$name" "${in_namespace[@]}" mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
  --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  -x OMP_NUM_THREADS=1 "${speed_env[@]}" "${wrapper[@]}" "$@" || status=$?
exit "$status"
