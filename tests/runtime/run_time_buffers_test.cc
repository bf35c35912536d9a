// Buffers of values shaped at run time: size classes kept across runs, never in the static plan,
// and never a byte of an earlier run's data in a later run's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/run_time_shapes.h"

namespace cleave {
namespace {

TEST(RunTimeBuffers, SizeClassesFitAndWasteUnderAQuarter) {
  for (std::size_t bytes : {1ul, 64ul, 65ul, 1000ul, 4096ul, 4097ul, 24000ul, 1ul << 20,
                            (1ul << 20) + 1, 123456789ul}) {
    const std::size_t size = BufferPool::size_class(bytes);
    EXPECT_GE(size, bytes);
    if (bytes > 64) {
      EXPECT_LT(size - bytes, bytes / 4 + 1) << bytes << " -> " << size;
    }
    EXPECT_EQ(BufferPool::size_class(size), size) << "a class is its own class";
  }
}

TEST(RunTimeBuffers, AValueOfAnotherSizeTakesItsSlotInThePlan) {
  BufferPool pool;
  for (std::size_t bytes : {1000, 900, 1024}) {  // One class.
    pool.begin_run();
    pool.acquire_run_time(bytes);
    pool.end_run();
  }
  EXPECT_TRUE(pool.last_run_planned());
  EXPECT_EQ(pool.run_time_stats().made, 1);
  EXPECT_EQ(pool.run_time_stats().reused, 2);
  EXPECT_EQ(pool.run_time_stats().held_bytes, 0u) << "the arena serves it from run 2 on";
  EXPECT_EQ(pool.reserved_bytes(), 1024u);
}

TEST(RunTimeBuffers, AValueLargerThanItsSlotTakesAKeptBufferAndThePlanHolds) {
  BufferPool pool;
  for (std::size_t bytes : {1000, 5000, 4000}) {
    pool.begin_run();
    EXPECT_GE(pool.acquire_run_time(bytes)->size(), bytes);  // Back within the run.
    pool.end_run();
  }
  EXPECT_TRUE(pool.last_run_planned());
  EXPECT_EQ(pool.run_time_stats().made, 2) << "run 1's, then one for 5000 bytes";
  EXPECT_EQ(pool.run_time_stats().reused, 1) << "4000 bytes: the buffer made for 5000";
  EXPECT_EQ(pool.run_time_stats().held_bytes, 5120u);
}

TEST(RunTimeBuffers, AFreeBufferOfTwiceTheClassOrMoreIsLeftForLargerValues) {
  BufferPool pool;
  pool.begin_run();
  const Buffer* large = pool.acquire_run_time(1 << 20).get();
  EXPECT_NE(pool.acquire_run_time(1000).get(), large);
  pool.end_run();
}

// Values still held when their run ends (outputs) have no slot in a plan: kept buffers serve.
TEST(RunTimeBuffers, ARunFreesTheKeptBuffersItDidNotTake) {
  BufferPool pool;
  pool.begin_run();
  std::shared_ptr<Buffer> large = pool.acquire_run_time(1 << 20);
  std::shared_ptr<Buffer> small = pool.acquire_run_time(1000);
  pool.end_run();
  large.reset();
  small.reset();
  EXPECT_EQ(pool.run_time_stats().held_bytes, (1u << 20) + 1024u);
  pool.begin_run();
  small = pool.acquire_run_time(1000);
  pool.end_run();
  small.reset();
  EXPECT_EQ(pool.run_time_stats().held_bytes, 1024u);
  EXPECT_EQ(pool.reserved_bytes(), 1024u);
}

TEST(RunTimeBuffers, ABufferInUseIsNeverHandedOutAgain) {
  BufferPool pool;
  pool.begin_run();
  auto held = pool.acquire_run_time(1000);
  pool.end_run();
  pool.begin_run();
  EXPECT_NE(pool.acquire_run_time(1000).get(), held.get());
  pool.end_run();
  EXPECT_EQ(pool.run_time_stats().held_bytes, 2048u) << "the held one is kept";
}

TEST(RunTimeBuffers, RunTimeBuffersLeaveTheStaticPlanAlone) {
  BufferPool pool;
  for (std::size_t run = 0; run < 4; ++run) {
    pool.begin_run();
    auto a = pool.acquire(4096);
    auto shaped = pool.acquire_run_time(1000 * (run + 1));  // Another size each run.
    a.reset();
    auto b = pool.acquire(4096);
    pool.end_run();
    if (run > 0) {
      EXPECT_TRUE(pool.last_run_planned()) << "run " << run;
    }
  }
}

TEST(RunTimeBuffers, OutsideARunTheFreeListServesThemRoundedToTheirClass) {
  BufferPool pool(/*plan_runs=*/false);
  const Buffer* first = pool.acquire_run_time(1000).get();
  EXPECT_EQ(pool.acquire(1024).get(), first);
  EXPECT_EQ(pool.reserved_bytes(), 1024u);
  EXPECT_EQ(pool.run_time_stats().made, 0);
}

// A score filter as detectors have it: the positions of the non-zero scores, and the scores
// gathered at them; beside it a static branch of two nodes (a value the static plan places).
constexpr const char* kFilter = R"(graph g [ai.onnx=13] (%x: f32[4096]) {
  %i = NonZero(%x)
  %t = Transpose[perm=[1,0]](%i)
  %g = GatherND(%x, %t)
  %v = Neg(%g)
  %a = Relu(%x)
  %s = Neg(%a)
  return %i, %v, %s
})";

// `count` non-zero scores at every third position from `first`, the rest zero.
Tensor scores(int64_t count, int64_t first) {
  Tensor x = Tensor::allocate(DataType::kFloat, {4096});
  for (int64_t k = 0; k < count; ++k) x.data<float>()[(first + 3 * k) % 4096] = 1.0f + k;
  return x;
}

// Every element of the filter's outputs against the input they came from.
void expect_filtered(const std::vector<Tensor>& outputs, const Tensor& x) {
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < 4096; ++p)
    if (x.data<float>()[p] != 0) positions.push_back(p);
  const auto count = static_cast<int64_t>(positions.size());
  ASSERT_EQ(outputs.size(), 3u);
  ASSERT_EQ(outputs[0].shape(), (std::vector<int64_t>{1, count}));
  ASSERT_EQ(outputs[1].shape(), (std::vector<int64_t>{count}));
  for (int64_t k = 0; k < count; ++k) {
    ASSERT_EQ(outputs[0].data<int64_t>()[k], positions[k]) << "index " << k;
    ASSERT_EQ(outputs[1].data<float>()[k], -x.data<float>()[positions[k]]) << "value " << k;
  }
  for (int64_t p = 0; p < 4096; ++p)
    ASSERT_EQ(outputs[2].data<float>()[p], -std::max(0.0f, x.data<float>()[p])) << p;
}

TEST(RunTimeBuffers, TheRunTimeRegionIsWhatFollowsNonZero) {
  const Graph graph = parse_graph(kFilter);
  const std::vector<bool> run_time = run_time_nodes(graph);
  for (NodeId id : graph.topological_order()) {
    const std::string& made = graph.value(graph.node(id).outputs.at(0)).name;
    EXPECT_EQ(run_time[id], made != "a" && made != "s") << graph.describe(id);
  }
}

TEST(RunTimeBuffers, ASecondRunOfOtherDataReusesTheFirstRunsBuffers) {
  Executor executor(parse_graph(kFilter));
  executor.run({{"x", scores(3000, 0)}});
  const RunStats first = executor.stats();
  EXPECT_GT(first.run_time_buffers_made, 0);
  executor.run({{"x", scores(2900, 1)}});
  EXPECT_EQ(executor.stats().run_time_buffers_made, first.run_time_buffers_made);
  EXPECT_GT(executor.stats().run_time_buffers_reused, first.run_time_buffers_reused);
}

TEST(RunTimeBuffers, ShorterThenLongerOutputsHoldOnlyTheirOwnRunsData) {
  Executor executor(parse_graph(kFilter));
  for (const auto& [count, first] : std::vector<std::pair<int64_t, int64_t>>{
           {3000, 0}, {1000, 2}, {1365, 1}, {20, 5}, {1365, 0}}) {
    const Tensor x = scores(count, first);
    const std::vector<Tensor> outputs = executor.run({{"x", x}});
    expect_filtered(outputs, x);
    EXPECT_TRUE(bitwise_equal(outputs, Executor(parse_graph(kFilter)).run({{"x", x}})));
  }
  EXPECT_GT(executor.stats().run_time_buffers_reused, 0);
}

TEST(RunTimeBuffers, TheStaticPlanHoldsWhileRunTimeShapesChange) {
  Executor executor(parse_graph(kFilter));
  for (int64_t run = 0; run < 4; ++run) {
    executor.run({{"x", scores(500 * (run + 1), run)}});
    if (run > 0) {
      EXPECT_TRUE(executor.last_run_planned()) << "run " << run;
    }
  }
}

TEST(RunTimeBuffers, OutputsTheCallerHoldsStayIntact) {
  Executor executor(parse_graph(kFilter));
  const Tensor x = scores(1000, 0);
  const std::vector<Tensor> held = executor.run({{"x", x}});
  for (int64_t run = 1; run < 4; ++run) executor.run({{"x", scores(900 + run, run)}});
  expect_filtered(held, x);
}

}  // namespace
}  // namespace cleave
