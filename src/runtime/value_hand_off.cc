// In-process hand-off: ready flags spun on as long as OpenMP spins, then a condition variable.
#include "runtime/value_hand_off.h"

#include <chrono>

#include "runtime/wait_policy.h"

namespace cleave {

ValueHandOff::Wait ValueHandOff::await_input(ValueId /*value*/, int /*sample*/, int64_t /*run*/,
                                             double /*timeout_seconds*/,
                                             const Tensor** /*tensor*/) {
  return Wait::kStopped;
}

InProcessHandOff::InProcessHandOff(int tasks) : slots_(std::make_unique<Slot[]>(tasks)) {}

void InProcessHandOff::begin_run(int64_t /*run*/) {
  stopped_ = false;
}

void InProcessHandOff::publish(int task, int64_t run, const std::vector<Tensor>& outputs) {
  Slot& slot = slots_[task];
  slot.outputs = &outputs;
  slot.ready.store(run);
  if (slot.sleepers.load() > 0) {
    // Taking the lock orders the notify after a waiter's check, so no wakeup is lost.
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  }
}

ValueHandOff::Wait InProcessHandOff::await(int task, int64_t run, double timeout_seconds,
                                           const std::vector<Tensor>** outputs) {
  Slot& slot = slots_[task];
  // kTimedOut while neither ready nor stopped: the spin then ends in the sleep below.
  Wait spun = Wait::kTimedOut;
  const bool settled = spin_until([&] {
    if (slot.ready.load(std::memory_order_acquire) == run) {
      spun = Wait::kReady;
    } else if (stopped_.load(std::memory_order_relaxed)) {
      spun = Wait::kStopped;
    }
    return spun != Wait::kTimedOut;
  });
  if (settled) {
    if (spun == Wait::kReady) *outputs = slot.outputs;
    return spun;
  }
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::unique_lock lock(mutex_);
  // Announce the sleep before the last check: a producer stores `ready` before it reads the
  // task's sleepers (both sequentially consistent), so one of the two sees the other.
  // Counting sleepers per task spares the producers of every other task a lock and a futex
  // wake: with one worker asleep, each task of the busy one paid for waking it, only for it to
  // sleep again (docs/results/parallel.md).
  slot.sleepers.fetch_add(1);
  struct Leave {
    std::atomic<int>& count;
    ~Leave() { count.fetch_sub(1); }
  } leave{slot.sleepers};
  while (slot.ready.load() != run) {
    if (stopped_.load()) return Wait::kStopped;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        slot.ready.load() != run) {
      return Wait::kTimedOut;
    }
  }
  *outputs = slot.outputs;
  return Wait::kReady;
}

void InProcessHandOff::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  changed_.notify_all();
}

}  // namespace cleave
