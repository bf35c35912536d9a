// A dilated convolution split into one 1x1 convolution per live tap computes what a naive
// convolution computes, and is taken where it should be.
#include "runtime/kernels/nn/dilated_taps.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/nn/conv_fallback.h"

namespace cleave {
namespace {

using conv_detail::ConvProblem;
using conv_detail::TapSplit;
using dnnl::memory;

struct Case {
  int64_t batch = 1, channels = 16, out_channels = 24, size = 14, kernel = 3, stride = 1,
          dilation = 12;
  std::vector<int64_t> pads = {12, 12, 12, 12};  // ONNX order: top, left, bottom, right.
  bool bias = true, relu = true;

  int64_t outputs(int axis) const {
    return (size + pads[axis] + pads[axis + 2] - dilation * (kernel - 1) - 1) / stride + 1;
  }
};

std::vector<float> values(int64_t count, int seed) {
  std::vector<float> result(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    result[i] = static_cast<float>((i * 37 + seed * 11) % 23) / 23.0f - 0.5f;
  return result;
}

ConvProblem problem(const Case& c) {
  ConvProblem p;
  p.batch = c.batch;
  p.channels_in = c.channels;
  p.channels_out = c.out_channels;
  p.kernel = {c.kernel, c.kernel};
  p.strides = {c.stride, c.stride};
  p.dilations = {c.dilation, c.dilation};
  p.pads_begin = {c.pads[0], c.pads[1]};
  p.pads_end = {c.pads[2], c.pads[3]};
  p.output_shape = {c.batch, c.out_channels, c.outputs(0), c.outputs(1)};
  p.user_weights = memory::desc({c.out_channels, c.channels, c.kernel, c.kernel},
                                memory::data_type::f32, memory::format_tag::oihw);
  return p;
}

// Naive NCHW convolution with bias and an optional ReLU.
std::vector<float> naive(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>& b) {
  const int64_t oh = c.outputs(0), ow = c.outputs(1), k = c.kernel;
  std::vector<float> y(static_cast<std::size_t>(c.batch * c.out_channels * oh * ow));
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t o = 0; o < c.out_channels; ++o) {
      for (int64_t r = 0; r < oh; ++r) {
        for (int64_t q = 0; q < ow; ++q) {
          double sum = c.bias ? b[o] : 0.0;
          for (int64_t i = 0; i < c.channels; ++i) {
            for (int64_t kr = 0; kr < k; ++kr) {
              for (int64_t kc = 0; kc < k; ++kc) {
                const int64_t row = r * c.stride - c.pads[0] + kr * c.dilation;
                const int64_t col = q * c.stride - c.pads[1] + kc * c.dilation;
                if (row < 0 || row >= c.size || col < 0 || col >= c.size) continue;
                sum += double(x[((n * c.channels + i) * c.size + row) * c.size + col]) *
                       w[((o * c.channels + i) * k + kr) * k + kc];
              }
            }
          }
          if (c.relu) sum = std::max(sum, 0.0);
          y[((n * c.out_channels + o) * oh + r) * ow + q] = static_cast<float>(sum);
        }
      }
    }
  }
  return y;
}

struct Split {
  std::optional<TapSplit> split;
  double max_error = 0;
};

// Splits the case's convolution of a plain input and runs it against the naive one.
Split run_split(const Case& c) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const ConvProblem p = problem(c);
  const std::vector<float> x = values(c.batch * c.channels * c.size * c.size, 1);
  const std::vector<float> w = values(c.out_channels * c.channels * c.kernel * c.kernel, 2);
  const std::vector<float> b = values(c.out_channels, 3);
  dnnl::post_ops ops;
  if (c.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  const memory::desc plain_in({c.batch, c.channels, c.size, c.size}, memory::data_type::f32,
                              memory::format_tag::nchw);
  const memory::desc plain_out({c.batch, c.out_channels, c.outputs(0), c.outputs(1)},
                               memory::data_type::f32, memory::format_tag::nchw);
  Split result;
  result.split = conv_detail::split_dilated_taps(engine, p, plain_in, w.data(), c.bias, ops);
  if (!result.split) return result;
  TapSplit& split = *result.split;
  std::vector<char> source(split.source().get_size()), destination(split.destination().get_size());
  LayoutReorder(plain_in, split.source(), engine).run(x.data(), source.data(), stream);
  split.run(source.data(), c.bias ? b.data() : nullptr, destination.data(), stream);
  std::vector<float> y(static_cast<std::size_t>(plain_out.get_size() / sizeof(float)));
  LayoutReorder(split.destination(), plain_out, engine).run(destination.data(), y.data(), stream);
  stream.wait();
  const std::vector<float> expected = naive(c, x, w, b);
  for (std::size_t i = 0; i < y.size(); ++i) {
    result.max_error = std::max(result.max_error, std::fabs(double(y[i]) - expected[i]));
  }
  return result;
}

constexpr double kTolerance = 1e-4;

TEST(DilatedTaps, DilationTwelveOnFourteenReadsTheMapWithEveryTapSomewhere) {
  Split s = run_split(Case{});
  ASSERT_TRUE(s.split);
  EXPECT_EQ(s.split->taps(), 9u);
  EXPECT_THAT(s.split->implementation(), testing::HasSubstr("in 9 dilated taps"));
  EXPECT_EQ(implementation_rank(s.split->implementation()), 2) << s.split->implementation();
  EXPECT_LT(s.max_error, kTolerance);
}

TEST(DilatedTaps, ADilationPastTheMapLeavesOnlyTheCentreTap) {
  Case c;
  c.dilation = 20;
  c.pads = {20, 20, 20, 20};
  Split s = run_split(c);
  ASSERT_TRUE(s.split);
  EXPECT_EQ(s.split->taps(), 1u);
  EXPECT_LT(s.max_error, kTolerance);
}

// Taps (0, *) read rows 0..1 only for the last output rows; the tap that covers every output
// starts one row in, so it gathers too.
TEST(DilatedTaps, StridedWithAsymmetricPads) {
  Case c;
  c.size = 13;
  c.stride = 2;
  c.dilation = 3;
  c.pads = {3, 3, 1, 1};
  Split s = run_split(c);
  ASSERT_TRUE(s.split);
  EXPECT_LT(s.max_error, kTolerance);
}

TEST(DilatedTaps, BatchOfTwoWithoutBiasOrActivation) {
  Case c;
  c.batch = 2;
  c.bias = false;
  c.relu = false;
  c.dilation = 4;
  c.pads = {4, 4, 4, 4};
  Split s = run_split(c);
  ASSERT_TRUE(s.split);
  EXPECT_EQ(s.split->taps(), 9u);
  EXPECT_LT(s.max_error, kTolerance);
}

TEST(DilatedTaps, ChannelsOffTheBlockGrid) {
  Case c;
  c.channels = 13;
  c.out_channels = 21;
  Split s = run_split(c);
  ASSERT_TRUE(s.split);
  EXPECT_LT(s.max_error, kTolerance);
}

// A 2x2 kernel of dilation 4 padded by 2 on a 4x4 map: each tap reads half the outputs' rows.
TEST(DilatedTaps, NoTapCoveringEveryOutputIsNotSplit) {
  Case c;
  c.size = 4;
  c.kernel = 2;
  c.dilation = 4;
  c.pads = {2, 2, 2, 2};
  EXPECT_FALSE(run_split(c).split);
}

TEST(DilatedTaps, AKernelOfMoreThanSixtyFourTapsIsNotSplit) {
  Case c;
  c.size = 20;
  c.kernel = 9;  // 81 taps.
  c.dilation = 2;
  c.pads = {8, 8, 8, 8};
  EXPECT_FALSE(run_split(c).split);
  c.kernel = 7;  // 49 taps.
  c.pads = {6, 6, 6, 6};
  Split s = run_split(c);
  ASSERT_TRUE(s.split);
  EXPECT_EQ(s.split->taps(), 49u);
  EXPECT_LT(s.max_error, kTolerance);
}

TEST(DilatedTaps, UndilatedIsNotSplit) {
  Case c;
  c.dilation = 1;
  c.pads = {1, 1, 1, 1};
  EXPECT_FALSE(run_split(c).split);
}

// Through the executor, any dilated convolution with a covering tap now runs on a jit kernel on
// either ISA: oneDNN's own, or the taps' 1x1 one where oneDNN would take gemm.
TEST(DilatedTaps, ExecutorRunsDilatedConvolutionsOnJitKernels) {
  for (auto [dilation, threads] : {std::pair{4, 1}, std::pair{12, 1}, std::pair{12, 2}}) {
    Case c;
    c.channels = 64;
    c.out_channels = 64;
    c.dilation = dilation;
    c.pads.assign(4, dilation);
    const std::vector<float> x = values(c.channels * c.size * c.size, 1);
    const std::vector<float> w = values(c.out_channels * c.channels * 9, 2);
    const std::vector<float> b = values(c.out_channels, 3);
    const std::string text = fmt::format(
        "graph main [ai.onnx=17] (%x: f32[1,{0},{1},{1}]) {{\n"
        "  @w: f32[{2},{0},3,3] = [{3}]\n"
        "  @b: f32[{2}] = [{4}]\n"
        "  %y = Conv[kernel_shape=[3,3], dilations=[{5},{5}], pads=[{5},{5},{5},{5}], "
        "activation=\"Relu\"](%x, @w, @b)\n"
        "  return %y\n}}",
        c.channels, c.size, c.out_channels, fmt::join(w, ","), fmt::join(b, ","), dilation);
    Graph graph = parse_graph(text);
    ExecutorOptions options;
    options.threads = threads;
    Executor executor(graph, options);
    Tensor input = Tensor::allocate(DataType::kFloat, {1, c.channels, c.size, c.size});
    std::copy(x.begin(), x.end(), input.data<float>());
    std::vector<Tensor> outputs = executor.run({{"x", input}});
    const std::vector<float> expected = naive(c, x, w, b);
    ASSERT_EQ(outputs.at(0).element_count(), static_cast<int64_t>(expected.size()));
    double error = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      error = std::max(error, std::fabs(double(outputs[0].data<float>()[i]) - expected[i]));
    }
    EXPECT_LT(error, kTolerance) << "dilation " << dilation << ", " << threads << " thread(s)";
    for (const std::string& implementation : executor.stats().implementations) {
      if (implementation.empty()) continue;
      EXPECT_EQ(implementation_rank(implementation), 2)
          << "dilation " << dilation << ": " << implementation;
    }
  }
}

}  // namespace
}  // namespace cleave
