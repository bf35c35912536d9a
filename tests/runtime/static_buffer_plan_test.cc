// The sequential executor on a static buffer plan: once runs repeat, the pool's arena serves
// them, and the outputs stay those of a run on the free list, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "bitwise_equal.h"
#include "modelgen/inception.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

Graph small_inception() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 32;
  options.height = 16;
  options.width = 16;
  return generate_inception(options);
}

TEST(StaticBufferPlan, RepeatedRunsFollowThePlanAndKeepTheirOutputs) {
  const Graph graph = small_inception();
  Executor executor(graph);
  std::vector<std::vector<Tensor>> outputs;
  for (int run = 0; run < 4; ++run) outputs.push_back(executor.run(random_inputs(graph, 1)));
  // The first run logs; the second places Concat inputs in place, so it differs; the third
  // repeats the second and follows its plan, as does the fourth.
  EXPECT_TRUE(executor.last_run_planned());
  const std::vector<Tensor> fresh = Executor(graph).run(random_inputs(graph, 1));
  for (const std::vector<Tensor>& run : outputs) EXPECT_TRUE(bitwise_equal(run, fresh));
}

TEST(StaticBufferPlan, OtherValuesOfTheSameShapesStayOnThePlan) {
  const Graph graph = small_inception();
  Executor executor(graph);
  for (int run = 0; run < 3; ++run) executor.run(random_inputs(graph, 1));
  const std::vector<Tensor> planned = executor.run(random_inputs(graph, 2));
  EXPECT_TRUE(executor.last_run_planned());
  EXPECT_TRUE(bitwise_equal(planned, Executor(graph).run(random_inputs(graph, 2))));
}

TEST(StaticBufferPlan, OutputsOfAnEarlierRunAreNotOverwritten) {
  const Graph graph = small_inception();
  Executor executor(graph);
  const std::vector<Tensor> first = executor.run(random_inputs(graph, 1));
  std::vector<std::vector<std::byte>> copies;
  for (const Tensor& tensor : first) {
    const auto* bytes = static_cast<const std::byte*>(tensor.raw());
    copies.emplace_back(bytes, bytes + tensor.byte_size());
  }
  for (int run = 0; run < 4; ++run) executor.run(random_inputs(graph, 3 + run));
  ASSERT_TRUE(executor.last_run_planned());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(std::memcmp(first[i].raw(), copies[i].data(), copies[i].size()), 0);
  }
}

}  // namespace
}  // namespace cleave
