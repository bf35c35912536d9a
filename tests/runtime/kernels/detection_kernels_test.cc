// The detectors' kernels on cases built so the answer is known: NonMaxSuppression with more kept
// boxes than one vector block, RoiAlign's taps shared by channels, NonZero of rank 3, row scatters.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

constexpr int kApart = 20;  // Disjoint boxes, more than one block of 16 kept ones.

// Boxes 0..19 are disjoint unit squares [y1, x1, y2, x2] two apart; box 20 + k nearly
// covers box k (IoU 0.9) with a lower score, so every one of them is suppressed, each by the
// kept box at position k: in the first block of 16 or in the rest.
std::vector<int64_t> selected_by_nms(double iou_threshold) {
  std::vector<double> boxes, scores;
  for (int k = 0; k < kApart; ++k) boxes.insert(boxes.end(), {0, 2.0 * k, 1, 2.0 * k + 1});
  for (int k = 0; k < kApart; ++k) boxes.insert(boxes.end(), {0, 2.0 * k, 1, 2.0 * k + 0.9});
  for (int k = 0; k < 2 * kApart; ++k) scores.push_back(1.0 - 0.01 * k);
  const char* text = R"(graph g [ai.onnx=13] (%b: f32[1,40,4], %s: f32[1,1,40], %m: i64[1],
      %t: f32[1]) {
  %y = NonMaxSuppression(%b, %s, %m, %t)
  return %y
})";
  const Tensor y = run_graph(text, {{"b", floats({1, 2 * kApart, 4}, boxes)},
                                    {"s", floats({1, 1, 2 * kApart}, scores)},
                                    {"m", make_tensor(DataType::kInt64, {1}, {100})},
                                    {"t", floats({1}, {iou_threshold})}})[0];
  std::vector<int64_t> chosen;
  for (int64_t row = 0; row < y.dim(0); ++row) chosen.push_back(y.data<int64_t>()[row * 3 + 2]);
  return chosen;
}

TEST(NonMaxSuppressionBlocks, EachNearCopyIsSuppressedByItsKeptBox) {
  std::vector<int64_t> expected;
  for (int k = 0; k < kApart; ++k) expected.push_back(k);
  EXPECT_EQ(selected_by_nms(0.5), expected);
}

TEST(NonMaxSuppressionBlocks, AThresholdAboveTheOverlapKeepsEveryBox) {
  EXPECT_EQ(selected_by_nms(0.95).size(), 2u * kApart);
}

TEST(NonMaxSuppressionBlocks, AWideKeptBoxReachesACandidateFarFromItsLeftEdge) {
  // Box 0 spans x 0..100; twenty narrow boxes lie beside it at x 200.. (kept, apart); box 21
  // at x 90..100 overlaps only box 0 (IoU 0.1), which must still be found.
  std::vector<double> boxes = {0, 0, 1, 100};
  for (int k = 0; k < kApart; ++k) boxes.insert(boxes.end(), {0, 200.0 + 2 * k, 1, 201.0 + 2 * k});
  boxes.insert(boxes.end(), {0, 90, 1, 100});
  std::vector<double> scores;
  for (int k = 0; k < kApart + 2; ++k) scores.push_back(1.0 - 0.01 * k);
  const char* text = R"(graph g [ai.onnx=13] (%b: f32[1,22,4], %s: f32[1,1,22], %m: i64[1],
      %t: f32[1]) {
  %y = NonMaxSuppression(%b, %s, %m, %t)
  return %y
})";
  const Tensor y = run_graph(text, {{"b", floats({1, kApart + 2, 4}, boxes)},
                                    {"s", floats({1, 1, kApart + 2}, scores)},
                                    {"m", make_tensor(DataType::kInt64, {1}, {100})},
                                    {"t", floats({1}, {0.05})}})[0];
  ASSERT_EQ(y.dim(0), kApart + 1);
  for (int64_t row = 0; row < y.dim(0); ++row) EXPECT_EQ(y.data<int64_t>()[row * 3 + 2], row);
}

Tensor roi_align(const Tensor& image, const std::vector<double>& box, const std::string& attrs) {
  const std::string text =
      "graph g [ai.onnx=16] (%x: f32[1,2,2,2], %r: f32[1,4], %b: i64[1]) {\n"
      "  %y = RoiAlign" +
      attrs + "(%x, %r, %b)\n  return %y\n}\n";
  return run_graph(text, {{"x", image},
                          {"r", floats({1, 4}, box)},
                          {"b", make_tensor(DataType::kInt64, {1}, {0})}})[0];
}

TEST(RoiAlignTaps, EachChannelReadsItsOwnPlane) {
  // Channel 1 is ten times channel 0; the taps found once serve both.
  const Tensor image = floats({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  const Tensor y =
      roi_align(image, {0, 0, 2, 2}, "[output_height=2, output_width=2, sampling_ratio=1]");
  expect_values(y, {1, 2, 3, 4, 10, 20, 30, 40}, 1e-6);
}

TEST(RoiAlignTaps, AnInvertedBoxTakesNoSamples) {
  // x2 < x1 and y2 < y1: both adaptive sample counts are negative, their product positive.
  const Tensor image = floats({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  const Tensor y = roi_align(image, {2, 2, 0, 0}, "[output_height=1, output_width=1]");
  expect_values(y, {0, 0});
}

TEST(NonZeroRank3, CoordinatesCarryAcrossEveryAxis) {
  std::vector<double> values(2 * 3 * 4, 0);
  for (int flat : {0, 3, 4, 11, 12, 23}) values[flat] = 1;
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[2,3,4]) {
  %y = NonZero(%x)
  return %y
})";
  const Tensor y = run_graph(text, {{"x", floats({2, 3, 4}, values)}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 6}));
  expect_values(y, {0, 0, 0, 0, 1, 1,  // axis 0
                    0, 0, 1, 2, 0, 2,  // axis 1
                    0, 3, 0, 3, 0, 3});
}

Tensor scatter_rows(const std::string& attributes, const std::vector<double>& rows) {
  // Rows of data [3, 4] replaced (or added to) by whole rows of updates, as a detector's RoI
  // pooler puts each level's RoIs back: every position of an update row addresses one run.
  const std::string text =
      "graph g [ai.onnx=16] (%d: f32[3,4], %i: i64[2,4], %u: f32[2,4]) {\n"
      "  %y = ScatterElements" +
      attributes + "(%d, %i, %u)\n  return %y\n}\n";
  std::vector<double> indices;
  for (double row : rows) indices.insert(indices.end(), {row, row, row, row});
  return run_graph(text, {{"d", floats({3, 4}, std::vector<double>(12, 1))},
                          {"i", make_tensor(DataType::kInt64, {2, 4}, indices)},
                          {"u", floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}})[0];
}

TEST(ScatterElementsRuns, WholeRowsLandInTheirRows) {
  expect_values(scatter_rows("[axis=0]", {2, 0}), {5, 6, 7, 8, 1, 1, 1, 1, 1, 2, 3, 4});
}

TEST(ScatterElementsRuns, ARepeatedRowAddsBoth) {
  expect_values(scatter_rows("[axis=0, reduction=\"add\"]", {1, -2}),
                {1, 1, 1, 1, 7, 9, 11, 13, 1, 1, 1, 1});
}

}  // namespace
}  // namespace cleave
