// The split of s8 weights into halves whose products cannot saturate, and the requantization
// of int32 sums (vectorised) against ONNX's definition, element by element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/math/split_weights.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

TEST(SplitWeights, HalvesRebuildEveryWeightWithinTheirRanges) {
  std::vector<double> all;
  for (int w = -128; w <= 127; ++w) all.push_back(w);
  const Tensor weights = make_tensor(DataType::kInt8, {256}, all);
  const auto [high, low] = quantize_detail::split_weights(weights);
  ASSERT_EQ(high.shape(), weights.shape());
  for (int i = 0; i < 256; ++i) {
    const int h = high.data<int8_t>()[i], l = low.data<int8_t>()[i];
    EXPECT_EQ(16 * h + l, i - 128);
    EXPECT_GE(h, -8);
    EXPECT_LE(h, 7);
    EXPECT_GE(l, 0);
    EXPECT_LE(l, 15);
    // The largest pair of u8 x half products oneDNN's int16 sums may see.
    EXPECT_LE(255 * 2 * std::max(std::abs(h), l), std::numeric_limits<int16_t>::max());
  }
}

// ONNX's requantization of one sum: round half to even, add the zero point, saturate.
template <typename T>
T expected(int32_t sum, float multiplier, int32_t zero) {
  const float rounded = std::nearbyint(static_cast<float>(sum) * multiplier);
  const float value = rounded + static_cast<float>(zero);
  if (!(value >= std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (value >= std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

// Sums with ties (x.5 after the multiplier 0.5), both saturation ends and huge values, per
// channel multipliers, written from an offset into the whole output (as one thread's share);
// with a bias, bias[channel] added to each sum first. 19 channels: runs of 8 (AVX2) and a tail.
template <typename T>
void expect_requantized_as_onnx_says(DataType type, int64_t channel_stride, int32_t zero,
                                     int64_t channels = 7, bool with_bias = false) {
  const int64_t count = 3 * channels * std::max<int64_t>(channel_stride, 5);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> small(-600, 600), offset(-2000, 2000);
  std::vector<int32_t> sums(static_cast<std::size_t>(count)), bias;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i] = i % 11 == 0 ? (i % 2 ? 2000000000 : -2000000000) : small(rng);
  }
  if (with_bias) {
    for (int64_t c = 0; c < channels; ++c) bias.push_back(offset(rng));
  }
  quantize_detail::Requantize r;
  r.zero_point = zero;
  r.type = type;
  const std::vector<float> seven = {0.5f, 1.0f, 0.25f, 0.013f, 3.0f, 0.5f, 1e-3f};
  for (int64_t c = 0; c < channels; ++c) r.multipliers.push_back(seven[c % 7]);
  for (int64_t first : {int64_t{0}, int64_t{5}, int64_t{13}}) {
    std::vector<T> out(static_cast<std::size_t>(count - first));
    quantize_detail::write_requantized(r, sums.data() + first, count - first, channels,
                                       channel_stride, out.data(), first,
                                       with_bias ? bias.data() : nullptr);
    int differing = 0;
    for (int64_t i = first; i < count; ++i) {
      const auto channel = static_cast<std::size_t>((i / channel_stride) % channels);
      const int32_t sum = sums[static_cast<std::size_t>(i)] + (with_bias ? bias[channel] : 0);
      differing += out[static_cast<std::size_t>(i - first)] !=
                   expected<T>(sum, r.multipliers[channel], zero);
    }
    EXPECT_EQ(differing, 0) << "first " << first << " stride " << channel_stride;
  }
}

TEST(Requantize, ChannelsLastU8MatchesOnnx) {
  expect_requantized_as_onnx_says<uint8_t>(DataType::kUInt8, 1, 3);
}

TEST(Requantize, PlainU8MatchesOnnx) {
  expect_requantized_as_onnx_says<uint8_t>(DataType::kUInt8, 9, 128);
}

TEST(Requantize, PlainI8MatchesOnnx) {
  expect_requantized_as_onnx_says<int8_t>(DataType::kInt8, 6, -5);
}

TEST(Requantize, ChannelsLastI8MatchesOnnx) {
  expect_requantized_as_onnx_says<int8_t>(DataType::kInt8, 1, 0);
}

TEST(Requantize, ChannelsLastRunsOfEightWithBiasMatchOnnx) {
  expect_requantized_as_onnx_says<uint8_t>(DataType::kUInt8, 1, 3, 19, true);
  expect_requantized_as_onnx_says<int8_t>(DataType::kInt8, 1, -7, 19, true);
}

TEST(Requantize, PlainRunsOfEightWithBiasMatchOnnx) {
  expect_requantized_as_onnx_says<uint8_t>(DataType::kUInt8, 21, 128, 19, true);
  expect_requantized_as_onnx_says<int8_t>(DataType::kInt8, 21, 0, 19, true);
}

}  // namespace
}  // namespace cleave
