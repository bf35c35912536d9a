// `cleave codegen --lang pytorch` of a Conv with a fused HardSwish and of Resize: the generated
// module matches `cleave run`, and Resize forms F.interpolate lacks are refused by node.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// mobilenet_v3's block head (Conv, then x * HardSigmoid(x) as PyTorch exports hardswish before
// opset 14), then Resize as a feature pyramid uses it: nearest 2x from scales, linear
// half_pixel from scales, linear align_corners to sizes of another aspect.
const char* kModel = R"(graph main [ai.onnx=17] (%x: f32[1,3,8,8]) {
  @w1: f32[8,3,3,3]
  @b1: f32[8]
  @w2: f32[4,16,3,3]
  @up: f32[4] = [1,1,2,2]
  @sizes: i64[4] = [1,16,24,20]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %g = HardSigmoid[alpha=0.16666667, beta=0.5](%a)
  %h = Mul(%a, %g)
  %n = "up_nearest" Resize[mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"](%h, _, @up)
  %l = "up_linear" Resize[mode="linear"](%h, _, @up)
  %c = Concat[axis=1](%n, %l)
  %k = "to_sizes" Resize[mode="linear", coordinate_transformation_mode="align_corners"](%c, _, _, @sizes)
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%k, @w2)
  return %y
})";

class CodegenPytorchResize : public CodegenFixture {
 protected:
  // Writes `text` as m.onnx and x.npy as cleave run's seeded input.
  void write(const std::string& text) {
    write_model(text, path("m.onnx"));
    write_npy(path("x.npy"), random_inputs(parse_graph(text), 0).at("x"));
  }
  // The largest difference between output y of cleave run and of the generated module, both
  // on x.npy.
  double largest_difference() const {
    if (cleave("run m.onnx --input x=x.npy --output-dir ref").exit_code != 0) return INFINITY;
    CommandOutput run =
        shell("/usr/bin/python3 py/run.py --input x=x.npy --output-dir out --sequential");
    EXPECT_EQ(run.exit_code, 0) << run.text;
    if (run.exit_code != 0) return INFINITY;
    const auto expected = read_npy(path("ref/y.npy")).to_double_vector();
    const auto actual = read_npy(path("out/y.npy")).to_double_vector();
    if (actual.size() != expected.size()) return INFINITY;
    double worst = 0;
    for (std::size_t i = 0; i < actual.size(); ++i)
      worst = std::max(worst, std::abs(actual[i] - expected[i]));
    return worst;
  }
  // A one-Resize model of f32[1,2,4,4] with these attributes and scales.
  void write_resize(const std::string& attributes, const std::string& scales) {
    write(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4]) {
  @s: f32[4] = [)" +
          scales + R"(]
  %y = "odd_resize" Resize[)" +
          attributes + R"(](%x, _, @s)
  return %y
})");
  }
};

TEST_F(CodegenPytorchResize, FusedHardSwishAndResizeMatchCleaveRun) {
  write(kModel);
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string model = read_text_file(path("py/model.py"));
  // The optimizer fused the gate into the Conv; the emitter writes it out.
  EXPECT_NE(model.find("F.hardswish(conv2d("), std::string::npos) << model;
  EXPECT_NE(model.find("mode='nearest')"), std::string::npos) << model;
  EXPECT_NE(model.find("mode='bilinear', align_corners=False)"), std::string::npos) << model;
  EXPECT_NE(model.find("mode='bilinear', align_corners=True)"), std::string::npos) << model;
  EXPECT_LT(largest_difference(), 1e-4);
}

TEST_F(CodegenPytorchResize, OtherNearestAndLinearFormsMatchCleaveRun) {
  // Default nearest enlarging twice (torch's nearest), half_pixel nearest rounding up while
  // shrinking (nearest-exact), pytorch_half_pixel linear by a scale of 1.5 (scale_factor).
  write(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,8]) {
  @up: f32[4] = [1,1,2,2]
  @down: f32[4] = [1,1,0.5,0.5]
  @odd: f32[4] = [1,1,1.5,1.5]
  %a = Resize[mode="nearest"](%x, _, @up)
  %b = Resize[mode="nearest", nearest_mode="round_prefer_ceil"](%a, _, @down)
  %y = Resize[mode="linear", coordinate_transformation_mode="pytorch_half_pixel"](%b, _, @odd)
  return %y
})");
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  EXPECT_NE(read_text_file(path("py/model.py")).find("mode='nearest-exact'"), std::string::npos);
  EXPECT_LT(largest_difference(), 1e-5);
}

TEST_F(CodegenPytorchResize, LinearAsymmetricIsRefusedByNode) {
  write_resize(R"(mode="linear", coordinate_transformation_mode="asymmetric")", "1,1,2,2");
  CommandOutput result = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("odd_resize"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("coordinate_transformation_mode 'asymmetric'"), std::string::npos)
      << result.text;
  EXPECT_FALSE(fs::exists(path("py")));
}

TEST_F(CodegenPytorchResize, NearestPickingOtherPixelsIsRefusedByNode) {
  // ceil picks 0,1,1,2,.. where torch's nearest picks 0,0,1,1,..
  write_resize(
      R"(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="ceil")",
      "1,1,2,2");
  CommandOutput result = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("odd_resize"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("nearest_mode 'ceil'"), std::string::npos) << result.text;
}

TEST_F(CodegenPytorchResize, CubicIsRefusedByNode) {
  write_resize(R"(mode="cubic")", "1,1,2,2");
  CommandOutput result = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("odd_resize"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("mode 'cubic'"), std::string::npos) << result.text;
}

}  // namespace
}  // namespace cleave
