// The optimizer's four cases, the naive all-gather against fetching missing rows, and fusion.
#include "spatial/optimizer.h"

#include <gtest/gtest.h>

#include "split_testing.h"

namespace cleave {
namespace {

std::string cases(const SplitStats& s) {
  return "same " + std::to_string(s.join_cases[0]) + ", crop " + std::to_string(s.join_cases[1]) +
         ", fetch " + std::to_string(s.join_cases[2]) + ", fetch+crop " +
         std::to_string(s.join_cases[3]);
}

TEST(Optimizer, ClassifiesTheFourCases) {
  const Box held{{3, 6}};
  EXPECT_EQ(classify_join(held, Box{{3, 6}}), JoinCase::kSame);
  EXPECT_EQ(classify_join(held, Box{{4, 6}}), JoinCase::kCrop);
  EXPECT_EQ(classify_join(held, Box{{2, 7}}), JoinCase::kFetch);
  EXPECT_EQ(classify_join(held, Box{{4, 7}}), JoinCase::kFetchCrop);
}

TEST(Optimizer, SameShapeChainsNeedNoTransfer) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,4]) {
  %a: f32[1,2,8,4] = Relu(%x)
  %b: f32[1,2,8,4] = Sigmoid(%a)
  %c: f32[1,2,8,4] = Add(%a, %b)
  return %c
})");
  SplitResult r = testing::split(g, 2, SplitDim::kH, false);
  EXPECT_EQ(cases(r.report.optimized), "same 6, crop 2, fetch 0, fetch+crop 0");
  EXPECT_EQ(r.report.optimized.sync_points, 0);
  EXPECT_EQ(r.report.optimized.transfers, 1);  // only the final gather on machine 0
  EXPECT_LT(testing::split_error(g, r), 1e-6);
}

TEST(Optimizer, StridedReadsCropFetchAndFetchWithCrop) {
  // Relu rows 0:3 | 3:6 | 6:9; the 1x1 stride-2 conv's rows 0:2 | 2:4 | 4:5 read 0:3 (same),
  // 4:7 (fetch row 6, crop row 3) and 8:9 (crop).
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,1,9,4]) {
  @w: f32[1,1,1,1]
  %r: f32[1,1,9,4] = Relu(%x)
  %y: f32[1,1,5,4] = Conv[kernel_shape=[1,1], strides=[2,1]](%r, @w)
  return %y
})");
  SplitResult r = testing::split(g, 3, SplitDim::kH, false);
  EXPECT_EQ(cases(r.report.optimized), "same 1, crop 4, fetch 0, fetch+crop 1");
  EXPECT_EQ(r.report.optimized.sync_points, 1);
  EXPECT_LT(testing::split_error(g, r), 1e-6);
}

TEST(Optimizer, HaloFetchMovesFewerBytesThanTheNaiveAllGather) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,4]) {
  @w: f32[2,2,3,3]
  %r: f32[1,2,8,4] = Relu(%x)
  %y: f32[1,2,8,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r, @w)
  return %y
})");
  SplitResult r = testing::split(g, 2, SplitDim::kH, false);
  // Naive: each machine receives the other's 4 rows of r (2x4x4 floats = 128 bytes each way)
  // plus the final gather of y (128 bytes); optimised: one halo row each way (32 bytes) + 128.
  EXPECT_EQ(r.report.naive.transfer_bytes, 128 * 2 + 128);
  EXPECT_EQ(r.report.optimized.transfer_bytes, 32 * 2 + 128);
  EXPECT_EQ(cases(r.report.optimized), "same 0, crop 2, fetch 2, fetch+crop 0");
}

TEST(Optimizer, CheapLayersAreFusedWhenTransfersCostMore) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,4]) {
  @w: f32[2,2,3,3]
  %r: f32[1,2,8,4] = Relu(%x)
  %y: f32[1,2,8,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r, @w)
  return %y
})");
  SplitResult fused = testing::split(g, 2, SplitDim::kH, true);
  EXPECT_EQ(fused.report.fused_tensors, 1);
  EXPECT_EQ(fused.report.optimized.transfer_bytes, 128);            // only the final gather
  EXPECT_EQ(fused.report.optimized.redundant_elements, 2 * 2 * 4);  // one halo row each
  EXPECT_LT(testing::split_error(g, fused), 1e-5);

  SplitModelOptions slow_compute;
  slow_compute.split.machines = 2;
  slow_compute.cost.flops_per_second = 1;  // recomputing anything costs more than sending it
  EXPECT_EQ(split_model(g, slow_compute).report.fused_tensors, 0);

  slow_compute.cost.fixed_fuse_depth = 1;  // DeepThings: fuse the first layer whatever it costs
  SplitResult fixed = split_model(g, slow_compute);
  EXPECT_EQ(fixed.report.fused_tensors, 1);
  EXPECT_LT(testing::split_error(g, fixed), 1e-5);
}

}  // namespace
}  // namespace cleave
