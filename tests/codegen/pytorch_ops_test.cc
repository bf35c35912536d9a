// The PyTorch op table: graph text in, Python statements out.
#include "codegen/pytorch_ops.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/text.h"

namespace cleave {
namespace {

// The statements of the node writing `output`, inputs named by their graph names.
std::string lines_for(const std::string& text, const std::string& output) {
  Graph graph = parse_graph(text);
  const NodeId node = graph.value(*graph.find_value(output)).producer;
  const auto lines = pytorch_lines(graph, node, [&](ValueId id) {
    return (graph.value(id).initializer ? "self." : "") + graph.value(id).name;
  });
  return fmt::format("{}", fmt::join(lines, "\n"));
}

TEST(PytorchOps, ConvWithFusedResidualAndReluIsWrittenOut) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=17] (%x: f32[1,3,8,8], %r: f32[1,4,8,8]) {
  @w: f32[4,3,3,3]
  %y: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", sum_input=3](%x, @w, _, %r)
  return %y
})",
                      "y"),
            "y = F.relu(conv2d(x, self.w, None, stride=(1, 1), padding=(1, 1), dilation=(1, "
            "1), groups=1) + r)");
}

TEST(PytorchOps, AsymmetricPadsBecomeAnExplicitPad) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=17] (%x: f32[1,3,8,8]) {
  @w: f32[4,3,3,3]
  %y: f32[1,4,4,4] = Conv[kernel_shape=[3,3], pads=[0,0,1,1], strides=[2,2]](%x, @w)
  return %y
})",
                      "y"),
            "y = F.pad(x, (0, 1, 0, 1))\n"
            "y = conv2d(y, self.w, None, stride=(2, 2), padding=(0, 0), dilation=(1, 1), "
            "groups=1)");
}

TEST(PytorchOps, GemmAndReshapeUseStaticShapes) {
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[1,4,2,2]) {
  @w: f32[3,16]
  @b: f32[3]
  @s: i64[2] = [1,-1]
  %f: f32[1,16] = Reshape(%x, @s)
  %y: f32[1,3] = Gemm[transB=1, alpha=0.5](%f, @w, @b)
  return %y
})";
  EXPECT_EQ(lines_for(text, "f"), "f = x.reshape((1, 16))");
  EXPECT_EQ(lines_for(text, "y"), "y = 0.5 * torch.matmul(f, self.w.t()) + self.b");
}

TEST(PytorchOps, ConstantSliceAndGatherBecomeIndexing) {
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[2,6,4]) {
  @starts: i64[1] = [1]
  @ends: i64[1] = [-1]
  @axes: i64[1] = [1]
  @k: i64[] = [0]
  %s: f32[2,4,4] = Slice(%x, @starts, @ends, @axes)
  %g: f32[6,4] = Gather[axis=0](%x, @k)
  return %s, %g
})";
  EXPECT_EQ(lines_for(text, "s"), "s = x[:, 1:5, :]");
  EXPECT_EQ(lines_for(text, "g"), "g = x.select(0, 0)");
}

TEST(PytorchOps, AnOpWithoutMappingIsAnErrorNamingTheNode) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,4,8,8]) {
  %y = "norm1" LRN[size=3](%x)
  return %y
})");
  try {
    pytorch_lines(graph, graph.value(*graph.find_value("y")).producer,
                  [&](ValueId id) { return graph.value(id).name; });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("norm1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("LRN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cleave
