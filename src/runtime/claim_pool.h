// Threads that share a list of tasks, each claiming the next one, and sleep (never spin) between
// lists: a convolution's parts on a host whose cores other processes hold.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cleave {

/// The calling thread and `threads - 1` helpers. A helper waits on a condition variable, not
/// at a spinning OpenMP barrier, so on a host with no core free it takes no core while idle,
/// whatever GOMP_SPINCOUNT says. Helpers run tasks with one OpenMP thread.
class ClaimPool {
 public:
  explicit ClaimPool(int threads);
  ~ClaimPool();
  ClaimPool(const ClaimPool&) = delete;
  ClaimPool& operator=(const ClaimPool&) = delete;

  /// Calls task(i) once for every i in [0, count), on whichever thread claims i first, and
  /// returns when all have returned. `task` must not throw. One run at a time.
  void run(int count, const std::function<void(int)>& task);
  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

 private:
  void help();
  void claim_all();

  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(int)>* task_ = nullptr;
  int count_ = 0;
  int next_ = 0;         // The next task to claim.
  int done_ = 0;         // Tasks returned.
  long generation_ = 0;  // Runs started; a helper joins each once.
  bool stopping_ = false;
};

}  // namespace cleave
