// Default OpenMP wait policy of the cleave command: how long a thread spins at a barrier before
// it sleeps, chosen from how busy the host's cores are when the command starts.
#pragma once

#include <immintrin.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace cleave {

/// One environment variable to set.
struct EnvironmentSetting {
  std::string name;
  std::string value;
};

/// How busy the host is: threads of other processes ready to run, and the cores this process
/// may use (its affinity mask, bounded by its cgroup CPU quota: support/cpu_quota.h).
struct HostLoad {
  int other_runnable = 0;
  int cores = 1;
  /// A cgroup CPU quota holds this process below its affinity mask (CpuBudget::quota_limited):
  /// every thread, waiting or not, spends the one quota.
  bool quota_limited = false;
};

/// libgomp's own spin count when the user chose no wait policy: 300000 iterations of one `pause`
/// (~8 ms on an EPYC of family 26). On a host where the other runnable threads leave every
/// thread of a team a core most of the time, spinning through a short preemption is cheaper
/// than sleeping and being woken (docs/results/load.md).
inline constexpr long kLibgompSpinCount = 300000;

/// The spin count on an oversubscribed host: none, a waiting thread sleeps at once. With more
/// runnable threads than cores, the thread a barrier waits for is often not running at all,
/// and a spinning one takes the core from it or from another process; sleeping at once was the
/// fastest of 0, 1000 and 300000 with 3 and 6 busy processes on 2 cores, and under a load of
/// 15-23 (docs/results/load.md).
inline constexpr long kBusySpinCount = 0;

/// The spin count for a host in this state: kBusySpinCount when the other processes' runnable
/// threads outnumber the cores (a team's thread then often waits for a core) or a CPU quota
/// bounds the process (a spinning thread spends the quota the computing ones need), else
/// libgomp's own.
long spin_count_for(const HostLoad& load);

/// Intra-op threads for a sequential run that asked for `requested`: no more than the cores
/// that the other processes' runnable threads leave free, and at least one. With every core
/// taken, a team's barriers wait for a thread that waits for a core: with 2 busy processes on
/// 2 cores, 2 threads took mobilenet_v2 268 ms and squeezenet1_0 287 ms against ONNX Runtime's
/// 12 and 18 ms (docs/results/load.md); one thread never meets a barrier.
int threads_for(int requested, const HostLoad& load);

/// Threads that claim a sequential run's convolution parts (ExecutorOptions::claim_threads)
/// beside threads_for's one thread, on a host where the other processes' runnable threads hold
/// every core: `requested` then, but no more than the cores; 0 otherwise (with a core free, one
/// thread of its own was faster: ResNet-50's convolutions beside 1 busy process on 2 cores took
/// 99-117 ms on 1 thread against 108-126 ms in parts; beside 2, 163-191 against 132-174 ms,
/// bench/load/conv_parts.sh).
int claim_threads_for(int requested, const HostLoad& load);

/// Intra-op threads for each of `ranks_on_host` MPI ranks of one job sharing this host, each
/// asking for `requested`. The ranks share the cores that other processes leave free: the
/// load's runnable threads less the host's other ranks (a rank still loading its weights is
/// runnable when another samples, and an idle host must not look busy; a rank already asleep
/// makes the count err towards more threads), as many threads each as fit, and at least one.
/// With every core taken, a rank's team meets at barriers as a sequential run's does
/// (threads_for).
int rank_threads_for(int requested, int ranks_on_host, const HostLoad& load);

/// Whether the user fixed the thread counts: a --fixed-threads `flag`, or CLEAVE_FIXED_THREADS
/// set (to anything). Every command and generated program that follows the free cores asks this.
bool threads_fixed_by_user(bool flag);

/// How a plan of `workers` workers with `threads_per_worker` intra-op threads each runs on a
/// host in this state: threads for the workers (ParallelOptions::threads; fewer than the
/// workers folds them) and intra-op threads per worker.
struct PlanThreads {
  int threads = 1;
  int threads_per_worker = 1;
};

/// The plan's own counts while the cores that other processes leave free hold them all;
/// else first fewer intra-op threads per worker (a team's barriers are where a preempted
/// thread costs most), then, when even one thread per worker is too many, the workers folded
/// onto the free cores with one thread each. At least one thread.
PlanThreads plan_threads_for(int workers, int threads_per_worker, const HostLoad& load);

/// The host's load now: the median over a few samples, about a millisecond apart, of the
/// runnable threads the kernel counts (/proc/stat's procs_running, less the caller), and the
/// cores this process may use (usable_cores()). Zero other threads when /proc cannot be read.
HostLoad sample_host_load();

/// The load that lasts: when `sample` sees other runnable threads, `wait` (about 50 ms), a second
/// sample, and the lower count of the two. A process started beside this one (the reader of its
/// output in a pipeline: `cleave run --json | python3`) holds a core for its first tens of
/// milliseconds only.
HostLoad lasting_host_load(const std::function<HostLoad()>& sample,
                           const std::function<void()>& wait);

/// lasting_host_load over sample_host_load, waiting 50 ms: what thread counts follow.
HostLoad sample_lasting_host_load();

/// What the cleave command sets before libgomp reads its environment: GOMP_SPINCOUNT (to the
/// count for `load`), unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (to anything, even
/// empty); and under a CPU quota (load.quota_limited) OMP_NUM_THREADS to the usable cores,
/// unless the user set it. `lookup` returns a variable's value or nullptr when it is unset
/// (std::getenv in the command).
std::vector<EnvironmentSetting> default_wait_policy(
    const std::function<const char*(const char*)>& lookup, const HostLoad& load);

/// Applies default_wait_policy for the sampled host load to this process. libgomp reads its
/// environment in a constructor that runs before main(), so a spin count other than libgomp's
/// own only counts in a new image: this sets the variable and, if its value differs from what
/// libgomp already runs with, executes its own binary again (the path /proc/self/exe links to,
/// so the process keeps its name) with the same arguments (the new image finds the variable set
/// and carries on). Returns when there is nothing to change, or
/// when the exec failed (the process then runs with libgomp's defaults).
void apply_default_wait_policy(char** argv);

/// The spin count the OpenMP threads of this process use (from GOMP_SPINCOUNT and
/// OMP_WAIT_POLICY as libgomp reads them), read once; the parallel executor's workers spin as
/// long before they sleep.
long spin_count_in_effect();

/// How many times a thread waiting for a value another thread of this process makes checks it
/// before it sleeps: as long as the OpenMP threads spin (spin_count_in_effect), and never past
/// libgomp's default, so that a timeout stays a timeout: past that, the producer is either in a
/// long task or not running at all because another process has its core, and spinning on would
/// take a core from it or from that process.
long wait_spin_count();

/// The spin of every in-process wait for a value (the thread executor's hand-off, the channels
/// of generated programs): calls `done`, a pause between calls, until it returns true or
/// wait_spin_count() calls returned false. Returns whether `done` returned true; when not, the
/// caller sleeps its own way (a condition variable, a futex).
template <typename Done>
bool spin_until(Done&& done) {
  const long spins = wait_spin_count();
  for (long spin = 0; spin < spins; ++spin) {
    if (done()) return true;
    _mm_pause();
  }
  return false;
}

/// spin_until(done), then, if `done` still returns false, sleeps on `changed` (under `mutex`)
/// until it returns true: the end of a run that other threads finish, which they usually
/// finish before the waiter, so that no wake-up is paid on the common path.
template <typename Done>
void spin_then_wait(std::mutex& mutex, std::condition_variable& changed, Done&& done) {
  if (spin_until(done)) return;
  std::unique_lock lock(mutex);
  changed.wait(lock, done);
}

/// The caller's wait for the other workers' end of a run: spin_then_wait, or straight to sleep
/// where the workers were folded onto fewer cores than there are workers (a spinning caller
/// would hold the core a folded worker needs).
template <typename Done>
void wait_for_other_workers(std::mutex& mutex, std::condition_variable& changed, bool folded,
                            Done&& done) {
  if (!folded) {
    spin_then_wait(mutex, changed, done);
    return;
  }
  std::unique_lock lock(mutex);
  changed.wait(lock, done);
}

}  // namespace cleave
