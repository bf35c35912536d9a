// Timed rounds: order, untimed runs, errors, and no other executor's threads during a timed run.
#include "runtime/timed_rounds.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "modelgen/inception.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "support/error.h"
#include "support/system_load.h"

namespace cleave {
namespace {

Graph small_inception() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

ModelPlan lc_plan(const Graph& graph) {
  ModelPlanOptions options;
  options.strategy = "lc";
  options.workers = 2;
  return plan_model(graph, static_costs(graph), options);
}

// A team of two on the calling thread, as a profile or an output check leaves it.
void make_a_team_here() {
  std::atomic<int> members{0};
#pragma omp parallel num_threads(2)
  members += 1;
  ASSERT_EQ(members.load(), 2);
}

// The sequence of executors run(v) was called with, answering `v * 10 + call` milliseconds.
struct RecordedRuns {
  std::vector<std::size_t> order;
  RoundRun run() {
    return [this](std::size_t v) {
      order.push_back(v);
      return static_cast<double>(v * 10 + order.size());
    };
  }
};

TEST(TimedRounds, RoundsAlternateTheOrderAndEachStartsWithAnUntimedRun) {
  const Graph graph = small_inception();
  Executor a(graph), b(graph);
  RecordedRuns runs;
  const std::vector<std::vector<double>> ms = time_in_rounds({&a, &b}, {1, 2, 2}, runs.run());
  // Warm-up round A B; round 1: A A A A, B B B B; round 2 reversed: B B B B, A A A A (two
  // untimed runs, then two timed).
  const std::vector<std::size_t> expected = {0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  EXPECT_EQ(runs.order, expected);
  // The timed runs are the last two of each round, in order.
  EXPECT_EQ(ms, (std::vector<std::vector<double>>{{5, 6, 17, 18}, {19, 20, 23, 24}}));
}

TEST(TimedRounds, ARoundsUntimedRunsAreAsManyAsAsked) {
  const Graph graph = small_inception();
  Executor a(graph);
  RecordedRuns runs;
  TimedRounds rounds{0, 2, 1};
  rounds.untimed_runs_per_round = 3;
  const std::vector<std::vector<double>> ms = time_in_rounds({&a}, rounds, runs.run());
  EXPECT_EQ(runs.order.size(), 8u);
  EXPECT_EQ(ms, (std::vector<std::vector<double>>{{4, 8}}));
}

TEST(TimedRounds, ARunsErrorReachesTheCallerAfterItsRound) {
  const Graph graph = small_inception();
  Executor a(graph), b(graph);
  const int before = process_threads();
  const RoundRun run = [](std::size_t v) -> double {
    if (v == 1) throw Error("executor 1 failed");
    return 1.0;
  };
  try {
    time_in_rounds({&a, &b}, {0, 1, 1}, run);
    FAIL() << "the run's error should reach the caller";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "executor 1 failed");
  }
  EXPECT_EQ(process_threads(), before) << "the failed round's thread should have been joined";
}

// While one executor is timed, the process holds the round's thread and that executor's own
// threads only: not the other executor's workers, not the caller's OpenMP team.
TEST(TimedRounds, OnlyTheTimedExecutorsThreadsAreAlive) {
  const Graph graph = small_inception();
  const std::vector<SampleInputs> inputs = {random_inputs(graph, 1)};
  // A test before this one in the process (a sanitizer build runs its tests in shards) may have
  // left an OpenMP team, which time_in_rounds ends: count from none.
  omp_pause_resource_all(omp_pause_hard);
  const int base = process_threads();
  ASSERT_GT(base, 0) << "/proc/self/task should be readable";
  Executor sequential(graph);  // One thread, on the caller's thread: no team.
  const ModelPlan plan = lc_plan(graph);
  ASSERT_EQ(plan.tasks.machine.size(), 2u);
  ParallelOptions options;
  options.pin_threads = false;  // One thread per worker: two workers, no teams.
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  ExecutorOptions two_threads;
  two_threads.threads = 2;  // The caller's thread and at most one team thread.
  Executor intra_op(graph, two_threads);
  make_a_team_here();
  const std::vector<ExecutorInterface*> executors = {&sequential, &parallel, &intra_op};
  std::vector<std::vector<int>> alive(executors.size());
  time_in_rounds(executors, {1, 3, 2}, [&](std::size_t v) {
    executors[v]->run(inputs);
    alive[v].push_back(process_threads());
    return 1.0;
  });
  for (int threads : alive[0]) EXPECT_EQ(threads, base + 1) << "sequential, 1 thread";
  // Worker 0 on the round's thread, worker 1 on a thread of its own.
  for (int threads : alive[1]) EXPECT_EQ(threads, base + 2) << "2 workers";
  for (int threads : alive[2]) {
    EXPECT_GE(threads, base + 1) << "sequential, 2 threads";
    EXPECT_LE(threads, base + 2) << "sequential, 2 threads";
  }
  EXPECT_EQ(alive[1].size(), 1u + 3u * 4u);  // Each round's two untimed runs, then two timed.
}

TEST(TimedRounds, AThreadExecutorRunsAgainAfterItsThreadsEnded) {
  const Graph graph = small_inception();
  const SampleInputs inputs = random_inputs(graph, 2);
  const ModelPlan plan = lc_plan(graph);
  ParallelOptions options;
  options.pin_threads = false;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  const std::vector<Tensor> first = parallel.run(inputs);
  const int with_workers = process_threads();
  parallel.end_threads();
  EXPECT_EQ(process_threads(), with_workers - 1);  // Worker 1's; worker 0 runs on the caller.
  const std::vector<Tensor> again = parallel.run(inputs);
  EXPECT_EQ(process_threads(), with_workers);
  ASSERT_EQ(again.size(), first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    ASSERT_EQ(again[i].byte_size(), first[i].byte_size());
    EXPECT_EQ(std::memcmp(again[i].raw(), first[i].raw(), first[i].byte_size()), 0);
  }
}

}  // namespace
}  // namespace cleave
