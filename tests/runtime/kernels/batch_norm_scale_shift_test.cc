// A lone inference BatchNormalization as a per-channel scale and shift: layouts, Relu, teams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "run_kernel.h"
#include "runtime/kernels/nn/batch_norm_scale_shift.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using Tag = dnnl::memory::format_tag;

constexpr int64_t kChannels = 20;  // Blocks of 16 and 8 pad them to 32 and 24.
constexpr float kEpsilon = 1e-3f;

std::string graph_text(const std::vector<int64_t>& shape, bool relu) {
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  const std::string c = std::to_string(kChannels);
  return "graph g (%x: f32[" + dims + "], %s: f32[" + c + "], %b: f32[" + c + "], %m: f32[" + c +
         "], %v: f32[" + c + "]) {\n  %y = BatchNormalization[epsilon=0.001" +
         (relu ? ", activation=\"Relu\"" : "") + "](%x, %s, %b, %m, %v)\n  return %y\n}";
}

// Per-channel parameters with negative scales, so that the Relu clamps some channels whole.
struct Parameters {
  Tensor scale, bias, mean, variance;
  Parameters() {
    std::vector<double> s(kChannels), b(kChannels), m(kChannels), v(kChannels);
    for (int64_t c = 0; c < kChannels; ++c) {
      s[c] = (c % 3 == 0 ? -1.0 : 1.0) * (0.5 + 0.1 * c);
      b[c] = -0.3 + 0.05 * c;
      m[c] = 0.2 * (c % 5) - 0.4;
      v[c] = 0.25 + 0.3 * (c % 7);
    }
    scale = floats({kChannels}, s);
    bias = floats({kChannels}, b);
    mean = floats({kChannels}, m);
    variance = floats({kChannels}, v);
  }
};

Tensor input_of(const std::vector<int64_t>& shape) {
  const int64_t count = volume(shape);
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = std::sin(0.37 * static_cast<double>(i)) * 3.0;
  return floats(shape, values);
}

// (x - mean) / sqrt(variance + epsilon) * scale + bias in doubles, channel axis 1.
std::vector<double> reference(const Tensor& x, const Parameters& p, bool relu) {
  const std::vector<double> in = x.to_double_vector();
  const int64_t inner = x.element_count() / (x.dim(0) * kChannels);
  std::vector<double> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<std::size_t>((static_cast<int64_t>(i) / inner) % kChannels);
    const double v = (in[i] - p.mean.data<float>()[c]) /
                         std::sqrt(static_cast<double>(p.variance.data<float>()[c]) + kEpsilon) *
                         p.scale.data<float>()[c] +
                     p.bias.data<float>()[c];
    out[i] = relu ? std::max(v, 0.0) : v;
  }
  return out;
}

bool is_scale_shift(const Kernel& kernel) {
  return kernel.implementation().rfind("cleave_scale_shift:", 0) == 0;
}

struct LayoutCase {
  const char* name;
  bool blocked;
  Tag tag;
  int64_t block;  // Channel block of the layout; 0 for channels-last.
};

void PrintTo(const LayoutCase& c, std::ostream* out) {
  *out << c.name;
}

class ScaleShiftLayouts : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(ScaleShiftLayouts, MatchesTheReferenceKeepsTheLayoutAndPaddingAndTeamsAgree) {
  const LayoutCase& layout = GetParam();
  // 2 x 20 x 32 x 32: past the loops' threshold for a second thread in every layout.
  const std::vector<int64_t> shape = {2, kChannels, 32, 32};
  const Parameters p;
  const Tensor plain = input_of(shape);
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "no relu");
    DirectKernel direct(graph_text(shape, relu));
    const Tensor x = layout.blocked ? direct.blocked(plain, layout.tag) : plain;
    const std::vector<const Tensor*> inputs = {&x, &p.scale, &p.bias, &p.mean, &p.variance};
    std::vector<std::vector<std::byte>> bytes;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(threads);
      auto kernel = direct.prepare(inputs, {false, true, true, true, true}, true, threads);
      EXPECT_TRUE(is_scale_shift(*kernel)) << kernel->implementation();
      const std::optional<dnnl::memory::desc> out_layout = kernel->output_specs().at(0).layout;
      ASSERT_EQ(out_layout.has_value(), layout.blocked);
      if (layout.blocked) {
        EXPECT_TRUE(*out_layout == *x.layout());
      }
      const Tensor y = direct.run_in_layout(*kernel, inputs);
      const std::size_t size = out_layout ? out_layout->get_size() : y.element_count() * 4;
      bytes.emplace_back(size);
      std::memcpy(bytes.back().data(), y.raw(), size);
      if (layout.block > 1) {
        // Padding channels (20..31 of 16-blocks, 20..23 of 8-blocks) hold 0 as they came.
        const int64_t groups = (kChannels + layout.block - 1) / layout.block;
        const float* raw = static_cast<const float*>(y.raw());
        int64_t nonzero = 0;
        for (int64_t unit = 0; unit < shape[0] * groups * 32 * 32; ++unit) {
          const int64_t group = (unit / (32 * 32)) % groups;
          for (int64_t lane = 0; lane < layout.block; ++lane) {
            if (group * layout.block + lane >= kChannels)
              nonzero += raw[unit * layout.block + lane] != 0;
          }
        }
        EXPECT_EQ(nonzero, 0) << "padding channels must stay 0";
      }
      expect_values(direct.run(*kernel, inputs), reference(plain, p, relu), 1e-5);
    }
    EXPECT_TRUE(bytes[0] == bytes[1]) << "1 and 2 threads must give the same bits";
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, ScaleShiftLayouts,
                         ::testing::Values(LayoutCase{"plain", false, Tag::nchw, 1},
                                           LayoutCase{"nChw16c", true, Tag::nChw16c, 16},
                                           LayoutCase{"nChw8c", true, Tag::nChw8c, 8},
                                           LayoutCase{"nChw4c", true, Tag::nChw4c, 4},
                                           LayoutCase{"nhwc", true, Tag::nhwc, 0}),
                         [](const ::testing::TestParamInfo<LayoutCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(ScaleShiftBatchNorm, BlockedInputGivesPlainOutputWhereConsumersNeedIt) {
  const std::vector<int64_t> shape = {1, kChannels, 5, 7};
  const Parameters p;
  const Tensor plain = input_of(shape);
  DirectKernel direct(graph_text(shape, true));
  const Tensor x = direct.blocked(plain);
  const std::vector<const Tensor*> inputs = {&x, &p.scale, &p.bias, &p.mean, &p.variance};
  auto kernel = direct.prepare(inputs, {false, true, true, true, true}, false);
  EXPECT_TRUE(is_scale_shift(*kernel)) << kernel->implementation();
  EXPECT_FALSE(kernel->output_specs().at(0).layout.has_value());
  expect_values(direct.run_in_layout(*kernel, inputs), reference(plain, p, true), 1e-5);
}

TEST(ScaleShiftBatchNorm, TwoDimensionalInputIsChannelsInnermost) {
  const std::vector<int64_t> shape = {3, kChannels};
  const Parameters p;
  const Tensor x = input_of(shape);
  DirectKernel direct(graph_text(shape, false));
  const std::vector<const Tensor*> inputs = {&x, &p.scale, &p.bias, &p.mean, &p.variance};
  auto kernel = direct.prepare(inputs, {false, true, true, true, true}, true);
  EXPECT_TRUE(is_scale_shift(*kernel)) << kernel->implementation();
  expect_values(direct.run(*kernel, inputs), reference(x, p, false), 1e-5);
}

TEST(ScaleShiftBatchNorm, StatisticsComputedAtRunTimeKeepOneDnn) {
  const std::vector<int64_t> shape = {1, kChannels, 4, 4};
  const Parameters p;
  const Tensor plain = input_of(shape);
  for (std::size_t varying = 1; varying <= 4; ++varying) {
    SCOPED_TRACE(varying);
    DirectKernel direct(graph_text(shape, true));
    const Tensor x = direct.blocked(plain);
    const std::vector<const Tensor*> inputs = {&x, &p.scale, &p.bias, &p.mean, &p.variance};
    std::vector<bool> constant = {false, true, true, true, true};
    constant[varying] = false;
    auto kernel = direct.prepare(inputs, constant, true);
    EXPECT_FALSE(is_scale_shift(*kernel)) << kernel->implementation();
    expect_values(direct.run(*kernel, inputs), reference(plain, p, true), 1e-5);
  }
}

TEST(ScaleShiftBatchNorm, WrongParameterLengthIsAnErrorNamingTheNode) {
  const std::vector<int64_t> shape = {1, kChannels, 2, 2};
  const Parameters p;
  const Tensor x = input_of(shape);
  const Tensor short_mean = floats({kChannels - 1}, std::vector<double>(kChannels - 1, 0.0));
  DirectKernel direct(graph_text(shape, false));
  const std::vector<const Tensor*> inputs = {&x, &p.scale, &p.bias, &short_mean, &p.variance};
  try {
    direct.prepare(inputs, {false, true, true, true, true}, true);
    ADD_FAILURE() << "a mean of 19 values for 20 channels was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("BatchNormalization"), std::string::npos) << message;
    EXPECT_NE(message.find("expected 20 values"), std::string::npos) << message;
  }
}

TEST(ScaleShiftLoops, PlainRowsShareOneScaleAcrossTheirPixels) {
  // Two rows (channels 0 and 1 of one image) of three pixels.
  const std::vector<float> x = {1, 2, 3, -1, -2, -3};
  const std::vector<float> scale = {2, -1}, shift = {0.5f, 1};
  std::vector<float> out(6);
  scale_shift_loops(x.data(), out.data(), scale.data(), shift.data(), ChannelRows{2, 2, 3, 1},
                    false, 1);
  EXPECT_EQ(out, (std::vector<float>{2.5f, 4.5f, 6.5f, 2, 3, 4}));
  scale_shift_loops(x.data(), out.data(), scale.data(), shift.data(), ChannelRows{2, 2, 3, 1}, true,
                    1);
  EXPECT_EQ(out, (std::vector<float>{2.5f, 4.5f, 6.5f, 2, 3, 4}));
  const std::vector<float> negative_shift = {-5, -2.5f};
  scale_shift_loops(x.data(), out.data(), scale.data(), negative_shift.data(),
                    ChannelRows{2, 2, 3, 1}, true, 1);
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 0, 0, 0.5f}));
}

}  // namespace
}  // namespace cleave
