// The per-channel loops (x op v[c], global average) in every row shape, on one and two threads.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/kernels/channel_loops.h"

namespace cleave {
namespace {

// The row shapes the kernels build: 16-, 8- and 4-channel blocks (two images of 3 groups),
// plain channels, [N, C] rows and channels-last; 37 pixels leave a remainder after 4s and 16s.
const std::vector<ChannelRows> kShapes = {
    {6, 3, 37, 16}, {6, 3, 37, 8}, {6, 3, 37, 4}, {40, 20, 37, 1}, {2, 1, 1, 20}, {2, 1, 37, 20},
};

std::vector<float> values_of(int64_t count, float from, float step) {
  std::vector<float> values(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[i] = from + step * static_cast<float>(i % 97);
  return values;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ChannelLoops, EachOpRoundsOncePerElementInEveryShapeAndTeam) {
  for (const ChannelRows& shape : kShapes) {
    const int64_t count = shape.rows * shape.pixels * shape.lanes;
    const std::vector<float> x = values_of(count, -3.0f, 0.0625f);
    const std::vector<float> v = values_of(shape.groups * shape.lanes, 0.5f, 0.25f);
    for (ChannelOp op : {ChannelOp::kAdd, ChannelOp::kSub, ChannelOp::kMul, ChannelOp::kDiv}) {
      std::vector<float> expected(x.size());
      for (int64_t i = 0; i < count; ++i) {
        const int64_t unit = i / shape.lanes, lane = i % shape.lanes;
        const float b = v[(unit / shape.pixels % shape.groups) * shape.lanes + lane];
        expected[i] = op == ChannelOp::kAdd   ? x[i] + b
                      : op == ChannelOp::kSub ? x[i] - b
                      : op == ChannelOp::kMul ? x[i] * b
                                              : x[i] / b;
      }
      for (int threads : {1, 2}) {
        SCOPED_TRACE(fmt::format("rows {} groups {} pixels {} lanes {}, op {}, {} thread(s)",
                                 shape.rows, shape.groups, shape.pixels, shape.lanes,
                                 static_cast<int>(op), threads));
        std::vector<float> out(x.size(), -1.0f);
        // A threshold of one float: two threads split even these small shapes.
        channel_op_loops(op, x.data(), out.data(), v.data(), shape, threads, 1);
        EXPECT_TRUE(same_bits(out, expected));
      }
    }
  }
}

TEST(ChannelLoops, GlobalAverageMatchesADoubleSumAndTwoThreadsGiveTheSameBits) {
  for (const ChannelRows& shape : kShapes) {
    SCOPED_TRACE(fmt::format("rows {} groups {} pixels {} lanes {}", shape.rows, shape.groups,
                             shape.pixels, shape.lanes));
    const int64_t count = shape.rows * shape.pixels * shape.lanes;
    const std::vector<float> x = values_of(count, -2.0f, 0.043f);
    std::vector<double> expected(static_cast<std::size_t>(shape.rows * shape.lanes), 0.0);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t row = i / (shape.pixels * shape.lanes), lane = i % shape.lanes;
      expected[row * shape.lanes + lane] += x[i];
    }
    std::vector<float> one(expected.size()), two(expected.size());
    global_average_loops(x.data(), one.data(), shape, 1);
    for (std::size_t i = 0; i < one.size(); ++i) {
      EXPECT_NEAR(one[i], expected[i] / static_cast<double>(shape.pixels), 1e-5) << i;
    }
    global_average_loops(x.data(), two.data(), shape, 2);
    EXPECT_TRUE(same_bits(one, two));
  }
}

TEST(ChannelLoops, GlobalAverageSplitsLargeInputsBetweenTwoThreadsWithTheSameBits) {
  // 40 rows of 16-channel blocks over 64 pixels (40,960 floats): past the threshold, so two
  // threads take 32 and 8 rows.
  const ChannelRows shape{40, 40, 64, 16};
  const std::vector<float> x = values_of(shape.rows * shape.pixels * shape.lanes, -1.0f, 0.021f);
  std::vector<float> one(shape.rows * shape.lanes), two(one.size());
  global_average_loops(x.data(), one.data(), shape, 1);
  global_average_loops(x.data(), two.data(), shape, 2);
  EXPECT_TRUE(same_bits(one, two));
  double sum = 0;
  for (int64_t pixel = 0; pixel < shape.pixels; ++pixel) sum += x[(39 * 64 + pixel) * 16 + 5];
  EXPECT_NEAR(one[39 * 16 + 5], sum / 64.0, 1e-5);
}

}  // namespace
}  // namespace cleave
