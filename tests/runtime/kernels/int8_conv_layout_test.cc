// Int8 convolutions passing oneDNN's layout to each other: a chain of two QLinearConv computes
// the same bytes whether the first leaves its output in oneDNN's layout for the second or the
// executor keeps every tensor plain, also where the second runs the loops (its weights a graph
// input), which read the first's output reordered to plain.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

using kernel_test::listed;
using kernel_test::make_tensor;
using kernel_test::random_values;

// x → QLinearConv (16 → 16, 3x3, output zero point 0) → QLinearConv (16 → 8, 3x3); the
// second's weights are a constant or the graph input %w.
std::string chain(bool second_weights_constant) {
  const std::string w2_type = "i8[8,16,3,3]";
  std::string text = "graph g [ai.onnx=13] (%x: u8[1,16,9,9]" +
                     std::string(second_weights_constant ? "" : ", %w: " + w2_type) + ") {\n";
  text += "  @w1: i8[16,16,3,3] = " + listed(random_values(16 * 16 * 9, -127, 127, 1)) + "\n";
  if (second_weights_constant) {
    text += "  @w: " + w2_type + " = " + listed(random_values(8 * 16 * 9, -127, 127, 2)) + "\n";
  }
  text += R"(  @xs: f32[] = [0.05]
  @xz: u8[] = [7]
  @ws: f32[] = [0.002]
  @wz: i8[] = [0]
  @hs: f32[] = [0.04]
  @hz: u8[] = [0]
  @ys: f32[] = [0.03]
  @yz: u8[] = [3]
  %h = QLinearConv[pads=[1,1,1,1]](%x, @xs, @xz, @w1, @ws, @wz, @hs, @hz)
)";
  text += std::string("  %y = QLinearConv[pads=[1,1,1,1]](%h, @hs, @hz, ") +
          (second_weights_constant ? "@w" : "%w") + ", @ws, @wz, @ys, @yz)\n";
  return text + "  return %y\n}\n";
}

void expect_layouts_agree(bool second_weights_constant) {
  std::map<std::string, Tensor> inputs = {
      {"x", make_tensor(DataType::kUInt8, {1, 16, 9, 9}, random_values(16 * 81, 0, 255, 3))}};
  if (!second_weights_constant) {
    inputs["w"] =
        make_tensor(DataType::kInt8, {8, 16, 3, 3}, random_values(8 * 16 * 9, -127, 127, 2));
  }
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  const Tensor expected = kernel_test::run_graph(chain(second_weights_constant), inputs, plain)[0];
  const Tensor got = kernel_test::run_graph(chain(second_weights_constant), inputs)[0];
  ASSERT_EQ(got.dtype(), DataType::kUInt8);
  EXPECT_EQ(got.to_double_vector(), expected.to_double_vector());
}

TEST(Int8ConvLayouts, ChainOnOneDnnMatchesPlainLayouts) {
  expect_layouts_agree(true);
}

TEST(Int8ConvLayouts, LoopsReadABlockedInputReorderedToPlain) {
  expect_layouts_agree(false);
}

}  // namespace
}  // namespace cleave
