// FLOP and byte counts of single nodes from static shapes.
#include "analysis/flops.h"

#include <gtest/gtest.h>

#include "ir/text.h"

namespace cleave {
namespace {

TEST(Flops, ConvCountsMultiplyAddsAndBias) {
  Graph graph = parse_graph(R"(graph g (%x: f32[1,3,8,8]) {
  @w: f32[4,3,3,3]
  @b: f32[4]
  %y: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w, @b)
  return %y
})");
  // 4*8*8 = 256 outputs, each 3*3*3 = 27 multiply-adds, plus one bias add each.
  EXPECT_EQ(node_flops(graph, 0), 2 * 256 * 27 + 256);
  EXPECT_EQ(node_parameter_bytes(graph, 0), (108 + 4) * 4);
  EXPECT_EQ(node_output_bytes(graph, 0), 256 * 4);
}

TEST(Flops, GroupedConvUsesTheWeightsInputChannels) {
  Graph graph = parse_graph(R"(graph g (%x: f32[1,4,8,8]) {
  @w: f32[4,1,3,3]
  %y: f32[1,4,8,8] = Conv[group=4, kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})");
  EXPECT_EQ(node_flops(graph, 0), 2 * 256 * 9);
}

TEST(Flops, ConvTransposeCountsPerInputElement) {
  Graph graph = parse_graph(R"(graph g (%x: f32[1,2,4,4]) {
  @w: f32[2,3,2,2]
  %y: f32[1,3,8,8] = ConvTranspose[kernel_shape=[2,2], strides=[2,2]](%x, @w)
  return %y
})");
  EXPECT_EQ(node_flops(graph, 0), 2 * 32 * 12);
}

TEST(Flops, GemmAndMatMul) {
  Graph graph =
      parse_graph(R"(graph g (%a: f32[2,8], %b: f32[8,5], %c: f32[5], %m: f32[3,4], %n: f32[4,6]) {
  %y: f32[2,5] = Gemm(%a, %b, %c)
  %z: f32[3,6] = MatMul(%m, %n)
  return %y, %z
})");
  EXPECT_EQ(node_flops(graph, 0), 2 * 10 * 8 + 10);
  EXPECT_EQ(node_flops(graph, 1), 2 * 18 * 4);
}

TEST(Flops, PoolsAndElementwise) {
  Graph graph = parse_graph(R"(graph g (%x: f32[1,4,8,8]) {
  %p: f32[1,4,4,4] = MaxPool[kernel_shape=[2,2], strides=[2,2]](%x)
  %g: f32[1,4,1,1] = GlobalAveragePool(%p)
  %r: f32[1,4,1,1] = Relu(%g)
  %c: f32[1,8,1,1] = Concat[axis=1](%r, %g)
  return %c
})");
  EXPECT_EQ(node_flops(graph, 0), 64 * 4);
  EXPECT_EQ(node_flops(graph, 1), 64);
  EXPECT_EQ(node_flops(graph, 2), 4);
  EXPECT_EQ(node_flops(graph, 3), 0);
}

TEST(Flops, UnknownWithoutStaticShapes) {
  Graph graph = parse_graph(R"(graph g (%x: f32[N,3,8,8]) {
  @w: f32[4,3,3,3]
  %y = Conv[kernel_shape=[3,3]](%x, @w)
  %z = Relu(%y)
  return %z
})");
  EXPECT_EQ(node_flops(graph, 0), std::nullopt);
  EXPECT_EQ(node_flops(graph, 1), std::nullopt);
  EXPECT_EQ(node_output_bytes(graph, 1), std::nullopt);
}

TEST(Flops, UnknownForUnlistedOps) {
  Graph graph = parse_graph(R"(graph g (%x: f32[4]) {
  %y: f32[4] = com.example.Mystery(%x)
  return %y
})");
  EXPECT_EQ(node_flops(graph, 0), std::nullopt);
}

}  // namespace
}  // namespace cleave
