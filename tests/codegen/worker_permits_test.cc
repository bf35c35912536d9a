// WorkerPermits: folded workers compute no more at once than their permits, and all finish.
#include "codegen_runtime/worker_permits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace cleave {
namespace {

// `workers` threads, each `rounds` times: compute (holding a permit), then wait for the next
// worker's previous round (as a pipeline stage waits for its input) with the permit given back.
// Returns the most workers seen computing at once.
int most_at_once(int permits_count, int workers, int rounds) {
  WorkerPermits permits;
  permits.set(permits_count, workers);
  std::atomic<int> computing{0};
  std::atomic<int> most{0};
  std::vector<std::atomic<int>> done(static_cast<std::size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      const WorkerPermit permit(permits);
      for (int r = 0; r < rounds; ++r) {
        const int now = computing.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        computing.fetch_sub(1);
        done[w].store(r + 1);
        done[w].notify_all();
        // Worker w waits until worker w+1 has done round r (the last worker waits for none).
        if (w + 1 < workers) {
          std::atomic<int>& next = done[w + 1];
          const auto ready = [&] { return next.load() >= r + 1; };
          wait_as_worker(
              permits,
              [&] {
                for (int v = next.load(); !ready(); v = next.load()) next.wait(v);
              },
              [&] {
                for (int v = next.load(); !ready(); v = next.load()) next.wait(v);
              });
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return most.load();
}

TEST(WorkerPermits, OnePermitLetsOneWorkerComputeAtATimeAndEveryWorkerFinishes) {
  EXPECT_EQ(most_at_once(1, 2, 200), 1);
  EXPECT_EQ(most_at_once(1, 4, 100), 1);
}

TEST(WorkerPermits, TwoPermitsForFourWorkersLetAtMostTwoCompute) {
  EXPECT_LE(most_at_once(2, 4, 100), 2);
}

TEST(WorkerPermits, AsManyPermitsAsWorkersIsNotFolded) {
  WorkerPermits permits;
  permits.set(2, 2);
  EXPECT_FALSE(permits.folded());
  permits.set(0, 2);
  EXPECT_FALSE(permits.folded());
  permits.set(1, 2);
  EXPECT_TRUE(permits.folded());
}

}  // namespace
}  // namespace cleave
