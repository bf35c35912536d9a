// The split's Plan runs on the thread executor (one worker per machine) with the model's outputs.
#include "spatial/split_plan.h"

#include <gtest/gtest.h>

#include "cost/cost_table.h"
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

}  // namespace
}  // namespace cleave
