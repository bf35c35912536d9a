// The split's Plan runs on the thread executor (one worker per machine) with the model's outputs.
#include "spatial/split_plan.h"

#include <gtest/gtest.h>

#include "cost/cost_table.h"
#include "plan/simulator.h"
#include "runtime/parallel_executor.h"
#include "split_testing.h"

namespace cleave {
namespace {

TEST(SplitPlan, PartitionedGraphRunsOnTheThreadExecutor) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,3,16,12]) {
  @w1: f32[8,3,3,3]
  @w2: f32[4,8,3,3]
  %c1: f32[1,8,16,12] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1: f32[1,8,16,12] = Relu(%c1)
  %c2: f32[1,4,8,6] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%r1, @w2)
  return %c2
})");
  for (SplitDim dim : {SplitDim::kH, SplitDim::kC}) {
    SplitResult r = testing::split(g, 2, dim);
    const Graph& pg = r.partitioned.graph;
    ModelPlan plan = split_plan(pg, r.partitioned, static_costs(pg), cpu_machine(2, 1));
    std::vector<int> workers;
    for (const PlannedTask& t : plan.plan.tasks) workers.push_back(t.worker);
    EXPECT_NE(std::count(workers.begin(), workers.end(), 1), 0);  // machine 1 has work
    ParallelOptions options;
    options.pin_threads = false;
    ParallelExecutor executor(pg, plan.tasks, plan.plan, options);
    auto inputs = random_inputs(g, 9);
    std::vector<Tensor> got = executor.run(inputs);
    Executor whole(g);
    std::vector<Tensor> expected = whole.run(inputs);
    auto a = expected[0].to_double_vector(), b = got[0].to_double_vector();
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4) << split_dim_name(dim);
  }
}

// Two machines exchanging one layer's halos: each sends its cut as soon as the rows are made,
// before it waits for its neighbour's, so neither waits on the other's join. In topological
// order machine 0 reached the join waiting for machine 1's halo before the cut it sends, and
// machine 1 then waited for that join too: a round trip per exchange.
TEST(SplitPlan, HalosAreSentBeforeTheMachineWaitsForItsNeighbours) {
  Graph g = testing::tall_conv_chain();
  SplitResult r = testing::split(g, 2, SplitDim::kH);
  const Graph& pg = r.partitioned.graph;
  Machine machine = cpu_machine(2, 1);
  for (auto& row : machine.latency)
    for (double& seconds : row) seconds = seconds > 0 ? 100e-6 : 0;
  for (int samples : {1, 2}) {
    ModelPlan plan = split_plan(pg, r.partitioned, static_costs(pg), machine, samples);
    const TaskGraph& tasks = plan.tasks;
    validate_plan(plan.plan, tasks);
    std::vector<int> worker(tasks.tasks.size());
    for (const PlannedTask& t : plan.plan.tasks) worker[t.task] = t.worker;
    std::vector<std::vector<int>> inputs(tasks.tasks.size());
    std::vector<bool> sends(tasks.tasks.size()), receives(tasks.tasks.size());
    for (const auto& [from, to] : tasks.edges) {
      inputs[to].push_back(from);
      if (worker[from] != worker[to]) sends[from] = receives[to] = true;
    }
    int halos = 0;
    for (const std::vector<int>& order : plan.plan.order) {
      for (std::size_t k = 0; k < order.size(); ++k) {
        const int t = order[k];
        if (!sends[t] || receives[t]) continue;
        ++halos;
        // Right after its last input on this machine (or first of its sample's tasks when it
        // has none there), other cuts sent at once aside.
        std::size_t before = k;
        const auto cut = [&](int u) { return sends[u] && !receives[u]; };
        while (before > 0 && cut(order[before - 1]) &&
               tasks.tasks[order[before - 1]].batch_begin == tasks.tasks[t].batch_begin &&
               std::find(inputs[t].begin(), inputs[t].end(), order[before - 1]) == inputs[t].end())
          --before;
        const bool first =
            before == 0 ||
            tasks.tasks[order[before - 1]].batch_begin != tasks.tasks[t].batch_begin ||
            std::find(inputs[t].begin(), inputs[t].end(), order[before - 1]) != inputs[t].end();
        EXPECT_TRUE(first) << tasks.tasks[t].name << " waits behind "
                           << tasks.tasks[order[before - 1]].name;
      }
    }
    EXPECT_GE(halos, 2 * samples);
    // The same tasks in topological order, as before: the exchanges wait in turn.
    Plan topological = plan.plan;
    for (std::vector<int>& order : topological.order) std::sort(order.begin(), order.end());
    const double before = simulate(topological, tasks).makespan;
    EXPECT_LT(plan.plan.makespan, before - 100e-6) << samples << " sample(s)";
  }
  // Still the model's outputs.
  EXPECT_LT(testing::split_error(g, r), 1e-4);
}

}  // namespace
}  // namespace cleave
