// QDQ fusion of Add: DequantizeLinear, DequantizeLinear → Add [→ Relu] → QuantizeLinear onto
// com.microsoft QLinearAdd, and the near misses that must stay in float.
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

// A residual Add in QDQ form; `b_dequantize`, `tail` and the output zero point vary.
std::string qdq_add(const std::string& b_dequantize, const std::string& tail,
                    const std::string& y_zero = "[0]") {
  return R"(graph main [ai.onnx=13] (%a: u8[1,2,2], %b: u8[1,2,2]) {
  @as: f32[] = [0.5]
  @az: u8[] = [3]
  @bs: f32[] = [0.25]
  @bc: f32[2] = [0.25, 0.125]
  @bz: u8[] = [7]
  @ys: f32[] = [0.2]
  @yz: u8[] = )" +
         y_zero + R"(
  %af = DequantizeLinear(%a, @as, @az)
)" + b_dequantize +
         R"(  %s = "add" Add(%af, %bf)
)" + tail +
         R"(  %y = QuantizeLinear(%r, @ys, @yz)
  return %y
}
)";
}

const char* kPerTensorB = "  %bf = DequantizeLinear(%b, @bs, @bz)\n";

TEST(QdqAddFusion, FusesAddAndReluIntoQLinearAdd) {
  PassResult result;
  EXPECT_EQ(fuse(qdq_add(kPerTensorB, "  %r = Relu(%s)\n"), &result),
            R"(graph main [ai.onnx=13, com.microsoft=1] (%a: u8[1,2,2], %b: u8[1,2,2]) {
  @as: f32[] = [0.5]
  @az: u8[] = [3]
  @bs: f32[] = [0.25]
  @bz: u8[] = [7]
  @ys: f32[] = [0.2]
  @yz: u8[] = [0]
  %y = "add" com.microsoft.QLinearAdd(%a, @as, @az, %b, @bs, @bz, @ys, @yz)
  return %y
}
)");
  EXPECT_EQ(result.summary(),
            "QDQ fusion: 1 Add nodes fused into com.microsoft.QLinearAdd, 1 Relu nodes fused into "
            "a QLinear op");
}

TEST(QdqAddFusion, FusesAnAddWithoutRelu) {
  PassResult result;
  fuse(R"(graph main [ai.onnx=13] (%a: i8[4], %b: i8[4]) {
  @s: f32[] = [0.5]
  @z: i8[] = [-1]
  %af = DequantizeLinear(%a, @s, @z)
  %bf = DequantizeLinear(%b, @s, @z)
  %r = Add(%af, %bf)
  %y = QuantizeLinear(%r, @s, @z)
  return %y
}
)",
       &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: 1 Add nodes fused into com.microsoft.QLinearAdd");
}

TEST(QdqAddFusion, KeepsAnAddOfAPerAxisDequantizedOperand) {
  PassResult result;
  fuse(qdq_add("  %bf = DequantizeLinear[axis=1](%b, @bc)\n", "  %r = Relu(%s)\n"), &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

TEST(QdqAddFusion, KeepsReluWhenTheZeroPointIsNotTheLowest) {
  PassResult result;
  fuse(qdq_add(kPerTensorB, "  %r = Relu(%s)\n", "[5]"), &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

TEST(QdqAddFusion, KeepsAnAddOfOperandsOfAnotherType) {
  PassResult result;
  const std::string text = R"(graph main [ai.onnx=13] (%a: u8[4], %b: i8[4]) {
  @s: f32[] = [0.5]
  %af = DequantizeLinear(%a, @s)
  %bf = DequantizeLinear(%b, @s)
  %r = Add(%af, %bf)
  %y = QuantizeLinear(%r, @s)
  return %y
}
)";
  fuse(text, &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

TEST(QdqAddFusion, KeepsAnAddWhoseOutputHasAnotherReader) {
  PassResult result;
  const std::string text = R"(graph main [ai.onnx=13] (%a: u8[4], %b: u8[4]) {
  @s: f32[] = [0.5]
  %af = DequantizeLinear(%a, @s)
  %bf = DequantizeLinear(%b, @s)
  %r = Add(%af, %bf)
  %y = QuantizeLinear(%r, @s)
  return %y, %r
}
)";
  fuse(text, &result);
  EXPECT_EQ(result.summary(), "QDQ fusion: no change");
}

}  // namespace
}  // namespace cleave
