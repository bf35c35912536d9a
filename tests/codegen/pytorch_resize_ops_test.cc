// The PyTorch op table's Resize and Upsample: which F.interpolate call each form becomes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "codegen/pytorch_ops.h"
#include "ir/text.h"

namespace cleave {
namespace {

// The statements of the node writing `y` in `text`, values named by their graph names.
std::string lines_for(const std::string& text) {
  Graph graph = parse_graph(text);
  const NodeId node = graph.value(*graph.find_value("y")).producer;
  const auto lines = pytorch_lines(graph, node, [&](ValueId id) {
    return (graph.value(id).initializer ? "self." : "") + graph.value(id).name;
  });
  return fmt::format("{}", fmt::join(lines, "\n"));
}

// One Resize-13 of f32[1,2,8,8] to `out` with these attributes and scales.
std::string resize(const std::string& attributes, const std::string& scales,
                   const std::string& out) {
  return lines_for(R"(graph main [ai.onnx=13] (%x: f32[1,2,8,8]) {
  @s: f32[4] = [)" +
                   scales + R"(]
  %y: f32[)" + out +
                   R"(] = Resize[)" + attributes + R"(](%x, _, @s)
  return %y
})");
}

TEST(PytorchResizeOps, DefaultNearestEnlargingTwiceIsTorchNearest) {
  // half_pixel with round_prefer_floor picks 0,0,1,1,.. when enlarging twice, as torch does.
  EXPECT_EQ(resize(R"(mode="nearest")", "1,1,2,2", "1,2,16,16"),
            "y = F.interpolate(x, size=(16, 16), mode='nearest')");
}

TEST(PytorchResizeOps, HalfPixelRoundPreferCeilShrinkingIsNearestExact) {
  // Output o reads 2o + 1: torch's nearest reads 2o, nearest-exact 2o + 1.
  EXPECT_EQ(resize(R"(mode="nearest", nearest_mode="round_prefer_ceil")", "1,1,0.5,0.5", "1,2,4,4"),
            "y = F.interpolate(x, size=(4, 4), mode='nearest-exact')");
}

TEST(PytorchResizeOps, LinearWithScalesKeepsTheScalesForTheCoordinates) {
  EXPECT_EQ(resize(R"(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")",
                   "1,1,1.5,2", "1,2,12,16"),
            "y = F.interpolate(x, scale_factor=(1.5, 2.0), recompute_scale_factor=False, "
            "mode='bilinear', align_corners=False)");
}

TEST(PytorchResizeOps, UpsampleIsAsymmetricTruncatingNearest) {
  EXPECT_EQ(lines_for(R"(graph main [ai.onnx=9] (%x: f32[1,2,4,4]) {
  @s: f32[4] = [1,1,3,3]
  %y: f32[1,2,12,12] = Upsample[mode="nearest"](%x, @s)
  return %y
})"),
            "y = F.interpolate(x, size=(12, 12), mode='nearest')");
}

TEST(PytorchResizeOps, ResizingChannelsIsRefused) {
  EXPECT_THROW(
      {
        try {
          resize(R"(mode="nearest")", "1,2,1,1", "1,4,8,8");
        } catch (const Error& error) {
          EXPECT_NE(std::string(error.what()).find("resizing axis 1"), std::string::npos)
              << error.what();
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace cleave
