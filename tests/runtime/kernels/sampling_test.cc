// The sampling kernels: GridSample's modes and paddings, RoiAlign's bins, on hand-computed cases.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

// A 2×2 image [[1, 2], [3, 4]].
const Tensor kImage = floats({1, 1, 2, 2}, {1, 2, 3, 4});

Tensor grid_sample(const std::string& attributes, const std::vector<double>& points) {
  auto count = static_cast<int64_t>(points.size() / 2);
  std::string text = "graph g [ai.onnx=16] (%x: f32[1,1,2,2], %grid: f32[1,1," +
                     std::to_string(count) + ",2]) {\n  %y = GridSample" + attributes +
                     "(%x, %grid)\n  return %y\n}\n";
  return run_graph(text, {{"x", kImage}, {"grid", floats({1, 1, count, 2}, points)}})[0];
}

TEST(GridSample, BilinearAtTheCentreAveragesTheFourPixels) {
  Tensor y = grid_sample("", {0, 0});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_values(y, {2.5}, 1e-6);
}

TEST(GridSample, AlignCornersPutsMinusOneOnTheFirstPixelCentre) {
  Tensor y = grid_sample("[align_corners=1]", {-1, -1, 1, 1, 1, -1});
  expect_values(y, {1, 4, 2}, 1e-6);
}

TEST(GridSample, ZerosPaddingBlendsInZeroOutside) {
  // Without align_corners, x = -1 is the left edge of pixel 0: half pixel 0, half outside.
  Tensor y = grid_sample("", {-1, -0.5});
  expect_values(y, {0.5}, 1e-6);
}

TEST(GridSample, BorderPaddingRepeatsTheEdgePixel) {
  Tensor y = grid_sample("[padding_mode=\"border\"]", {-1, -0.5});
  expect_values(y, {1}, 1e-6);
}

TEST(GridSample, NearestRoundsToTheClosestPixel) {
  Tensor y = grid_sample("[mode=\"nearest\"]", {0.4, 0.6});
  expect_values(y, {4}, 0);
}

TEST(RoiAlign, AverageOfOneBinOverTheWholeImage) {
  // Box (0,0)-(2,2) with half-pixel offsets covers pixel centres -0.5..1.5; one 2×2 sample
  // grid lands on the four pixel centres exactly.
  const char* text = R"(graph g [ai.onnx=16] (%x: f32[1,1,2,2], %r: f32[1,4], %b: i64[1]) {
  %y = RoiAlign(%x, %r, %b)
  return %y
})";
  Tensor y = run_graph(text, {{"x", kImage},
                              {"r", floats({1, 4}, {0, 0, 2, 2})},
                              {"b", make_tensor(DataType::kInt64, {1}, {0})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_values(y, {2.5}, 1e-6);
}

TEST(RoiAlign, EachOutputBinSamplesItsOwnPart) {
  const char* text = R"(graph g [ai.onnx=16] (%x: f32[1,1,2,2], %r: f32[1,4], %b: i64[1]) {
  %y = RoiAlign[output_height=2, output_width=2, sampling_ratio=1](%x, %r, %b)
  return %y
})";
  Tensor y = run_graph(text, {{"x", kImage},
                              {"r", floats({1, 4}, {0, 0, 2, 2})},
                              {"b", make_tensor(DataType::kInt64, {1}, {0})}})[0];
  expect_values(y, {1, 2, 3, 4}, 1e-6);
}

}  // namespace
}  // namespace cleave
