// Resize/Upsample along H and W: input rows against hand-computed values, split == whole.
#include "spatial/resize_region.h"

#include <gtest/gtest.h>

#include "split_testing.h"

namespace cleave {
namespace {

using Transform = ResizeAxis::Transform;
using Rounding = ResizeAxis::Rounding;

ResizeAxis axis(int64_t in, int64_t out, float scale, Transform t, bool linear,
                Rounding r = Rounding::kRoundPreferFloor) {
  ResizeAxis a;
  a.in = in;
  a.out = out;
  a.scale = scale;
  a.resized = scale * static_cast<float>(in);
  a.transform = t;
  a.linear = linear;
  a.rounding = r;
  return a;
}

// Nearest, scale 2, 4 rows to 8. half_pixel: x/2 - 0.25; asymmetric: x/2.
TEST(ResizeRegion, NearestRowsForEachRoundingMode) {
  const auto half = [](Rounding r) { return axis(4, 8, 2, Transform::kHalfPixel, false, r); };
  const auto asym = [](Rounding r) { return axis(4, 8, 2, Transform::kAsymmetric, false, r); };
  // rows 4..7: 1.75 -> 2 and 3.25 -> 3; rows 0..3: -0.25 -> 0 and 1.25 -> 1.
  EXPECT_EQ(resize_rows_read(half(Rounding::kRoundPreferFloor), {4, 8}), (Interval{2, 4}));
  EXPECT_EQ(resize_rows_read(half(Rounding::kRoundPreferFloor), {0, 4}), (Interval{0, 2}));
  // ceil: rows 3..5: 1.25 -> 2, 2.25 -> 3.
  EXPECT_EQ(resize_rows_read(half(Rounding::kCeil), {3, 6}), (Interval{2, 4}));
  // floor, asymmetric: rows 3..5: 1.5 -> 1, 2.5 -> 2.
  EXPECT_EQ(resize_rows_read(asym(Rounding::kFloor), {3, 6}), (Interval{1, 3}));
  // The ties 1.5 and 2.5 go down with round_prefer_floor, up with round_prefer_ceil.
  EXPECT_EQ(resize_rows_read(asym(Rounding::kRoundPreferFloor), {3, 6}), (Interval{1, 3}));
  EXPECT_EQ(resize_rows_read(asym(Rounding::kRoundPreferCeil), {3, 6}), (Interval{2, 4}));
  // Upsample's rounding truncates when enlarging: rows 3..5 read 1, 2.
  EXPECT_EQ(resize_rows_read(asym(Rounding::kSimple), {3, 6}), (Interval{1, 3}));
}

// Shrinking: 8 rows to 4 at half_pixel is 2x + 0.5, a tie each time: rows 2..3 read 4 and 6.
TEST(ResizeRegion, NearestDownsampleReadsEveryOtherRow) {
  EXPECT_EQ(resize_rows_read(axis(8, 4, 0.5f, Transform::kHalfPixel, false), {2, 4}),
            (Interval{4, 7}));
}

TEST(ResizeRegion, LinearRowsReadBothTapsForEachCoordinateMode) {
  // half_pixel x2, 4 -> 8: row 4 at 1.75 (taps 1, 2); row 7 at 3.25, clamped to 3 (taps 3, 3).
  EXPECT_EQ(resize_rows_read(axis(4, 8, 2, Transform::kHalfPixel, true), {4, 8}), (Interval{1, 4}));
  // row 0 at -0.25 clamped to 0; row 3 at 1.25 (taps 1, 2).
  EXPECT_EQ(resize_rows_read(axis(4, 8, 2, Transform::kHalfPixel, true), {0, 4}), (Interval{0, 3}));
  // align_corners 5 -> 9: x * 4 / 8. Row 5 at 2.5 (taps 2, 3); row 8 at 4 (tap 4).
  EXPECT_EQ(resize_rows_read(axis(5, 9, 1.8f, Transform::kAlignCorners, true), {5, 9}),
            (Interval{2, 5}));
  // pytorch_half_pixel x1.5, 4 -> 6: row 3 at 3.5/1.5 - 0.5 = 1.83; row 5 at 3.17, clamped 3.
  EXPECT_EQ(resize_rows_read(axis(4, 6, 1.5f, Transform::kPytorchHalfPixel, true), {3, 6}),
            (Interval{1, 4}));
  // asymmetric x2: row 5 at 2.5 (taps 2, 3), row 6 at 3.
  EXPECT_EQ(resize_rows_read(axis(4, 8, 2, Transform::kAsymmetric, true), {5, 7}),
            (Interval{2, 4}));
}

std::string plan(const ResizeAxis& a, bool by_sizes, Interval rows) {
  std::string why;
  auto p = plan_resize_axis(a, by_sizes, rows, why);
  if (!p) return "refused: " + why;
  return "read " + std::to_string(p->read.begin) + ":" + std::to_string(p->read.end) +
         " computes " + std::to_string(p->computed.begin) + ":" + std::to_string(p->computed.end);
}

// A non-integer scale, 1.5 = 3/2: a slice starts at an even input row (output row 3 per 2 input
// rows), so its coordinates are the whole Resize's shifted by whole rows; it computes from there
// and is cropped.
TEST(ResizeRegion, NonIntegerScaleStartsWhereTheGridsLineUp) {
  const ResizeAxis a = axis(6, 9, 1.5f, Transform::kHalfPixel, false);
  // rows 4..8: row 4 at 4.5/1.5 - 0.5 = 2.5 -> 2 (a tie, down), row 8 at 5.17 -> 5.
  EXPECT_EQ(plan(a, false, {4, 9}), "read 2:6 computes 3:9");
  // rows 0..3: -0.17 -> 0 and 1.83 -> 2; 3 input rows make floor(4.5) = 4 output rows.
  EXPECT_EQ(plan(a, false, {0, 4}), "read 0:3 computes 0:4");
  // By sizes (the same 6 -> 9 given as sizes): whole steps of 2 rows in, 3 out.
  EXPECT_EQ(plan(a, true, {4, 9}), "read 2:6 computes 3:9");
  EXPECT_EQ(plan(a, true, {0, 4}), "read 0:4 computes 0:6");
}

// align_corners keeps (in - 1) / (out - 1): 5 -> 9 lines up every input row (4/8 = 1/2);
// 28 -> 56 only every 27 input rows, which is no split at all.
TEST(ResizeRegion, AlignCornersSplitsOnlyWhereItsGridsLineUp) {
  EXPECT_EQ(plan(axis(5, 9, 1.8f, Transform::kAlignCorners, true), true, {5, 9}),
            "read 2:5 computes 4:9");
  EXPECT_EQ(plan(axis(28, 56, 2, Transform::kAlignCorners, true), true, {28, 56}),
            "refused: input and output rows line up only every 27 input rows (28 to 56)");
}

// Split against whole on small generated models: every mode, both scales and sizes, 2 to 4
// machines along H, W, the grid and C (where given sizes become the slice's channel count).
std::string resize_model(const std::string& attributes, const std::string& rates, int h, int w,
                         int oh, int ow, bool sizes) {
  const std::string rates_type = sizes ? "i64[4]" : "f32[4]";
  const std::string inputs = sizes ? "(%c, _, _, @rates)" : "(%c, _, @rates)";
  return "graph main [ai.onnx=13] (%x: f32[1,2," + std::to_string(h) + "," + std::to_string(w) +
         "]) {\n  @w: f32[3,2,3,3]\n  @rates: " + rates_type + " = " + rates + "\n  %c: f32[1,3," +
         std::to_string(h) + "," + std::to_string(w) +
         "] = \"conv\" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)\n  %y: f32[1,3," +
         std::to_string(oh) + "," + std::to_string(ow) + "] = \"resize\" Resize[" + attributes +
         "]" + inputs + "\n  return %y\n}";
}

struct ResizeCase {
  std::string attributes, rates;
  int h, w, oh, ow;
  bool sizes;
};

TEST(ResizeRegion, SplitAlongHAndWEqualsTheWholeResize) {
  const std::vector<ResizeCase> cases = {
      {"mode=\"nearest\"", "[1.0, 1.0, 2.0, 2.0]", 9, 8, 18, 16, false},
      {"mode=\"nearest\", nearest_mode=\"floor\", coordinate_transformation_mode=\"asymmetric\"",
       "[1.0, 1.0, 3.0, 2.0]", 7, 8, 21, 16, false},
      {"mode=\"nearest\", nearest_mode=\"ceil\"", "[1.0, 1.0, 1.5, 2.5]", 10, 8, 15, 20, false},
      {"mode=\"nearest\", nearest_mode=\"round_prefer_ceil\", "
       "coordinate_transformation_mode=\"asymmetric\"",
       "[1.0, 1.0, 2.0, 1.5]", 9, 8, 18, 12, false},
      {"mode=\"nearest\", coordinate_transformation_mode=\"align_corners\"", "[1, 3, 17, 15]", 9, 8,
       17, 15, true},
      {"mode=\"nearest\"", "[1.0, 1.0, 0.5, 0.5]", 16, 12, 8, 6, false},
      {"mode=\"linear\"", "[1.0, 1.0, 2.0, 2.0]", 9, 8, 18, 16, false},
      {"mode=\"linear\", coordinate_transformation_mode=\"pytorch_half_pixel\"",
       "[1.0, 1.0, 1.5, 2.0]", 10, 8, 15, 16, false},
      {"mode=\"linear\", coordinate_transformation_mode=\"asymmetric\"", "[1, 3, 20, 12]", 10, 8,
       20, 12, true},
      {"mode=\"linear\", coordinate_transformation_mode=\"align_corners\"", "[1.0, 1.0, 2.0, 2.0]",
       9, 8, 18, 16, false},
      {"mode=\"linear\", coordinate_transformation_mode=\"align_corners\"", "[1, 3, 17, 22]", 9, 8,
       17, 22, true},
      {"mode=\"linear\"", "[1, 3, 15, 12]", 10, 8, 15, 12, true},
  };
  for (const ResizeCase& c : cases) {
    Graph g = testing::graph_with_weights(
        resize_model(c.attributes, c.rates, c.h, c.w, c.oh, c.ow, c.sizes));
    for (int machines : {2, 3, 4}) {
      for (SplitDim dim : {SplitDim::kH, SplitDim::kW, SplitDim::kHW, SplitDim::kC}) {
        SplitResult r = testing::split(g, machines, dim);
        const std::string where = c.attributes + " " + c.rates + " machines " +
                                  std::to_string(machines) + " " + std::string(split_dim_name(dim));
        const NodeId resize = *g.find_node("resize");
        const LayerSplit& layer = *r.partition.layers[resize];
        const bool aligns = c.attributes.find("align_corners") == std::string::npos || c.sizes;
        if (aligns) {
          EXPECT_FALSE(layer.gathered) << where << ": " << layer.reason;
        }
        EXPECT_LT(testing::split_error(g, r), 1e-5) << where;
      }
    }
  }
}

// Upsample (opset 9): asymmetric coordinates, truncating when enlarging; 1.5 along H.
TEST(ResizeRegion, UpsampleSplitsAlongHAndW) {
  for (const char* mode : {"nearest", "linear"}) {
    Graph g =
        testing::graph_with_weights(std::string(R"(graph main [ai.onnx=9] (%x: f32[1,2,10,8]) {
  @w: f32[3,2,3,3]
  @rates: f32[4] = [1.0, 1.0, 1.5, 2.0]
  %c: f32[1,3,10,8] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %y: f32[1,3,15,16] = "up" Upsample[mode=")") +
                                    mode + R"("](%c, @rates)
  return %y
})");
    for (int machines : {2, 3, 4}) {
      for (SplitDim dim : {SplitDim::kH, SplitDim::kW, SplitDim::kHW}) {
        SplitResult r = testing::split(g, machines, dim);
        EXPECT_FALSE(r.partition.layers[*g.find_node("up")]->gathered) << mode;
        EXPECT_LT(testing::split_error(g, r), 1e-5) << mode << " " << machines;
      }
    }
  }
}

// align_corners given by scales (2x, 9 -> 18): (in-1)/(out-1) = 8/17 lines up only at the
// ends, so the Resize is gathered with that reason; the split still equals the whole model.
TEST(ResizeRegion, RefusedResizeIsGatheredWithItsReason) {
  Graph g = testing::graph_with_weights(
      resize_model("mode=\"linear\", coordinate_transformation_mode=\"align_corners\"",
                   "[1.0, 1.0, 2.0, 2.0]", 9, 8, 18, 16, false));
  SplitResult r = testing::split(g, 2, SplitDim::kH);
  const LayerSplit& layer = *r.partition.layers[*g.find_node("resize")];
  EXPECT_TRUE(layer.gathered);
  EXPECT_NE(layer.reason.find("line up only every 8 input rows"), std::string::npos)
      << layer.reason;
  EXPECT_LT(testing::split_error(g, r), 1e-5);
}

}  // namespace
}  // namespace cleave
