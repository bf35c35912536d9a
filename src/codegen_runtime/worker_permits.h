// Workers of a generated program folded onto fewer threads than it has workers: a worker
// computes only while it holds a permit, and gives it up whenever it waits for another.
#pragma once

#include <condition_variable>
#include <mutex>

namespace cleave {

/// The cores a generated program's workers may compute on at once, as `cleave run --plan` folds
/// its workers onto the cores other processes leave free (plan_threads_for), where that is more
/// than one core but fewer than the workers (onto one, the programs run every worker's steps in
/// one order on the caller instead: StaticProgram::set_threads). Each worker keeps its own
/// thread, but only `permits` of them compute at any time: a worker takes a permit before its
/// first step, gives it back before it sleeps on a value from another worker and takes one
/// again once the value is there. The host's scheduler then sees as many runnable threads of
/// the program as `cleave run`'s folded executor has; the sleeping ones neither spin nor hold
/// a core.
class WorkerPermits {
 public:
  /// `permits` for `workers` workers; fewer than one or at least `workers`: not folded, and
  /// acquire() and release() do nothing. Not while a worker runs.
  void set(int permits, int workers);
  /// Whether the workers share fewer permits than they are: a wait must then give its permit
  /// back and must not spin (the worker holding it needs the core).
  bool folded() const { return folded_; }
  /// Blocks until a permit is free and takes it.
  void acquire();
  /// Gives a permit back and wakes a worker waiting for one.
  void release();

 private:
  bool folded_ = false;
  std::mutex mutex_;
  std::condition_variable freed_;
  int free_ = 0;
};

/// Holds a permit from construction to destruction (a worker's run, however it ends).
class WorkerPermit {
 public:
  explicit WorkerPermit(WorkerPermits& permits) : permits_(permits) { permits_.acquire(); }
  ~WorkerPermit() { permits_.release(); }
  WorkerPermit(const WorkerPermit&) = delete;
  WorkerPermit& operator=(const WorkerPermit&) = delete;

 private:
  WorkerPermits& permits_;
};

/// The wait of a worker for another's value: when folded, gives the permit back, sleeps through
/// `sleep` (which returns once the value is there or the run failed), then takes a permit
/// again; else `spin_and_sleep`, the program's usual wait (spinning first).
template <typename Sleep, typename SpinAndSleep>
void wait_as_worker(WorkerPermits& permits, Sleep&& sleep, SpinAndSleep&& spin_and_sleep) {
  if (!permits.folded()) {
    spin_and_sleep();
    return;
  }
  permits.release();
  sleep();
  permits.acquire();
}

}  // namespace cleave
