// The one task loop: how a worker's loop ends on a wait, and what every executor reports alike.
#include "runtime/task_loop.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "modelgen/inception.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

Graph chain() {
  return parse_graph(R"(graph g (%x: f32[16]) {
  %a = "a" Relu(%x)
  %b = "b" Neg(%a)
  return %b
}
)");
}

// Task 0 runs a, task 1 runs b and reads task 0's output.
void fill_chain(TaskLoop& loop, Graph& graph) {
  loop.graph = &graph;
  loop.timeout_seconds = 0.01;
  loop.constants.resize(graph.value_capacity());
  const std::vector<NodeId> order = graph.topological_order();
  loop.tasks.resize(2);
  for (int t = 0; t < 2; ++t) {
    loop.tasks[t].node = order[t];
    loop.tasks[t].runner = make_runner(graph, order[t], false, ConvolutionFamily::kBlocked);
  }
  loop.tasks[0].sources = {
      TaskInput{TaskInput::Kind::kGraphInput, graph.node(order[0]).inputs[0], -1, -1}};
  loop.tasks[1].sources = {TaskInput{TaskInput::Kind::kTask, graph.node(order[1]).inputs[0], 0, 0}};
  count_uses(loop);
}

// Runs only task 1, whose producer never publishes.
LoopEnd run_reader_alone(ValueHandOff& hand_off, const SampleInputs& inputs) {
  Graph graph = chain();
  TaskLoop loop;
  fill_chain(loop, graph);
  BufferPool pool;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const std::vector<int> order = {1};
  WorkerRun run;
  run.order = order;
  run.run = 1;
  run.pool = &pool;
  run.engine = &engine;
  run.stream = &stream;
  run.hand_off = &hand_off;
  run.inputs = std::span<const SampleInputs>(&inputs, 1);
  reset_reads(loop);
  return run_worker_tasks(loop, run);
}

TEST(TaskLoop, AnInputThatNeverComesEndsTheLoopNamingTheTaskAndItsProducer) {
  InProcessHandOff hand_off(2);
  hand_off.begin_run(1);
  const LoopEnd end = run_reader_alone(hand_off, random_inputs(chain(), 1));
  EXPECT_EQ(end.wait, ValueHandOff::Wait::kTimedOut);
  EXPECT_EQ(end.task, 1);
  EXPECT_EQ(end.awaited.kind, TaskInput::Kind::kTask);
  EXPECT_EQ(end.awaited.task, 0);
}

TEST(TaskLoop, AStoppedHandOffEndsTheLoopAsStopped) {
  InProcessHandOff hand_off(2);
  hand_off.begin_run(1);
  hand_off.stop();
  const LoopEnd end = run_reader_alone(hand_off, random_inputs(chain(), 1));
  EXPECT_EQ(end.wait, ValueHandOff::Wait::kStopped);
  EXPECT_EQ(end.task, 1);
}

// A graph output that another node also reads, on another worker: its last read must not
// drop it before the run returns it.
TEST(TaskLoop, AGraphOutputReadOnAnotherWorkerIsStillReturned) {
  Graph graph = parse_graph(R"(graph g (%x: f32[64]) {
  %a = "a" Relu(%x)
  %b = "b" Neg(%a)
  return %a, %b
}
)");
  TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_workers(2, 1));
  Plan plan;
  plan.order.resize(2);
  plan.tasks.resize(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    const int worker = graph.node(tasks.tasks[t].node).name == "b" ? 1 : 0;
    plan.order[worker].push_back(static_cast<int>(t));
    plan.tasks[t] = {static_cast<int>(t), worker, 0, 0};
  }
  ParallelOptions options;
  options.timeout_seconds = 10;
  ParallelExecutor parallel(graph, tasks, plan, options);
  Executor sequential(graph);
  const auto inputs = random_inputs(graph, 2);
  const std::vector<Tensor> expected = sequential.run(inputs);
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> got = parallel.run(inputs);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].byte_size(), expected[i].byte_size()) << "output " << i;
      EXPECT_EQ(std::memcmp(got[i].raw(), expected[i].raw(), got[i].byte_size()), 0)
          << "output " << i;
    }
  }
}

// RunStats is one type whatever the executor: the thread executor names the same kernels and
// frees the same weights as the sequential one.
TEST(TaskLoop, ThreadAndSequentialExecutorsReportImplementationsAndReleasedBytesAlike) {
  InceptionOptions model;
  model.blocks = 2;
  model.channels = 16;
  model.height = 8;
  model.width = 8;
  const Graph graph = generate_inception(model);
  ModelPlanOptions planning;
  planning.strategy = "lc";
  planning.workers = 2;
  const ModelPlan plan = plan_model(graph, static_costs(graph), planning);
  ParallelOptions parallel_options;
  parallel_options.release_packed_weights = true;
  ParallelExecutor parallel(graph, plan.tasks, plan.plan, parallel_options);
  ExecutorOptions sequential_options;
  sequential_options.release_packed_weights = true;
  Executor sequential(graph, sequential_options);
  const auto inputs = random_inputs(graph, 4);
  parallel.run(inputs);
  sequential.run(inputs);
  EXPECT_GT(sequential.stats().released_weight_bytes, 0u);
  EXPECT_EQ(parallel.stats().released_weight_bytes, sequential.stats().released_weight_bytes);
  ASSERT_EQ(parallel.stats().implementations.size(), graph.node_capacity());
  EXPECT_EQ(parallel.stats().implementations, sequential.stats().implementations);
}

}  // namespace
}  // namespace cleave
