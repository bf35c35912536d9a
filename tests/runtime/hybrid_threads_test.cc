// The thread executor runs each worker of a hybrid plan (devices of unequal `threads`) with its
// own device's intra-op threads, and the outputs stay those of the sequential run.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <mutex>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "modelgen/inception.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

// Per worker, the OpenMP team size its thread had set when its tasks ended.
class ThreadCounts : public ExecutorObserver {
 public:
  void on_run_begin(int workers, int) override { counts_.assign(workers, 0); }
  void on_task_end(const Trace::Event& event) override {
    std::lock_guard lock(mutex_);
    counts_[event.worker] = omp_get_max_threads();
  }
  void on_run_end(double) override {}
  std::vector<int> counts() const { return counts_; }

 private:
  std::mutex mutex_;
  std::vector<int> counts_;
};

ModelPlan lc_plan_with_threads(const Graph& graph, const std::vector<int>& threads) {
  ModelPlanOptions options;
  options.strategy = "lc";
  ModelPlan plan = plan_model(graph, static_costs(graph), options);
  for (std::size_t d = 0; d < threads.size(); ++d) {
    plan.tasks.machine.devices[d].threads = threads[d];
    plan.tasks.machine.devices[d].cores.clear();
  }
  return plan;
}

Graph inception() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

TEST(HybridThreads, EachWorkerRunsWithItsDevicesThreads) {
  const Graph graph = inception();
  const ModelPlan plan = lc_plan_with_threads(graph, {3, 1});
  ParallelOptions options;
  options.pin_threads = false;  // This host may have fewer cores than the plan's four.
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  auto counts = std::make_shared<ThreadCounts>();
  parallel.add_observer(counts);
  parallel.run(random_inputs(graph, 1));
  EXPECT_EQ(counts->counts(), (std::vector<int>{3, 1}));
}

TEST(HybridThreads, EqualDevicesKeepThreadsPerWorker) {
  const Graph graph = inception();
  const ModelPlan plan = lc_plan_with_threads(graph, {1, 1});
  ParallelOptions options;
  options.pin_threads = false;
  options.threads_per_worker = 2;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  auto counts = std::make_shared<ThreadCounts>();
  parallel.add_observer(counts);
  parallel.run(random_inputs(graph, 1));
  EXPECT_EQ(counts->counts(), (std::vector<int>{2, 2}));
}

TEST(HybridThreads, OutputsMatchTheSequentialRun) {
  const Graph graph = inception();
  const ModelPlan plan = lc_plan_with_threads(graph, {2, 1});
  ParallelOptions options;
  options.pin_threads = false;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, options);
  Executor sequential(graph);
  const auto inputs = random_inputs(graph, 5);
  const std::vector<Tensor> expected = sequential.run(inputs);
  const std::vector<Tensor> got = parallel.run(inputs);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), expected[i].shape());
    const float* a = static_cast<const float*>(got[i].raw());
    const float* b = static_cast<const float*>(expected[i].raw());
    for (std::size_t k = 0; k < got[i].byte_size() / sizeof(float); ++k)
      ASSERT_NEAR(a[k], b[k], 1e-4 * (1 + std::fabs(b[k]))) << "output " << i << " at " << k;
  }
}

}  // namespace
}  // namespace cleave
