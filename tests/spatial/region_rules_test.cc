// Halo arithmetic (Eqs. 3.2-3.6) against hand-computed bounds: stride, dilation, asymmetric pads.
#include "spatial/region_rules.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "spatial/naive_partition.h"

namespace cleave {
namespace {

// "in=[...] pads=[...]" for the slice of the node's output rows `rows` (whole other dims).
std::string input_rows(const char* text, Interval rows, int axis = 2) {
  Graph g = parse_graph(text);
  NodeId id = g.topological_order().back();
  Box out = full_box(*static_sizes(g, g.node(id).outputs[0]));
  out[axis] = rows;
  RegionMap r = map_region(g, id, out);
  if (!r.ok) return "refused: " + r.reason;
  std::string s = "in=" + print_box(*r.inputs[0]);
  for (const auto& [key, value] : r.attributes) {
    if (key != "pads") continue;
    s += " pads=[";
    for (std::size_t k = 0; k < value.ints.size(); ++k)
      s += (k ? "," : "") + std::to_string(value.ints[k]);
    s += "]";
  }
  return s;
}

constexpr const char* kDilatedStrided = R"(graph main [ai.onnx=17] (%x: f32[1,2,16,12]) {
  @w: f32[4,2,3,3]
  %y: f32[1,4,7,6] = Conv[kernel_shape=[3,3], dilations=[2,1], strides=[2,2], pads=[1,1,1,1]](%x, @w)
  return %y
})";

TEST(RegionRules, DilatedStridedConvFirstSliceKeepsTheTopPad) {
  // true kernel (3-1)*2+1 = 5; rows 0..3: from 0*2-1 = -1 to 3*2-1+5 = 10.
  EXPECT_EQ(input_rows(kDilatedStrided, {0, 4}), "in=[0:1, 0:2, 0:10, 0:12] pads=[1,1,0,0]");
}

TEST(RegionRules, DilatedStridedConvLastSliceEndsAtTheInput) {
  // rows 4..6: from 4*2-1 = 7 to 6*2-1+5 = 16 = H, so no bottom pad is left (nor a right
  // one: the last column window, 5*2-1+3 = 12, ends at W).
  EXPECT_EQ(input_rows(kDilatedStrided, {4, 7}), "in=[0:1, 0:2, 7:16, 0:12] pads=[0,1,0,0]");
}

constexpr const char* kBottomPadded = R"(graph main [ai.onnx=17] (%x: f32[1,1,8,5]) {
  @w: f32[1,1,3,1]
  %y: f32[1,1,8,5] = Conv[kernel_shape=[3,1], pads=[0,0,2,0]](%x, @w)
  return %y
})";

TEST(RegionRules, AsymmetricPadsGoOnlyToTheSliceAtThatBorder) {
  EXPECT_EQ(input_rows(kBottomPadded, {0, 3}), "in=[0:1, 0:1, 0:5, 0:5] pads=[0,0,0,0]");
  EXPECT_EQ(input_rows(kBottomPadded, {3, 6}), "in=[0:1, 0:1, 3:8, 0:5] pads=[0,0,0,0]");
  EXPECT_EQ(input_rows(kBottomPadded, {6, 8}), "in=[0:1, 0:1, 6:8, 0:5] pads=[0,0,2,0]");
}

TEST(RegionRules, MaxPoolColumnsWithStride) {
  EXPECT_EQ(input_rows(R"(graph main [ai.onnx=17] (%x: f32[1,1,5,9]) {
  %y: f32[1,1,2,4] = MaxPool[kernel_shape=[3,3], strides=[2,2]](%x)
  return %y
})",
                       {2, 4}, 3),
            "in=[0:1, 0:1, 0:5, 4:9] pads=[0,0,0,0]");
}

// ceil_mode: 3 output rows of 6 input rows (k=3, s=2) reach row 7, past the input; the last
// slice pads the difference, so its windows are the whole op's.
constexpr const char* kCeilModePool = R"(graph main [ai.onnx=17] (%x: f32[1,1,6,4]) {
  %y: f32[1,1,3,2] = MaxPool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1](%x)
  return %y
})";

TEST(RegionRules, CeilModeMaxPoolLastSlicePadsPastTheInput) {
  EXPECT_EQ(input_rows(kCeilModePool, {0, 2}), "in=[0:1, 0:1, 0:5, 0:4] pads=[0,0,0,1]");
  EXPECT_EQ(input_rows(kCeilModePool, {2, 3}), "in=[0:1, 0:1, 4:6, 0:4] pads=[0,0,1,1]");
}

TEST(RegionRules, CeilModeAveragePoolCountingPadsIsNotSplit) {
  EXPECT_EQ(input_rows(R"(graph main [ai.onnx=17] (%x: f32[1,1,6,4]) {
  %y: f32[1,1,3,2] = AveragePool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1, count_include_pad=1](%x)
  return %y
})",
                       {2, 3}),
            "refused: ceil_mode average pooling that counts pads is not split along H or W");
}

TEST(RegionRules, SoftmaxIsNeverSplitAlongItsAxis) {
  EXPECT_EQ(input_rows(R"(graph main [ai.onnx=17] (%x: f32[1,10]) {
  %y: f32[1,10] = Softmax[axis=1](%x)
  return %y
})",
                       {0, 5}, 1),
            "refused: Softmax is never split along its own axis 1");
}

TEST(RegionRules, GroupedConvChannelsKeepWholeGroups) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,8,4,4]) {
  @w: f32[8,2,3,3]
  %y: f32[1,8,4,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], group=4](%x, @w)
  return %y
})");
  NodeId id = g.topological_order().back();
  EXPECT_EQ(split_granularity(g, id, 1), 2);
  RegionMap r = map_region(g, id, Box{{0, 1}, {2, 6}, {0, 4}, {0, 4}});
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(print_box(*r.inputs[0]), "[0:1, 2:6, 0:4, 0:4]");
  EXPECT_EQ(print_box(*r.inputs[1]), "[2:6, 0:2, 0:3, 0:3]");
  EXPECT_FALSE(map_region(g, id, Box{{0, 1}, {1, 5}, {0, 4}, {0, 4}}).ok);
}

// The epilogue fusion gives a MatMul its bias as a third input (swin_t's MLPs): a slice of the
// output's columns reads the same columns of it.
TEST(RegionRules, MatMulWithAFusedBiasSlicesTheBiasWithTheColumns) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,6,4]) {
  @w: f32[4,8]
  @b: f32[8]
  %y: f32[1,6,8] = MatMul(%x, @w, @b)
  return %y
})");
  NodeId id = g.topological_order().back();
  RegionMap r = map_region(g, id, Box{{0, 1}, {2, 5}, {3, 8}});
  ASSERT_TRUE(r.ok) << r.reason;
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(print_box(*r.inputs[0]), "[0:1, 2:5, 0:4]");
  EXPECT_EQ(print_box(*r.inputs[1]), "[0:4, 3:8]");
  EXPECT_EQ(print_box(*r.inputs[2]), "[3:8]");
}

TEST(RegionRules, MatMulBiasOfAnotherShapeIsNotSplit) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,6,4]) {
  @w: f32[4,8]
  @b: f32[6,8]
  %y: f32[1,6,8] = MatMul(%x, @w, @b)
  return %y
})");
  RegionMap r = map_region(g, g.topological_order().back(), Box{{0, 1}, {0, 6}, {0, 4}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "a MatMul bias that is not one value per output column");
}

TEST(NaivePartition, RemainderGoesRoundRobinAndSharesFollowSpeeds) {
  auto print = [](const std::vector<Interval>& parts) {
    std::string s;
    for (const Interval& i : parts)
      s += std::to_string(i.begin) + ":" + std::to_string(i.end) + " ";
    return s;
  };
  EXPECT_EQ(print(split_extent(8, {1, 1, 1})), "0:3 3:6 6:8 ");  // the thesis's 3, 3, 2
  EXPECT_EQ(print(split_extent(10, {1, 3, 1})), "0:2 2:8 8:10 ");
  EXPECT_EQ(print(split_extent(8, {1, 1}, 3)), "0:6 6:8 ");
}

}  // namespace
}  // namespace cleave
