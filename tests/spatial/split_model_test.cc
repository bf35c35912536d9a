// The split recipe end to end: the manifest's sub-models recombine to the whole model's outputs.
#include "spatial/split_model.h"

#include <gtest/gtest.h>

#include "split_testing.h"

namespace cleave {
namespace {

using testing::graph_with_weights;
using testing::split;
using testing::split_error;

constexpr const char* kConvStack = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,12]) {
  @w1: f32[8,3,3,3]
  @b1: f32[8]
  @w2: f32[8,8,3,3]
  @w3: f32[4,8,1,1]
  %c1: f32[1,8,16,12] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %r1: f32[1,8,16,12] = Relu(%c1)
  %c2: f32[1,8,8,6] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%r1, @w2)
  %p: f32[1,8,4,3] = MaxPool[kernel_shape=[2,2], strides=[2,2]](%c2)
  %c3: f32[1,4,4,3] = Conv[kernel_shape=[1,1]](%p, @w3)
  return %c3
})";

TEST(SplitModel, ConvStackRecombinesForEveryDirection) {
  Graph g = graph_with_weights(kConvStack);
  for (int machines : {2, 3, 4}) {
    for (SplitDim dim : {SplitDim::kH, SplitDim::kW, SplitDim::kC, SplitDim::kHW}) {
      for (bool fuse : {false, true}) {
        SplitResult r = split(g, machines, dim, fuse);
        EXPECT_LT(split_error(g, r), 1e-4)
            << machines << " machines, dim " << split_dim_name(dim) << " fuse " << fuse;
      }
    }
  }
}

TEST(SplitModel, OptimizedMovesFewerBytesThanNaive) {
  Graph g = graph_with_weights(kConvStack);
  SplitResult r = split(g, 2, SplitDim::kH, false);
  EXPECT_GT(r.report.naive.transfer_bytes, 0);
  EXPECT_LT(r.report.optimized.transfer_bytes, r.report.naive.transfer_bytes);
}

}  // namespace
}  // namespace cleave

namespace cleave {
namespace {

// A small classifier with every splittable family: BN, depthwise, concat of branches, pooling,
// global pooling, flatten, Gemm, softmax, broadcasting add, pad.
constexpr const char* kClassifier = R"(graph main [ai.onnx=17] (%x: f32[1,3,20,18]) {
  @w1: f32[8,3,3,3]
  @s: f32[8]
  @b: f32[8]
  @m: f32[8]
  @v: f32[8] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  @dw: f32[8,1,3,3]
  @wa: f32[4,8,1,1]
  @wb: f32[4,8,3,3]
  @bias: f32[1,8,1,1]
  @pads: i64[8] = [0, 0, 1, 0, 0, 0, 0, 1]
  @fc: f32[10,8]
  @fcb: f32[10]
  %c1: f32[1,8,10,9] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%x, @w1)
  %n1: f32[1,8,10,9] = BatchNormalization(%c1, @s, @b, @m, @v)
  %r1: f32[1,8,10,9] = Relu(%n1)
  %d1: f32[1,8,10,9] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], group=8, dilations=[1,1]](%r1, @dw)
  %ba: f32[1,4,10,9] = Conv[kernel_shape=[1,1]](%d1, @wa)
  %bb: f32[1,4,10,9] = Conv[kernel_shape=[3,3], pads=[2,2,2,2], dilations=[2,2]](%d1, @wb)
  %cat: f32[1,8,10,9] = Concat[axis=1](%ba, %bb)
  %add: f32[1,8,10,9] = Add(%cat, @bias)
  %p: f32[1,8,11,10] = Pad(%add, @pads)
  %mp: f32[1,8,5,4] = MaxPool[kernel_shape=[3,3], strides=[2,2]](%p)
  %ap: f32[1,8,5,4] = AveragePool[kernel_shape=[3,3], pads=[1,1,1,1], count_include_pad=0](%mp)
  %g: f32[1,8,1,1] = GlobalAveragePool(%ap)
  %f: f32[1,8] = Flatten(%g)
  %fc1: f32[1,10] = Gemm[transB=1](%f, @fc, @fcb)
  %y: f32[1,10] = Softmax[axis=1](%fc1)
  return %y
})";

// GoogLeNet's pools: ceil_mode with stride 2 (a last window past the input) and stride 1.
TEST(SplitModel, CeilModePoolsRecombineWithoutGathering) {
  Graph g = graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,3,15,13]) {
  @w: f32[4,3,3,3]
  %c: f32[1,4,15,13] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %p: f32[1,4,7,6] = MaxPool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1](%c)
  %q: f32[1,4,7,6] = MaxPool[kernel_shape=[3,3], strides=[1,1], pads=[1,1,1,1], ceil_mode=1](%p)
  %a: f32[1,4,4,3] = AveragePool[kernel_shape=[2,2], strides=[2,2], ceil_mode=1](%q)
  return %a
})");
  for (int machines : {2, 3}) {
    for (SplitDim dim : {SplitDim::kH, SplitDim::kW, SplitDim::kHW}) {
      SplitResult r = split(g, machines, dim);
      EXPECT_TRUE(r.report.gathers.empty()) << r.report.gathers.front().reason;
      EXPECT_LT(split_error(g, r), 1e-5) << machines << " machines, dim " << split_dim_name(dim);
    }
  }
}

// A token MLP as swin_t's after the epilogue fusion: MatMuls with their bias as a third input.
TEST(SplitModel, MatMulsWithFusedBiasesRecombine) {
  Graph g = graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,8,6,8]) {
  @w1: f32[8,16]
  @b1: f32[16]
  @w2: f32[16,8]
  @b2: f32[8]
  %h: f32[1,8,6,16] = MatMul(%x, @w1, @b1)
  %r: f32[1,8,6,16] = Relu(%h)
  %y: f32[1,8,6,8] = MatMul(%r, @w2, @b2)
  return %y
})");
  for (int machines : {2, 3}) {
    for (SplitDim dim : {SplitDim::kC, SplitDim::kH}) {
      SplitResult r = split(g, machines, dim);
      EXPECT_LT(split_error(g, r), 1e-4) << machines << " machines, dim " << split_dim_name(dim);
    }
  }
}

TEST(SplitModel, ClassifierRecombinesOnTwoThreeAndFourMachines) {
  Graph g = testing::graph_with_weights(kClassifier);
  for (int machines : {2, 3, 4}) {
    for (SplitDim dim : {SplitDim::kH, SplitDim::kW, SplitDim::kC, SplitDim::kHW}) {
      SplitResult r = testing::split(g, machines, dim);
      EXPECT_LT(testing::split_error(g, r), 1e-4)
          << machines << " machines, dim " << split_dim_name(dim);
    }
  }
}

TEST(SplitModel, ReportsWhereAndWhyItGathers) {
  Graph g = testing::graph_with_weights(kClassifier);
  SplitResult r = testing::split(g, 2, SplitDim::kH);
  std::string gathers;
  for (const GatherNote& n : r.report.gathers) gathers += n.op + ": " + n.reason + "\n";
  EXPECT_EQ(gathers,
            "GlobalAveragePool: global pooling along H/W: each machine pools the part of the "
            "input it owns and machine 0 joins the partials (the input is gathered only where "
            "it is not split)\n"
            "Softmax: Softmax is never split along its own axis 1\n");
}

// A node whose output shape is not known (as after a Resize to computed sizes) is gathered
// with that reason, and the split layer before it is read whole, not refused.
TEST(SplitModel, NodeOfUnknownShapeIsGatheredAfterASplitLayer) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,2,12,8]) {
  @w: f32[4,2,3,3]
  %c: f32[1,4,12,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %r: f32[1,4,H,W] = "relu" Relu(%c)
  return %r
})");
  SplitResult r = testing::split(g, 3, SplitDim::kH);
  ASSERT_EQ(r.report.gathers.size(), 1u);
  EXPECT_EQ(r.report.gathers[0].reason, "output shape not known");
  EXPECT_LT(testing::split_error(g, r), 1e-5);
}

TEST(SplitModel, UnequalSpeedsGiveTheFastMachineMoreRows) {
  Graph g = testing::graph_with_weights(kConvStack);
  SplitResult r = testing::split(g, 2, SplitDim::kH, true, {1, 3});
  EXPECT_EQ(print_box(r.partition.layers[g.topological_order().front()]->owned[1]),
            "[0:1, 0:8, 4:16, 0:12]");
  EXPECT_LT(testing::split_error(g, r), 1e-4);
}

}  // namespace
}  // namespace cleave
