// Threads that claim tasks one at a time and sleep between runs (claim_pool.h).
#include "runtime/claim_pool.h"

#include <omp.h>

namespace cleave {

ClaimPool::ClaimPool(int threads) {
  for (int i = 1; i < threads; ++i) helpers_.emplace_back([this] { help(); });
}

ClaimPool::~ClaimPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void ClaimPool::run(int count, const std::function<void(int)>& task) {
  if (count <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    count_ = count;
    next_ = 0;
    done_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  claim_all();
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [this] { return done_ == count_; });
  task_ = nullptr;
}

// Claims under the lock and runs outside it: a task is a whole oneDNN primitive, so the lock
// is taken a few times per convolution.
void ClaimPool::claim_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (task_ != nullptr && next_ < count_) {
    const int index = next_++;
    const std::function<void(int)>* task = task_;
    lock.unlock();
    (*task)(index);
    lock.lock();
    if (++done_ == count_) finished_.notify_one();
  }
}

void ClaimPool::help() {
  // A task is one thread's work: a oneDNN kernel that asks OpenMP for its team on this thread
  // (jit_dw does) must find one, not a team per core spinning on a host with none free.
  omp_set_num_threads(1);
  long seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    lock.unlock();
    claim_all();
    lock.lock();
  }
}

}  // namespace cleave
