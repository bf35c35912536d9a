// The permits that fold a generated program's workers onto fewer cores.
#include "codegen_runtime/worker_permits.h"

namespace cleave {

void WorkerPermits::set(int permits, int workers) {
  std::lock_guard lock(mutex_);
  folded_ = permits >= 1 && permits < workers;
  free_ = folded_ ? permits : 0;
}

void WorkerPermits::acquire() {
  if (!folded_) return;
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return free_ > 0; });
  --free_;
}

void WorkerPermits::release() {
  if (!folded_) return;
  {
    std::lock_guard lock(mutex_);
    ++free_;
  }
  freed_.notify_one();
}

}  // namespace cleave
