// Tests of ClaimPool: every task runs once per run, on the pool's threads, run after run.
#include "runtime/claim_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace cleave {
namespace {

TEST(ClaimPool, RunsEveryTaskOnce) {
  ClaimPool pool(3);
  EXPECT_EQ(pool.threads(), 3);
  std::vector<std::atomic<int>> calls(100);
  pool.run(100, [&](int i) { ++calls[i]; });
  for (int i = 0; i < 100; ++i) EXPECT_EQ(calls[i].load(), 1) << i;
}

TEST(ClaimPool, RunsAgainAndAgain) {
  ClaimPool pool(2);
  std::atomic<long> sum{0};
  for (int run = 0; run < 200; ++run) pool.run(5, [&](int i) { sum += i + 1; });
  EXPECT_EQ(sum.load(), 200 * 15);
}

// A task that waits for another to start can finish only if two threads run tasks at once.
TEST(ClaimPool, HelpersTakeTasksWhileTheCallerIsBusy) {
  ClaimPool pool(2);
  std::atomic<int> started{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.run(2, [&](int) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    ++started;
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(threads.size(), 2u);
}

TEST(ClaimPool, OneThreadRunsEverythingItself) {
  ClaimPool pool(1);
  std::set<std::thread::id> threads;
  pool.run(4, [&](int) { threads.insert(std::this_thread::get_id()); });
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ClaimPool, NoTasksReturnsAtOnce) {
  ClaimPool pool(2);
  bool called = false;
  pool.run(0, [&](int) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace cleave
