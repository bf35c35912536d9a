// QDQ fusion: DequantizeLinear → Conv/MatMul [→ Relu] → QuantizeLinear onto QLinearConv and
// QLinearMatMul, biases as int32, and the near misses that must stay.
#include "passes/qdq_fusion.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"

namespace cleave {
namespace {

// The graph after QDQ fusion and dead-code elimination (which drops the unread
// DequantizeLinear nodes).
std::string fuse(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_qdq(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// An int8 Conv in QDQ form with per-channel weights; `bias` and `tail` vary.
std::string qdq_conv(const std::string& bias, const std::string& tail) {
  return R"(graph main [ai.onnx=13] (%x: u8[1,1,3,3]) {
  @xs: f32[] = [0.5]
  @xz: u8[] = [3]
  @w: i8[2,1,1,1] = [2, -4]
  @ws: f32[2] = [0.25, 0.125]
  @ys: f32[] = [0.2]
  @yz: u8[] = [0]
)" + bias +
         R"(  %xf = DequantizeLinear(%x, @xs, @xz)
  %wf = DequantizeLinear[axis=0](@w, @ws)
)" + tail +
         R"(  %y = QuantizeLinear(%r, @ys, @yz)
  return %y
}
)";
}

TEST(QdqFusion, FusesConvReluAndInt32Bias) {
  PassResult result;
  const std::string bias = R"(  @b: i32[2] = [7, -9]
  @bs: f32[2] = [0.125, 0.0625]
)";
  const std::string tail = R"(  %bf = DequantizeLinear[axis=0](@b, @bs)
  %c = Conv[pads=[1, 1, 1, 1]](%xf, %wf, %bf)
  %r = Relu(%c)
)";
  EXPECT_EQ(fuse(qdq_conv(bias, tail), &result), R"(graph main [ai.onnx=13] (%x: u8[1,1,3,3]) {
  @xs: f32[] = [0.5]
  @xz: u8[] = [3]
  @w: i8[2,1,1,1] = [2, -4]
  @ws: f32[2] = [0.25, 0.125]
  @ys: f32[] = [0.2]
  @yz: u8[] = [0]
  @b: i32[2] = [7, -9]
  @c_w_zero_point: i8[] = [0]
  %y = "c" QLinearConv[pads=[1,1,1,1]](%x, @xs, @xz, @w, @ws, @c_w_zero_point, @ys, @yz, @b)
  return %y
}
)");
  EXPECT_EQ(
      result.summary(),
      "QDQ fusion: 1 Conv nodes fused into QLinearConv, 1 Relu nodes fused into a QLinear op");
}

TEST(QdqFusion, QuantizesAFloatBiasToTheSumScale) {
  // Sum scales 0.5·0.25 = 0.125 and 0.5·0.125 = 0.0625: 1.0 → 8, -0.25 → -4.
  const std::string out =
      fuse(qdq_conv("  @b: f32[2] = [1.0, -0.25]\n", "  %r = Conv(%xf, %wf, @b)\n"));
  EXPECT_NE(out.find("@r_bias_quantized: i32[2] = [8, -4]"), std::string::npos) << out;
  EXPECT_NE(out.find("QLinearConv(%x, @xs, @xz, @w, @ws, @r_w_zero_point, @ys, @yz, "
                     "@r_bias_quantized)"),
            std::string::npos)
      << out;
}

TEST(QdqFusion, KeepsReluWhenTheZeroPointIsNotTheLowest) {
  std::string text = qdq_conv("", "  %c = Conv(%xf, %wf)\n  %r = Relu(%c)\n");
  text.replace(text.find("@yz: u8[] = [0]"), 15, "@yz: u8[] = [9]");
  PassResult result;
  fuse(text, &result);
  EXPECT_FALSE(result.changed());
}

TEST(QdqFusion, KeepsAConvWhoseOutputHasAnotherReader) {
  std::string text = qdq_conv("", "  %r = Conv(%xf, %wf)\n");
  text.replace(text.find("  return %y"), 11, "  return %y, %r");
  PassResult result;
  fuse(text, &result);
  EXPECT_FALSE(result.changed());
}

TEST(QdqFusion, FusesMatMulWithPerColumnWeights) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%a: f32[2,2]) {
  @as: f32[] = [0.5]
  @az: i8[] = [1]
  @b: i8[2,3] = [1, 2, 3, 4, 5, 6]
  @bs: f32[3] = [0.1, 0.2, 0.3]
  @ys: f32[] = [0.2]
  @yz: i8[] = [-1]
  %aq = QuantizeLinear(%a, @as, @az)
  %af = DequantizeLinear(%aq, @as, @az)
  %bf = DequantizeLinear[axis=1](@b, @bs)
  %m = MatMul(%af, %bf)
  %y = QuantizeLinear(%m, @ys, @yz)
  return %y
}
)"),
            R"(graph main [ai.onnx=13] (%a: f32[2,2]) {
  @as: f32[] = [0.5]
  @az: i8[] = [1]
  @b: i8[2,3] = [1, 2, 3, 4, 5, 6]
  @bs: f32[3] = [0.1, 0.2, 0.3]
  @ys: f32[] = [0.2]
  @yz: i8[] = [-1]
  @m_w_zero_point: i8[] = [0]
  %aq = QuantizeLinear(%a, @as, @az)
  %y = "m" QLinearMatMul(%aq, @as, @az, @b, @bs, @m_w_zero_point, @ys, @yz)
  return %y
}
)");
}

TEST(QdqFusion, FusesGemmWithBiasIntoQGemmWithTransposedWeights) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: u8[1,2]) {
  @xs: f32[] = [0.5]
  @xz: u8[] = [3]
  @w: i8[3,2] = [1, 2, 3, 4, 5, 6]
  @ws: f32[3] = [0.25, 0.5, 1.0]
  @b: f32[3] = [1.0, -1.0, 0.5]
  @ys: f32[] = [0.2]
  @yz: u8[] = [0]
  %xf = DequantizeLinear(%x, @xs, @xz)
  %wf = DequantizeLinear[axis=0](@w, @ws)
  %g = Gemm[transB=1](%xf, %wf, @b)
  %y = QuantizeLinear(%g, @ys, @yz)
  return %y
}
)",
                 &result),
            R"(graph main [ai.onnx=13, com.microsoft=1] (%x: u8[1,2]) {
  @xs: f32[] = [0.5]
  @xz: u8[] = [3]
  @ws: f32[3] = [0.25, 0.5, 1.0]
  @ys: f32[] = [0.2]
  @yz: u8[] = [0]
  @g_bias_quantized: i32[3] = [8, -4, 1]
  @g_weights_transposed: i8[2,3] = [1, 3, 5, 2, 4, 6]
  @g_w_zero_point: i8[] = [0]
  %y = "g" com.microsoft.QGemm(%x, @xs, @xz, @g_weights_transposed, @ws, @g_w_zero_point, @g_bias_quantized, @ys, @yz)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "QDQ fusion: 1 Gemm nodes fused into com.microsoft.QGemm");
}

}  // namespace
}  // namespace cleave
