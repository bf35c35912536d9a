// Convolutions oneDNN would run with its reference kernel (dilated, few channels per group) take
// a faster path, and compute what a naive convolution computes.
#include "runtime/kernels/nn/conv_fallback.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

struct ConvShape {
  int64_t channels = 16, size = 12, groups = 1, stride = 1, dilation = 1;
  std::vector<int64_t> pads = {1, 1, 1, 1};  // ONNX order: top, left, bottom, right.
};

std::vector<float> values(int64_t count, int seed) {
  std::vector<float> result(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    result[i] = static_cast<float>((i * 37 + seed * 11) % 23) / 23.0f - 0.5f;
  return result;
}

// Naive grouped, strided, dilated, padded 2-D convolution of one image, no bias.
std::vector<float> naive_conv(const std::vector<float>& x, int64_t channels, int64_t size,
                              const std::vector<float>& w, int64_t out_channels, int64_t kernel,
                              const ConvShape& s, int64_t* out_size) {
  const int64_t extent = (kernel - 1) * s.dilation + 1;
  const int64_t out = (size + s.pads[0] + s.pads[2] - extent) / s.stride + 1;
  const int64_t out_w = (size + s.pads[1] + s.pads[3] - extent) / s.stride + 1;
  EXPECT_EQ(out, out_w) << "the tests use square outputs";
  *out_size = out;
  const int64_t in_per_group = channels / s.groups, out_per_group = out_channels / s.groups;
  std::vector<float> y(static_cast<std::size_t>(out_channels * out * out), 0.0f);
  for (int64_t o = 0; o < out_channels; ++o) {
    const int64_t g = o / out_per_group;
    for (int64_t r = 0; r < out; ++r) {
      for (int64_t c = 0; c < out; ++c) {
        double sum = 0;
        for (int64_t i = 0; i < in_per_group; ++i) {
          for (int64_t kr = 0; kr < kernel; ++kr) {
            for (int64_t kc = 0; kc < kernel; ++kc) {
              const int64_t row = r * s.stride - s.pads[0] + kr * s.dilation;
              const int64_t col = c * s.stride - s.pads[1] + kc * s.dilation;
              if (row < 0 || row >= size || col < 0 || col >= size) continue;
              sum += x[((g * in_per_group + i) * size + row) * size + col] *
                     w[((o * in_per_group + i) * kernel + kr) * kernel + kc];
            }
          }
        }
        y[(o * out + r) * out + c] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

std::string floats(const std::vector<float>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

struct Result {
  std::string implementation;
  double max_error = 0;
};

// A 1x1 convolution (so the tested one gets a blocked input, as inside a network) followed by
// the 3x3 convolution under test; its output against the naive one.
Result run_case(const ConvShape& s, int threads = 1) {
  const int64_t c = s.channels;
  std::vector<float> x = values(c * s.size * s.size, 1);
  std::vector<float> w1 = values(c * c, 2);
  std::vector<float> w2 = values(c * (c / s.groups) * 9, 3);
  std::string text = fmt::format(
      "graph main [ai.onnx=17] (%x: f32[1,{0},{1},{1}]) {{\n"
      "  @w1: f32[{0},{0},1,1] = [{2}]\n"
      "  @w2: f32[{0},{3},3,3] = [{4}]\n"
      "  %a = Conv[kernel_shape=[1,1]](%x, @w1)\n"
      "  %y = Conv[kernel_shape=[3,3], group={5}, strides=[{6},{6}], dilations=[{7},{7}], "
      "pads=[{8}]](%a, @w2)\n"
      "  return %y\n}}",
      c, s.size, floats(w1), c / s.groups, floats(w2), s.groups, s.stride, s.dilation,
      fmt::join(s.pads, ","));
  Graph graph = parse_graph(text);
  ExecutorOptions options;
  options.threads = threads;
  Executor executor(graph, options);
  Tensor input = Tensor::allocate(DataType::kFloat, {1, c, s.size, s.size});
  std::copy(x.begin(), x.end(), input.data<float>());
  std::vector<Tensor> outputs = executor.run({{"x", input}});

  int64_t size = 0;
  ConvShape pointwise;
  pointwise.pads = {0, 0, 0, 0};
  std::vector<float> a = naive_conv(x, c, s.size, w1, c, 1, pointwise, &size);
  int64_t out = 0;
  std::vector<float> expected = naive_conv(a, c, s.size, w2, c, 3, s, &out);
  Result result;
  result.implementation =
      executor.stats().implementations[graph.value(*graph.find_value("y")).producer];
  EXPECT_EQ(outputs.at(0).shape(), (std::vector<int64_t>{1, c, out, out}));
  if (outputs.at(0).element_count() != static_cast<int64_t>(expected.size())) return result;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    result.max_error =
        std::max(result.max_error, std::fabs(double(outputs[0].data<float>()[i]) - expected[i]));
  }
  return result;
}

constexpr double kTolerance = 1e-3;

TEST(ConvFallback, DilationTwoStrideOne) {
  ConvShape s;
  s.dilation = 2;
  s.pads = {2, 2, 2, 2};
  Result r = run_case(s);
  EXPECT_LT(r.max_error, kTolerance);
  EXPECT_GE(implementation_rank(r.implementation), 1) << r.implementation;
}

TEST(ConvFallback, DilationThreeStrideTwoAsymmetricPads) {
  ConvShape s;
  s.dilation = 3;
  s.stride = 2;
  s.size = 13;
  s.pads = {3, 3, 1, 1};
  Result r = run_case(s);
  EXPECT_LT(r.max_error, kTolerance);
  EXPECT_GE(implementation_rank(r.implementation), 1) << r.implementation;
}

// On AVX2 oneDNN 2.6 has no jit kernel for this dilation on blocked inputs: it was ref:any.
TEST(ConvFallback, DilationFourIsNeverTheReferenceKernel) {
  ConvShape s;
  s.channels = 32;
  s.size = 14;
  s.dilation = 4;
  s.pads = {4, 4, 4, 4};
  for (int threads : {1, 2}) {
    Result r = run_case(s, threads);
    EXPECT_LT(r.max_error, kTolerance);
    EXPECT_GE(implementation_rank(r.implementation), 1) << r.implementation;
  }
}

// 4 channels per group: a jit kernel on both ISAs (on AVX2 with two groups merged into one).
TEST(ConvFallback, FourChannelsPerGroupRunJit) {
  ConvShape s;
  s.channels = 32;
  s.groups = 8;
  Result r = run_case(s);
  EXPECT_LT(r.max_error, kTolerance);
  EXPECT_EQ(implementation_rank(r.implementation), 2) << r.implementation;
}

// 2 channels per group: oneDNN's AVX-512 jit kernel takes them but runs them slowly, and
// AVX2 has none; on both, four groups merged into one of 8 channels.
TEST(ConvFallback, TwoChannelsPerGroupRunAsGroupsOfEight) {
  ConvShape s;
  s.channels = 32;
  s.groups = 16;
  Result r = run_case(s);
  EXPECT_LT(r.max_error, kTolerance);
  EXPECT_EQ(implementation_rank(r.implementation), 2) << r.implementation;
  EXPECT_THAT(r.implementation, testing::HasSubstr("groups merged by 4"));
}

TEST(ConvFallback, ThreeChannelsPerGroupWithDilationAndStride) {
  ConvShape s;
  s.channels = 48;
  s.groups = 16;
  s.dilation = 2;
  s.stride = 2;
  s.size = 13;
  s.pads = {2, 2, 1, 1};
  Result r = run_case(s);
  EXPECT_LT(r.max_error, kTolerance);
  EXPECT_GE(implementation_rank(r.implementation), 1) << r.implementation;
}

TEST(ConvFallback, RanksReferenceBelowGemmBelowJit) {
  EXPECT_EQ(implementation_rank("ref:any"), 0);
  EXPECT_EQ(implementation_rank("x64:gemm:jit"), 1);
  EXPECT_EQ(implementation_rank("jit:avx2"), 2);
  EXPECT_EQ(implementation_rank("brgconv:avx512_core"), 2);
  EXPECT_EQ(implementation_rank("jit_dw:avx2 in 2 channel parts"), 2);
}

TEST(GroupMerges, FillEightThenSixteenChannelBlocks) {
  std::vector<GroupMerge> merges = group_merges(32, 4, 4);
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges[0].factor, 2);  // 8 channels.
  EXPECT_EQ(merges[1].factor, 4);  // 16 channels.
}

TEST(GroupMerges, NoneForDepthwiseUngroupedOrTooMuchExtraWork) {
  EXPECT_TRUE(group_merges(64, 1, 1).empty());
  EXPECT_TRUE(group_merges(1, 64, 64).empty());
  EXPECT_TRUE(group_merges(16, 3, 3).empty());  // 8 times the arithmetic.
  EXPECT_TRUE(group_merges(3, 4, 4).empty());   // 2 does not divide 3 groups.
}

TEST(GroupMerges, WeightsAreBlockDiagonal) {
  // 2 groups of 1 output and 2 input channels, 1x1 kernel, merged into one group.
  std::vector<float> weights = {1, 2, 3, 4};
  std::vector<float> merged = merged_group_weights(weights.data(), 2, 1, 2, 1, GroupMerge{2});
  EXPECT_EQ(merged, (std::vector<float>{1, 2, 0, 0, 0, 0, 3, 4}));
}

}  // namespace
}  // namespace cleave
