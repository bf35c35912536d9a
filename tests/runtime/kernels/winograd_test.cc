// cleave's own Winograd F(2x2, 3x3) on 8-channel blocks: what a direct convolution computes,
// with its epilogue and zero padding lanes, and the same bits whatever the threads.
#include "runtime/kernels/nn/winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/claim_pool.h"

namespace cleave::conv_detail {
namespace {

bool cpu_has_avx2_fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#define SKIP_WITHOUT_AVX2()                                \
  if (!cpu_has_avx2_fma())                                 \
  GTEST_SKIP() << "needs AVX2 and FMA (cleave's Winograd " \
                  "kernel is AVX2 code)"

struct Case {
  WinogradProblem p;
  int64_t pad_bottom = 1, pad_right = 1;
};

Case make_case(int64_t batch, int64_t in, int64_t out, int64_t height, int64_t width, int64_t pad) {
  Case c;
  c.p.batch = batch;
  c.p.channels_in = in;
  c.p.channels_out = out;
  c.p.height = height;
  c.p.width = width;
  c.p.pad_top = c.p.pad_left = c.pad_bottom = c.pad_right = pad;
  c.p.out_height = height + 2 * pad - 2;
  c.p.out_width = width + 2 * pad - 2;
  return c;
}

std::vector<float> values(std::size_t count, int seed) {
  std::vector<float> result(count);
  for (std::size_t i = 0; i < count; ++i)
    result[i] = static_cast<float>((i * 37 + seed * 11) % 23) / 23.0f - 0.5f;
  return result;
}

int64_t blocks(int64_t channels) {
  return (channels + 7) / 8;
}

// Plain [n][c][h][w] into nChw8c with zero padding lanes.
std::vector<float> to_blocked(const std::vector<float>& plain, int64_t n, int64_t c, int64_t h,
                              int64_t w) {
  std::vector<float> out(static_cast<std::size_t>(n * blocks(c) * 8 * h * w), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t at = 0; at < h * w; ++at)
        out[(((i * blocks(c) + ch / 8) * h * w) + at) * 8 + ch % 8] =
            plain[(i * c + ch) * h * w + at];
  return out;
}

// Direct convolution in double, plain layouts, plus bias.
std::vector<double> direct(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>& bias) {
  const WinogradProblem& p = c.p;
  std::vector<double> y(
      static_cast<std::size_t>(p.batch * p.channels_out * p.out_height * p.out_width));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t o = 0; o < p.channels_out; ++o)
      for (int64_t oy = 0; oy < p.out_height; ++oy)
        for (int64_t ox = 0; ox < p.out_width; ++ox) {
          double sum = bias[o];
          for (int64_t i = 0; i < p.channels_in; ++i)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy - p.pad_top + ky, ix = ox - p.pad_left + kx;
                if (iy < 0 || iy >= p.height || ix < 0 || ix >= p.width) continue;
                sum += static_cast<double>(
                           x[((n * p.channels_in + i) * p.height + iy) * p.width + ix]) *
                       w[((o * p.channels_in + i) * 3 + ky) * 3 + kx];
              }
          y[((n * p.channels_out + o) * p.out_height + oy) * p.out_width + ox] = sum;
        }
  return y;
}

struct Data {
  std::vector<float> x, w, bias, blocked_x;
};

Data inputs_for(const Case& c) {
  const WinogradProblem& p = c.p;
  Data r;
  r.x = values(static_cast<std::size_t>(p.batch * p.channels_in * p.height * p.width), 1);
  r.w = values(static_cast<std::size_t>(p.channels_out * p.channels_in * 9), 2);
  r.bias = values(static_cast<std::size_t>(p.channels_out), 3);
  r.blocked_x = to_blocked(r.x, p.batch, p.channels_in, p.height, p.width);
  return r;
}

std::vector<float> output_buffer(const WinogradProblem& p, float fill) {
  return std::vector<float>(
      static_cast<std::size_t>(p.batch * blocks(p.channels_out) * 8 * p.out_height * p.out_width),
      fill);
}

float blocked_at(const std::vector<float>& y, const WinogradProblem& p, int64_t n, int64_t o,
                 int64_t at) {
  return y[(((n * blocks(p.channels_out) + o / 8) * p.out_height * p.out_width) + at) * 8 + o % 8];
}

TEST(OwnWinograd, MatchesADirectConvolution) {
  SKIP_WITHOUT_AVX2();
  // Whole and partial blocks, odd sizes (half tiles), no padding, two images, several chunks,
  // fewer tiles than the micro-kernel's 6 rows.
  for (const Case& c :
       {make_case(1, 16, 32, 12, 12, 1), make_case(2, 5, 11, 7, 9, 1), make_case(1, 8, 16, 6, 5, 0),
        make_case(1, 64, 64, 20, 20, 1), make_case(1, 24, 16, 3, 3, 1)}) {
    const WinogradProblem& p = c.p;
    SCOPED_TRACE(testing::Message() << p.batch << "x" << p.channels_in << "->" << p.channels_out
                                    << " at " << p.height << "x" << p.width);
    const Data r = inputs_for(c);
    OwnWinograd winograd(p, r.w.data(), WinogradEpilogue{});
    std::vector<float> y = output_buffer(p, -7.0f);
    winograd.run(r.blocked_x.data(), r.bias.data(), y.data(), 1, nullptr);
    const std::vector<double> want = direct(c, r.x, r.w, r.bias);
    for (int64_t n = 0; n < p.batch; ++n)
      for (int64_t o = 0; o < blocks(p.channels_out) * 8; ++o)
        for (int64_t at = 0; at < p.out_height * p.out_width; ++at) {
          const float got = blocked_at(y, p, n, o, at);
          if (o >= p.channels_out) {
            ASSERT_EQ(got, 0.0f) << "padding lane " << o;
            continue;
          }
          const double expected = want[(n * p.channels_out + o) * p.out_height * p.out_width + at];
          ASSERT_NEAR(got, expected, 1e-5 * (1.0 + std::abs(expected)))
              << "image " << n << " channel " << o << " at " << at;
        }
  }
}

TEST(OwnWinograd, AddsTheOldDestinationThenClamps) {
  SKIP_WITHOUT_AVX2();
  const Case c = make_case(1, 12, 11, 9, 9, 1);
  const WinogradProblem& p = c.p;
  const Data r = inputs_for(c);
  WinogradEpilogue epilogue;
  epilogue.accumulate = true;
  epilogue.low = 0.25f;  // Above zero: padding lanes must still come out zero.
  epilogue.high = 1.0f;
  OwnWinograd winograd(p, r.w.data(), epilogue);
  const std::vector<float> old = values(output_buffer(p, 0).size(), 4);
  std::vector<float> y = old;
  winograd.run(r.blocked_x.data(), r.bias.data(), y.data(), 1, nullptr);
  const std::vector<double> conv = direct(c, r.x, r.w, r.bias);
  int clamped_low = 0, clamped_high = 0;
  for (int64_t o = 0; o < 16; ++o)
    for (int64_t at = 0; at < p.out_height * p.out_width; ++at) {
      const float got = blocked_at(y, p, 0, o, at);
      if (o >= p.channels_out) {
        ASSERT_EQ(got, 0.0f) << "padding lane " << o;
        continue;
      }
      const double sum = conv[o * p.out_height * p.out_width + at] + blocked_at(old, p, 0, o, at);
      const double expected = std::clamp(sum, 0.25, 1.0);
      clamped_low += expected == 0.25;
      clamped_high += expected == 1.0;
      ASSERT_NEAR(got, expected, 1e-5 * (1.0 + std::abs(expected))) << o << " at " << at;
    }
  EXPECT_GT(clamped_low, 0);
  EXPECT_GT(clamped_high, 0);
}

// Chunks shared by OpenMP threads, by a claim pool, or (too few chunks) each chunk's work
// shared: the same bits as one thread.
TEST(OwnWinograd, SameBitsWhateverTheThreads) {
  SKIP_WITHOUT_AVX2();
  for (const Case& c : {make_case(2, 64, 64, 20, 20, 1), make_case(1, 64, 48, 8, 8, 1)}) {
    const WinogradProblem& p = c.p;
    const Data r = inputs_for(c);
    OwnWinograd winograd(p, r.w.data(), WinogradEpilogue{});
    SCOPED_TRACE(testing::Message() << (p.out_height * p.out_width + 3) / 4 << " tiles, "
                                    << winograd.tiles_per_chunk() << " per chunk");
    std::vector<float> one = output_buffer(p, 0), two = one, claimed = one;
    winograd.run(r.blocked_x.data(), r.bias.data(), one.data(), 1, nullptr);
    winograd.run(r.blocked_x.data(), r.bias.data(), two.data(), 2, nullptr);
    ClaimPool pool(2);
    winograd.run(r.blocked_x.data(), r.bias.data(), claimed.data(), 1, &pool);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(one.data(), claimed.data(), one.size() * sizeof(float)), 0);
  }
}

TEST(OwnWinograd, TransformedWeightsAreSixteenNinthsPadded) {
  const Case c = make_case(1, 5, 20, 8, 8, 1);
  const Data r = inputs_for(c);
  OwnWinograd winograd(c.p, r.w.data(), WinogradEpilogue{});
  // 5 input channels pad to 8, 20 output channels to 32: 16 points of 8 x 32 floats.
  EXPECT_EQ(winograd.weight_bytes(), 16u * 8 * 32 * sizeof(float));
}

}  // namespace
}  // namespace cleave::conv_detail
