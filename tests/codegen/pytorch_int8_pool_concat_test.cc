// The PyTorch op table's 8-bit MaxPool, com.microsoft QLinearConcat and com.cleave.ByteTable
// (QDQ fusions'): graph text in, Python statements out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "codegen/pytorch_ops.h"
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

TEST(PytorchInt8Ops, EightBitMaxPoolRunsInFloat32AndReturnsItsType) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=17] (%x: u8[1,2,4,4]) {
  %y: u8[1,2,2,2] = MaxPool[kernel_shape=[2,2], strides=[2,2]](%x)
  return %y
})",
                      "y"),
            "y = F.max_pool2d(x.to(torch.float32), (2, 2), stride=(2, 2), padding=(0, 0), "
            "dilation=(1, 1), ceil_mode=False)\n"
            "y = y.to(torch.uint8)");
}

TEST(PytorchInt8Ops, QLinearConcatDequantizesConcatenatesAndQuantizes) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=17, com.microsoft=1] (%a: u8[1,2], %b: u8[1,3]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @bs: f32[] = [0.25]
  %y: u8[1,5] = com.microsoft.QLinearConcat[axis=1](@s, @z, %a, @s, @z, %b, @bs, @z)
  return %y
})",
                      "y"),
            "y = torch.clamp(torch.round(torch.cat([(a.to(torch.int32) - self.z.to(torch.int32))"
            ".to(torch.float32) * self.s, (b.to(torch.int32) - self.z.to(torch.int32))"
            ".to(torch.float32) * self.bs], dim=1) / self.s) + self.z.to(torch.float32), 0, 255)"
            ".to(torch.uint8)");
}

// The lookup assigns its output: without it the next statement read a name never set
// (NameError on every byte-table model).
TEST(PytorchInt8Ops, AByteTableLooksUpEachValuesByteIntoItsOutput) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=17, com.cleave=1] (%x: i8[1,300]) {
  @table: u8[256]
  %y: u8[1,300] = com.cleave.ByteTable(%x, @table)
  return %y
})",
                      "y"),
            "y = self.table[x.view(torch.uint8).to(torch.int64)]");
}

}  // namespace
}  // namespace cleave
