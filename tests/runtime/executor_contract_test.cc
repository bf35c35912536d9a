// The executor contract: the sequential and the thread executor behind ExecutorInterface.
#include "runtime/executor_interface.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "bitwise_equal.h"
#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

// Two branches, so that an lc plan on two workers hands a value across.
constexpr const char* kDiamond = R"(graph g (%x: f32[1,64]) {
  %a = "left" Relu(%x)
  %b = "right" Sigmoid(%x)
  %c = "tail" Tanh(%b)
  %y = "join" Add(%a, %c)
  return %y
}
)";

ModelPlan lc_plan(const Graph& graph) {
  ModelPlanOptions options;
  options.strategy = "lc";
  options.workers = 2;
  return plan_model(graph, static_costs(graph), options);
}

// Counts what an executor tells its observers.
class CountingObserver : public ExecutorObserver {
 public:
  void on_run_begin(int workers, int tasks) override {
    ++runs_begun;
    this->workers = workers;
    seen.assign(static_cast<std::size_t>(tasks), 0);
  }
  void on_task_end(const Trace::Event& event) override { ++seen.at(event.task); }
  void on_run_end(double makespan) override {
    ++runs_ended;
    last_makespan = makespan;
  }
  int runs_begun = 0;
  int runs_ended = 0;
  int workers = 0;
  double last_makespan = -1;
  std::vector<int> seen;  // Per task: on_task_end calls in the last run.
};

TEST(ExecutorContract, BothExecutorsGiveTheSameOutputsThroughTheInterface) {
  Graph graph = parse_graph(kDiamond);
  ModelPlan plan = lc_plan(graph);
  std::vector<std::unique_ptr<ExecutorInterface>> executors;
  executors.push_back(std::make_unique<Executor>(graph));
  executors.push_back(std::make_unique<ParallelExecutor>(graph, plan.tasks, plan.plan));
  const std::vector<SampleInputs> inputs{random_inputs(graph, 4)};
  std::vector<std::vector<Tensor>> outputs;
  for (auto& executor : executors) {
    EXPECT_EQ(executor->samples(), 1);
    outputs.push_back(executor->run(inputs).at(0));
  }
  EXPECT_TRUE(bitwise_equal(outputs[0], outputs[1]));
}

TEST(ExecutorContract, StatsCountRunsUntilReset) {
  Graph graph = parse_graph(kDiamond);
  ModelPlan plan = lc_plan(graph);
  Executor sequential(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  const SampleInputs inputs = random_inputs(graph, 1);
  for (ExecutorInterface* executor :
       {static_cast<ExecutorInterface*>(&sequential), static_cast<ExecutorInterface*>(&parallel)}) {
    executor->run(inputs);
    executor->run(inputs);
    EXPECT_EQ(executor->stats().runs, 2);
    EXPECT_GT(executor->stats().peak_activation_bytes, 0u);
    executor->reset_stats();
    EXPECT_EQ(executor->stats().runs, 0);
  }
}

TEST(ExecutorContract, TheThreadExecutorTimesEveryNodeFromItsTrace) {
  Graph graph = parse_graph(kDiamond);
  ModelPlan plan = lc_plan(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  parallel.run(random_inputs(graph, 1));
  for (NodeId node : graph.node_ids())
    EXPECT_GT(parallel.stats().node_seconds.at(node), 0) << graph.describe(node);
}

TEST(ExecutorContract, TheSequentialExecutorRunsSeveralSamplesInTurn) {
  Graph graph = parse_graph(kDiamond);
  Executor executor(graph);
  const SampleInputs first = random_inputs(graph, 1), second = random_inputs(graph, 2);
  const std::vector<std::vector<Tensor>> both = executor.run(std::vector{first, second});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(bitwise_equal(both[0], executor.run(first)));
  EXPECT_TRUE(bitwise_equal(both[1], executor.run(second)));
  EXPECT_FALSE(bitwise_equal(both[0], both[1]));
  EXPECT_THROW(executor.run(std::vector<SampleInputs>{}), Error);
}

TEST(ExecutorContract, AnObserverSeesEveryTaskOfEveryParallelRun) {
  Graph graph = parse_graph(kDiamond);
  ModelPlan plan = lc_plan(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  auto observer = std::make_shared<CountingObserver>();
  parallel.add_observer(observer);
  const SampleInputs inputs = random_inputs(graph, 1);
  parallel.run(inputs);
  parallel.run(inputs);
  EXPECT_EQ(observer->runs_begun, 2);
  EXPECT_EQ(observer->runs_ended, 2);
  EXPECT_EQ(observer->workers, 2);
  EXPECT_EQ(observer->seen, std::vector<int>(plan.tasks.tasks.size(), 1));
  EXPECT_DOUBLE_EQ(observer->last_makespan, parallel.last_trace().makespan);
}

TEST(ExecutorContract, AnObserverSeesEveryNodeOfASequentialRun) {
  Graph graph = parse_graph(kDiamond);
  Executor executor(graph);
  auto observer = std::make_shared<CountingObserver>();
  executor.add_observer(observer);
  executor.run(random_inputs(graph, 1));
  EXPECT_EQ(observer->workers, 1);
  EXPECT_EQ(observer->seen, std::vector<int>(graph.node_count(), 1));
  EXPECT_GT(observer->last_makespan, 0);
}

TEST(ExecutorContract, TheSequentialExecutorKeepsATraceOnlyWhenCollectingStats) {
  Graph graph = parse_graph(kDiamond);
  Executor plain(graph);
  plain.run(random_inputs(graph, 1));
  EXPECT_TRUE(plain.last_trace().events.empty());
  ExecutorOptions options;
  options.collect_stats = true;
  Executor timed(graph, options);
  timed.run(random_inputs(graph, 1));
  const Trace& trace = timed.last_trace();
  ASSERT_EQ(trace.events.size(), graph.node_count());
  for (std::size_t position = 0; position < trace.events.size(); ++position) {
    EXPECT_EQ(trace.events[position].task, static_cast<int>(position));
    EXPECT_EQ(trace.events[position].worker, 0);
    EXPECT_LE(trace.events[position].end, trace.makespan);
  }
}

TEST(ExecutorContract, TheChromeTraceWriterNamesEachTaskOfTheLastRun) {
  Graph graph = parse_graph(kDiamond);
  ModelPlan plan = lc_plan(graph);
  ParallelExecutor parallel(graph, plan.tasks, plan.plan);
  auto writer = std::make_shared<ChromeTraceWriter>(plan.tasks, plan.plan);
  parallel.add_observer(writer);
  parallel.run(random_inputs(graph, 1));
  const std::string json = writer->json();
  for (const char* name : {"left", "right", "tail", "join"})
    EXPECT_NE(json.find(name), std::string::npos) << name;
  EXPECT_EQ(json, chrome_trace_json(parallel.last_trace(), plan.tasks, plan.plan));
}

}  // namespace
}  // namespace cleave
