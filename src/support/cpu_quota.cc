// Reads the affinity mask and the cgroup CPU quota (v1 and v2) that bound this process.
#include "support/cpu_quota.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace cleave {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<double> number_in(const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  if (!(in >> value) || !std::isfinite(value)) return std::nullopt;
  return value;
}

// A v1 "cpu" controller's quota in `dir`: cfs_quota_us over cfs_period_us; -1 means none.
std::optional<double> v1_quota(const fs::path& dir, fs::path* file) {
  std::optional<std::string> quota = first_line(dir / "cpu.cfs_quota_us");
  std::optional<std::string> period = first_line(dir / "cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  std::optional<double> q = number_in(*quota), p = number_in(*period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  *file = dir / "cpu.cfs_quota_us";
  return *q / *p;
}

// A v2 cgroup's quota in `dir`: cpu.max holds "QUOTA PERIOD", QUOTA "max" for none.
std::optional<double> v2_quota(const fs::path& dir, fs::path* file) {
  std::optional<std::string> line = first_line(dir / "cpu.max");
  if (!line) return std::nullopt;
  std::istringstream in(*line);
  std::string quota, period;
  in >> quota >> period;
  if (quota == "max") return std::nullopt;
  std::optional<double> q = number_in(quota), p = number_in(period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  *file = dir / "cpu.max";
  return *q / *p;
}

// The tightest quota from `mount`/`path` up to `mount`. A container often mounts its own
// cgroup at the root while /proc/self/cgroup names the host's path to it: directories that do
// not exist are skipped, so the walk still reaches the mount.
std::optional<double> tightest_on_path(const fs::path& mount, const std::string& path, bool v2,
                                       std::string* source) {
  std::optional<double> tightest;
  fs::path relative = fs::path(path).relative_path();
  for (;;) {
    const fs::path dir = mount / relative;
    fs::path file;
    std::optional<double> quota = v2 ? v2_quota(dir, &file) : v1_quota(dir, &file);
    if (quota && (!tightest || *quota < *tightest)) {
      tightest = quota;
      if (source) *source = file.string();
    }
    if (relative.empty()) break;
    relative = relative.parent_path();
  }
  return tightest;
}

bool names_cpu_controller(const std::string& controllers) {
  std::istringstream in(controllers);
  std::string controller;
  while (std::getline(in, controller, ',')) {
    if (controller == "cpu") return true;
  }
  return false;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace

std::optional<double> cgroup_cpu_quota(const fs::path& proc_self_cgroup,
                                       const fs::path& cgroup_root, std::string* source) {
  std::ifstream in(proc_self_cgroup);
  std::string line;
  std::optional<double> tightest;
  while (std::getline(in, line)) {
    // "ID:CONTROLLERS:PATH"; the path may itself hold colons.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<double> quota;
    std::string file;
    if (id == "0" && controllers.empty()) {
      quota = tightest_on_path(cgroup_root, path, /*v2=*/true, &file);
    } else if (names_cpu_controller(controllers)) {
      // Distributions mount v1's cpu controller as "cpu", "cpu,cpuacct" or both.
      for (const fs::path& mount : {cgroup_root / "cpu", cgroup_root / controllers}) {
        quota = tightest_on_path(mount, path, /*v2=*/false, &file);
        if (quota) break;
      }
    }
    if (quota && (!tightest || *quota < *tightest)) {
      tightest = quota;
      if (source) *source = file;
    }
  }
  return tightest;
}

const CpuBudget& cpu_budget() {
  static const CpuBudget budget = [] {
    CpuBudget b;
    b.affinity = affinity_cpus();
    b.quota_cores = cgroup_cpu_quota("/proc/self/cgroup", "/sys/fs/cgroup", &b.quota_source);
    b.usable = b.affinity;
    if (b.quota_cores) {
      // A quota of 1.5 cores still runs two threads at three quarters each; rounding down would
      // leave half a core unused.
      const int quota_cores = std::max(1, static_cast<int>(std::ceil(*b.quota_cores - 1e-9)));
      b.usable = std::min(b.affinity, quota_cores);
    }
    return b;
  }();
  return budget;
}

int usable_cores() {
  return cpu_budget().usable;
}

}  // namespace cleave
