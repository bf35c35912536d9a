// The sequential executor on a static buffer plan: once runs repeat, the pool's arena serves
// them, and the outputs stay those of a run on the free list, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
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

// Executors that run one after another on one thread (a spatial split's sub-models on a rank)
// can share one pool: their activations then take the memory of one run, not of each.
TEST(SharedPool, ExecutorsSharingAPoolNeedTheMemoryOfOneRunNotOfEach) {
  const Graph graph = small_inception();
  const auto inputs = random_inputs(graph, 1);
  ExecutorOptions own_options;
  Executor own_a(graph, own_options), own_b(graph, own_options);
  ExecutorOptions shared_options;
  shared_options.pool = BufferPool(/*plan_runs=*/false);
  Executor shared_a(graph, shared_options), shared_b(graph, shared_options);
  for (int run = 0; run < 3; ++run) {
    const std::vector<Tensor> expected = own_a.run(inputs);
    EXPECT_TRUE(bitwise_equal(own_b.run(inputs), expected));
    EXPECT_TRUE(bitwise_equal(shared_a.run(inputs), expected));
    EXPECT_TRUE(bitwise_equal(shared_b.run(inputs), expected));
  }
  EXPECT_FALSE(shared_a.last_run_planned()) << "a shared pool makes no static plan";
  const std::size_t own = own_a.stats().peak_activation_bytes + own_b.stats().peak_activation_bytes;
  const std::size_t shared = shared_options.pool->reserved_bytes();
  EXPECT_LT(shared, own * 3 / 4) << "shared " << shared << " bytes, own pools " << own;
}

// The layout choice's two executors (blocked and another family) run in turn on one thread: on
// a SharedArena their static plans hold the larger arena, not both, and compute as they would
// on arenas of their own; one that let go of its arena (release_activation_memory) takes it
// again at its next run.
TEST(SharedArena, ExecutorsRunInTurnHoldOneArenaAndComputeAsAlone) {
  const Graph graph = small_inception();
  const auto inputs = random_inputs(graph, 1);
  ExecutorOptions blocked_options, other_options;
  other_options.convolution_family = ConvolutionFamily::kChannelsLast;
  const std::vector<Tensor> blocked_alone = Executor(graph, blocked_options).run(inputs);
  const std::vector<Tensor> other_alone = Executor(graph, other_options).run(inputs);
  auto shared = std::make_shared<SharedArena>();
  blocked_options.shared_arena = shared;
  other_options.shared_arena = shared;
  Executor blocked(graph, blocked_options), other(graph, other_options);
  for (int run = 0; run < 4; ++run) {
    EXPECT_TRUE(bitwise_equal(blocked.run(inputs), blocked_alone)) << "run " << run;
    EXPECT_TRUE(bitwise_equal(other.run(inputs), other_alone)) << "run " << run;
  }
  ASSERT_TRUE(blocked.last_run_planned());
  ASSERT_TRUE(other.last_run_planned());
  const std::size_t blocked_bytes = blocked.stats().peak_activation_bytes;
  const std::size_t other_bytes = other.stats().peak_activation_bytes;
  // Their activation bytes also count the buffers no plan holds (the graph outputs).
  EXPECT_GT(shared->bytes(), 0u);
  EXPECT_LE(shared->bytes(), std::max(blocked_bytes, other_bytes));
  EXPECT_LT(shared->bytes(), blocked_bytes + other_bytes);
  blocked.release_activation_memory();
  other.release_activation_memory();
  EXPECT_EQ(shared->bytes(), 0u) << "neither holds activation memory between runs";
  EXPECT_TRUE(bitwise_equal(other.run(inputs), other_alone));
  EXPECT_TRUE(other.last_run_planned());
  EXPECT_GT(shared->bytes(), 0u);
  EXPECT_LE(shared->bytes(), other_bytes);
  EXPECT_TRUE(bitwise_equal(blocked.run(inputs), blocked_alone));
  EXPECT_TRUE(blocked.last_run_planned());
}

// Outputs are the shared pool's buffers: one the caller holds is never handed to a later run
// (of this executor or another on the pool), and outputs the caller drops come back, so
// repeated runs stop taking memory (run-split relies on both).
TEST(SharedPool, HeldOutputsStayIntactAndDroppedOnesAreReused) {
  const Graph graph = small_inception();
  ExecutorOptions options;
  options.pool = BufferPool(/*plan_runs=*/false);
  Executor executor(graph, options), other(graph, options);
  const std::vector<Tensor> held = executor.run(random_inputs(graph, 1));
  std::vector<std::vector<std::byte>> copies;
  for (const Tensor& tensor : held) {
    const auto* bytes = static_cast<const std::byte*>(tensor.raw());
    copies.emplace_back(bytes, bytes + tensor.byte_size());
  }
  std::size_t reserved = 0;
  for (int run = 0; run < 4; ++run) {
    executor.run(random_inputs(graph, 2 + run));
    other.run(random_inputs(graph, 7 + run));
    if (run == 1) reserved = options.pool->reserved_bytes();
  }
  EXPECT_EQ(options.pool->reserved_bytes(), reserved);
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(std::memcmp(held[i].raw(), copies[i].data(), copies[i].size()), 0) << i;
  }
}

}  // namespace
}  // namespace cleave
