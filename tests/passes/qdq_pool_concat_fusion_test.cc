// QDQ fusion of MaxPool and Concat: DequantizeLinear → MaxPool/Concat → QuantizeLinear onto the
// 8-bit values (or com.microsoft QLinearConcat), and the near misses that must stay in float.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"
#include "passes/qdq_fusion.h"

namespace cleave {
namespace {

std::string fuse(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_qdq(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// A max pool in QDQ form whose output map is `y_scale` and `y_zero`.
std::string qdq_max_pool(const std::string& y_scale, const std::string& y_zero) {
  return R"(graph main [ai.onnx=13] (%x: u8[1,2,4,4]) {
  @xs: f32[] = [0.5]
  @xz: u8[] = [3]
  @ys: f32[] = )" +
         y_scale + R"(
  @yz: u8[] = )" +
         y_zero + R"(
  %xf = DequantizeLinear(%x, @xs, @xz)
  %p = "pool" MaxPool[kernel_shape=[2,2], strides=[2,2]](%xf)
  %y = QuantizeLinear(%p, @ys, @yz)
  return %y
}
)";
}

TEST(QdqPoolFusion, PoolsTheEightBitValuesUnderOneMap) {
  PassResult result;
  EXPECT_EQ(fuse(qdq_max_pool("[0.5]", "[3]"), &result),
            R"(graph main [ai.onnx=13] (%x: u8[1,2,4,4]) {
  %y = "pool" MaxPool[kernel_shape=[2,2], strides=[2,2]](%x)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "QDQ fusion: 1 MaxPool nodes moved onto 8-bit values");
}

TEST(QdqPoolFusion, KeepsAPoolWhoseOutputScaleDiffers) {
  PassResult result;
  fuse(qdq_max_pool("[0.25]", "[3]"), &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

TEST(QdqPoolFusion, KeepsAPoolWhoseOutputZeroPointDiffers) {
  PassResult result;
  fuse(qdq_max_pool("[0.5]", "[4]"), &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

TEST(QdqPoolFusion, KeepsAPoolUnderANegativeScale) {
  PassResult result;
  const std::string text = R"(graph main [ai.onnx=13] (%x: u8[1,1,2,2]) {
  @s: f32[] = [-0.5]
  %xf = DequantizeLinear(%x, @s)
  %p = MaxPool[kernel_shape=[2,2]](%xf)
  %y = QuantizeLinear(%p, @s)
  return %y
}
)";
  fuse(text, &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

// A channel concat of DequantizeLinear'd values of two maps, pooled, then quantized to a's map.
std::string qdq_concat_pool(const std::string& axis) {
  return R"(graph main [ai.onnx=13] (%a: u8[1,2,4,4], %b: u8[1,2,4,4]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @bs: f32[] = [0.25]
  %af = DequantizeLinear(%a, @s, @z)
  %bf = DequantizeLinear(%b, @bs, @z)
  %c = "cat" Concat[axis=)" +
         axis + R"(](%af, %bf)
  %p = "pool" MaxPool[kernel_shape=[2,2], strides=[2,2]](%c)
  %y = QuantizeLinear(%p, @s, @z)
  return %y
}
)";
}

TEST(QdqPoolFusion, RequantizesAPooledConcatToThePoolsMapFirst) {
  PassResult result;
  EXPECT_EQ(fuse(qdq_concat_pool("1"), &result),
            R"(graph main [ai.onnx=13, com.microsoft=1] (%a: u8[1,2,4,4], %b: u8[1,2,4,4]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @bs: f32[] = [0.25]
  %c_quantized: u8 = "cat" com.microsoft.QLinearConcat[axis=1](@s, @z, %a, @s, @z, %b, @bs, @z)
  %y = "pool" MaxPool[kernel_shape=[2,2], strides=[2,2]](%c_quantized)
  return %y
}
)");
  EXPECT_EQ(result.summary(),
            "QDQ fusion: 1 Concat nodes fused into com.microsoft.QLinearConcat, 1 MaxPool nodes "
            "moved onto 8-bit values");
}

TEST(QdqPoolFusion, KeepsAPooledConcatAlongASpatialAxis) {
  PassResult result;
  fuse(qdq_concat_pool("2"), &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

// A channel concat of two DequantizeLinear'd values in QDQ form; b's map is `b_scale`.
std::string qdq_concat(const std::string& b_scale) {
  return R"(graph main [ai.onnx=13] (%a: u8[1,2,2], %b: u8[1,3,2]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @bs: f32[] = )" +
         b_scale + R"(
  %af = DequantizeLinear(%a, @s, @z)
  %bf = DequantizeLinear(%b, @bs, @z)
  %c = "cat" Concat[axis=1](%af, %bf)
  %y = QuantizeLinear(%c, @s, @z)
  return %y
}
)";
}

TEST(QdqConcatFusion, ConcatenatesTheEightBitValuesUnderOneMap) {
  PassResult result;
  EXPECT_EQ(fuse(qdq_concat("[0.5]"), &result),
            R"(graph main [ai.onnx=13] (%a: u8[1,2,2], %b: u8[1,3,2]) {
  %y = "cat" Concat[axis=1](%a, %b)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "QDQ fusion: 1 Concat nodes moved onto 8-bit values");
}

TEST(QdqConcatFusion, RequantizesThroughQLinearConcatWhereMapsDiffer) {
  PassResult result;
  EXPECT_EQ(fuse(qdq_concat("[0.25]"), &result),
            R"(graph main [ai.onnx=13, com.microsoft=1] (%a: u8[1,2,2], %b: u8[1,3,2]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @bs: f32[] = [0.25]
  %y = "cat" com.microsoft.QLinearConcat[axis=1](@s, @z, %a, @s, @z, %b, @bs, @z)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "QDQ fusion: 1 Concat nodes fused into com.microsoft.QLinearConcat");
}

TEST(QdqConcatFusion, KeepsAConcatOfAFloatInput) {
  PassResult mixed;
  const std::string text = R"(graph main [ai.onnx=13] (%a: u8[1,2,2], %f: f32[1,3,2]) {
  @s: f32[] = [0.5]
  %af = DequantizeLinear(%a, @s)
  %c = Concat[axis=1](%af, %f)
  %y = QuantizeLinear(%c, @s)
  return %y
}
)";
  fuse(text, &mixed);
  EXPECT_EQ(mixed.summary(), "QDQ fusion: no change");
}

TEST(QdqConcatFusion, KeepsAConcatOfAnotherEightBitType) {
  PassResult result;
  const std::string text = R"(graph main [ai.onnx=13] (%a: u8[2], %b: i8[2]) {
  @s: f32[] = [0.5]
  @zi: i8[] = [0]
  %af = DequantizeLinear(%a, @s)
  %bf = DequantizeLinear(%b, @s, @zi)
  %c = Concat[axis=0](%af, %bf)
  %y = QuantizeLinear(%c, @s)
  return %y
}
)";
  fuse(text, &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

}  // namespace
}  // namespace cleave
