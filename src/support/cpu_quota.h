// The cores this process may use: its affinity mask, and the CPU quota of its cgroup.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cleave {

/// What limits the CPU time of this process. A container started with `--cpus 1.5` (or a
/// Kubernetes CPU limit, a systemd CPUQuota) sees every core of the host in its affinity mask
/// but is throttled once its threads together use more than the quota in a period: two busy
/// threads under a one-core quota each run half the time, and a thread spinning while it waits
/// spends the time the computing one needs.
struct CpuBudget {
  int affinity = 1;                   ///< CPUs in the affinity mask (at least 1).
  std::optional<double> quota_cores;  ///< The tightest cgroup CPU quota, in cores; none: no limit.
  std::string quota_source;           ///< The cgroup file it was read from, when there is one.
  int usable = 1;                     ///< min(affinity, quota rounded up), at least 1.
  /// Whether a quota holds the process to fewer cores than its affinity mask offers.
  bool quota_limited() const { return quota_cores && *quota_cores < affinity; }
};

/// The tightest CPU quota over this process's cgroup and its ancestors, in cores (quota over
/// period), read under `cgroup_root` (normally /sys/fs/cgroup) for the cgroups listed in
/// `proc_self_cgroup` (normally /proc/self/cgroup). Understands cgroup v1 (the "cpu"
/// controller's cpu.cfs_quota_us and cpu.cfs_period_us) and v2 (cpu.max). No value when no
/// cgroup on the path sets a quota, or the files cannot be read; `source` gets the file used.
std::optional<double> cgroup_cpu_quota(const std::filesystem::path& proc_self_cgroup,
                                       const std::filesystem::path& cgroup_root,
                                       std::string* source = nullptr);

/// This process's budget now: the affinity mask and the cgroup quota of /proc/self/cgroup.
/// Read once and kept: neither changes while a command runs.
const CpuBudget& cpu_budget();

/// cpu_budget().usable: the cores thread counts, plans and the default machine are sized to.
int usable_cores();

}  // namespace cleave
