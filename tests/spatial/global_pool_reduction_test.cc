// Global pooling split along H/W: per-machine partials joined on machine 0, not a gather.
#include <gtest/gtest.h>

#include "split_testing.h"

namespace cleave {
namespace {

std::string pooled(const std::string& pool) {
  return R"(graph main [ai.onnx=17] (%x: f32[1,3,12,10]) {
  @w: f32[4,3,3,3]
  %a: f32[1,4,12,10] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %y: f32[1,4,1,1] = "pool" )" +
         pool + R"((%a)
  return %y
})";
}

int64_t bytes_moved(const SplitResult& r) {
  int64_t bytes = 0;
  for (const SplitTransfer& t : r.partitioned.transfers) bytes += t.bytes;
  return bytes;
}

TEST(GlobalPoolReduction, AverageAlongHSendsOnePartialPerMachine) {
  Graph g = testing::graph_with_weights(pooled("GlobalAveragePool"));
  SplitResult r = testing::split(g, 3, SplitDim::kH);
  EXPECT_LT(testing::split_error(g, r), 1e-5);
  EXPECT_EQ(bytes_moved(r), 2 * 4 * 4);  // machines 1 and 2 send 4 channels of f32 each
}

TEST(GlobalPoolReduction, MaxOverAGridSendsOnePartialPerMachine) {
  Graph g = testing::graph_with_weights(pooled("GlobalMaxPool"));
  SplitResult r = testing::split(g, 4, SplitDim::kHW);
  EXPECT_LT(testing::split_error(g, r), 1e-5);
  EXPECT_EQ(bytes_moved(r), 3 * 4 * 4);
}

TEST(GlobalPoolReduction, UnequalSharesWeighTheAverage) {
  Graph g = testing::graph_with_weights(pooled("GlobalAveragePool"));
  SplitResult r = testing::split(g, 2, SplitDim::kW, true, {1, 4});
  EXPECT_LT(testing::split_error(g, r), 1e-5);
  EXPECT_EQ(bytes_moved(r), 4 * 4);
}

}  // namespace
}  // namespace cleave
