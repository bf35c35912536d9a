// Chooses and applies the cleave command's default OpenMP spin count (see wait_policy.h).
#include "runtime/wait_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>

#include "support/cpu_quota.h"
#include "support/system_load.h"

namespace cleave {
namespace {

// libgomp's parse of GOMP_SPINCOUNT: a number with an optional k/M/G/T suffix, or "infinite".
long parse_spin_count(const char* text) {
  std::string value(text);
  if (value == "infinite" || value == "infinity") return std::numeric_limits<long>::max();
  char* end = nullptr;
  long count = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || count < 0) return kLibgompSpinCount;
  switch (*end) {
    case 'k':
      return count * 1000;
    case 'M':
      return count * 1000000;
    case 'G':
      return count * 1000000000;
    case 'T':
      return count * 1000000000000;
    default:
      return count;
  }
}

}  // namespace

long spin_count_for(const HostLoad& load) {
  return load.other_runnable > load.cores || load.quota_limited ? kBusySpinCount
                                                                : kLibgompSpinCount;
}

int threads_for(int requested, const HostLoad& load) {
  const int free_cores = std::max(1, load.cores - load.other_runnable);
  return std::max(1, std::min(requested, free_cores));
}

int claim_threads_for(int requested, const HostLoad& load) {
  const int threads = std::min(requested, load.cores);
  return threads >= 2 && load.other_runnable >= load.cores ? threads : 0;
}

bool threads_fixed_by_user(bool flag) {
  return flag || std::getenv("CLEAVE_FIXED_THREADS") != nullptr;
}

int rank_threads_for(int requested, int ranks_on_host, const HostLoad& load) {
  requested = std::max(1, requested);
  ranks_on_host = std::max(1, ranks_on_host);
  const int others = std::max(0, load.other_runnable - (ranks_on_host - 1));
  const int free_cores = std::max(1, load.cores - others);
  if (requested * ranks_on_host <= free_cores) return requested;
  return std::max(1, free_cores / ranks_on_host);
}

PlanThreads plan_threads_for(int workers, int threads_per_worker, const HostLoad& load) {
  workers = std::max(1, workers);
  threads_per_worker = std::max(1, threads_per_worker);
  const int free_cores = std::max(1, load.cores - load.other_runnable);
  if (workers * threads_per_worker <= free_cores) return {workers, threads_per_worker};
  if (workers <= free_cores) return {workers, std::max(1, free_cores / workers)};
  return {free_cores, 1};
}

HostLoad sample_host_load() {
  HostLoad load;
  load.cores = usable_cores();
  load.quota_limited = cpu_budget().quota_limited();
  // One sample can catch a transient (a shell forking, a short daemon wakeup): the median of
  // five over ~4 ms says what keeps the cores busy.
  int samples[5];
  for (int i = 0; i < 5; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::microseconds(1000));
    samples[i] = procs_running();
    if (samples[i] < 0) return load;
  }
  std::nth_element(samples, samples + 2, samples + 5);
  load.other_runnable = std::max(0, samples[2] - 1);
  return load;
}

HostLoad lasting_host_load(const std::function<HostLoad()>& sample,
                           const std::function<void()>& wait) {
  HostLoad first = sample();
  if (first.other_runnable == 0) return first;
  wait();
  HostLoad second = sample();
  second.other_runnable = std::min(first.other_runnable, second.other_runnable);
  return second;
}

HostLoad sample_lasting_host_load() {
  return lasting_host_load(sample_host_load,
                           [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
}

std::vector<EnvironmentSetting> default_wait_policy(
    const std::function<const char*(const char*)>& lookup, const HostLoad& load) {
  std::vector<EnvironmentSetting> settings;
  // Under a CPU quota libgomp still counts the affinity mask's CPUs: a team sized to those
  // would share the quota's cores among more threads than it has.
  if (load.quota_limited && lookup("OMP_NUM_THREADS") == nullptr) {
    settings.push_back({"OMP_NUM_THREADS", std::to_string(load.cores)});
  }
  // A user who set either has chosen how threads wait; an empty value counts as a choice too.
  if (lookup("OMP_WAIT_POLICY") == nullptr && lookup("GOMP_SPINCOUNT") == nullptr) {
    settings.push_back({"GOMP_SPINCOUNT", std::to_string(spin_count_for(load))});
  }
  return settings;
}

void apply_default_wait_policy(char** argv) {
  auto lookup = [](const char* name) { return std::getenv(name); };
  std::vector<EnvironmentSetting> settings = default_wait_policy(lookup, sample_host_load());
  bool changes_libgomp = false;
  for (const EnvironmentSetting& setting : settings) {
    // Set even when it is libgomp's own value: child processes and spin_count_in_effect() read
    // the choice from the environment.
    if (setenv(setting.name.c_str(), setting.value.c_str(), 0) != 0) return;
    changes_libgomp |=
        setting.name != "GOMP_SPINCOUNT" || setting.value != std::to_string(kLibgompSpinCount);
  }
  if (!changes_libgomp || argv == nullptr || argv[0] == nullptr) return;
  // The binary's own path, not /proc/self/exe: the kernel names a process after the file it
  // executes, and "exe" in ps, top and pgrep hides cleave (and its MPI ranks) from its user.
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  execv(error ? "/proc/self/exe" : binary.c_str(), argv);
  // Still here: no /proc, or the binary is gone. Run on with libgomp's defaults; the variables
  // set above stay for child processes, which is what the user would get on the next start.
}

long spin_count_in_effect() {
  static const long count = [] {
    if (const char* spin = std::getenv("GOMP_SPINCOUNT"); spin != nullptr && *spin != '\0') {
      return parse_spin_count(spin);
    }
    if (const char* policy = std::getenv("OMP_WAIT_POLICY"); policy != nullptr) {
      std::string value(policy);
      for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (value == "passive") return 0L;
      if (value == "active") return 30000000000L;  // libgomp's count for an active policy
    }
    return kLibgompSpinCount;
  }();
  return count;
}

long wait_spin_count() {
  static const long spins = std::min(spin_count_in_effect(), kLibgompSpinCount);
  return spins;
}

}  // namespace cleave
