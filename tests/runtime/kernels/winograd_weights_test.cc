// cleave's transform into oneDNN's Winograd weight layouts writes the bytes oneDNN's reorder does.
#include "runtime/kernels/winograd_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <vector>

namespace cleave {
namespace {

using dnnl::memory;

const dnnl::engine& cpu() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The weight layout oneDNN's Winograd convolution asks for on this problem, if it has one here
// (its Winograd kernels are AVX-512 code).
std::optional<memory::desc> winograd_layout(int64_t out, int64_t in, int64_t size, int64_t batch) {
  const auto any = memory::format_tag::any;
  const memory::desc src({batch, in, size, size}, memory::data_type::f32, any);
  const memory::desc wei({out, in, 3, 3}, memory::data_type::f32, any);
  const memory::desc dst({batch, out, size, size}, memory::data_type::f32, any);
  try {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_winograd, src, wei, dst,
                                         {1, 1}, {1, 1}, {1, 1});
    return dnnl::convolution_forward::primitive_desc(desc, cpu()).weights_desc();
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

std::vector<float> random_weights(int64_t out, int64_t in) {
  std::vector<float> w(static_cast<std::size_t>(out * in * 9));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (float& v : w) v = normal(rng);
  w[0] = -0.0f;  // a negative zero's products must round as oneDNN's do
  return w;
}

// Transforms random weights both ways; returns the Winograd format, expecting identical bytes.
int expect_same_bytes(int64_t out, int64_t in, int64_t size, int64_t batch) {
  const std::optional<memory::desc> to = winograd_layout(out, in, size, batch);
  if (!to) return -1;
  const memory::desc from({out, in, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  std::vector<float> w = random_weights(out, in);
  std::vector<char> theirs(to->get_size(), 1), ours(to->get_size(), 2);
  memory source(from, cpu(), w.data()), target(*to, cpu(), theirs.data());
  dnnl::stream stream(cpu());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  EXPECT_TRUE(transform_winograd_weights(w.data(), from, *to, ours.data()));
  EXPECT_EQ(std::memcmp(theirs.data(), ours.data(), theirs.size()), 0)
      << out << "x" << in << " weights for a " << size << "x" << size << " input, batch " << batch;
  return to->data.format_desc.wino_desc.wino_format;
}

#define SKIP_WITHOUT_WINOGRAD()                                          \
  if (!winograd_layout(16, 16, 14, 1))                                   \
  GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU (its " \
                  "kernels are AVX-512 code)"

TEST(WinogradWeights, TwoByThreeLayoutsMatchOneDnnBitForBit) {
  SKIP_WITHOUT_WINOGRAD();
  EXPECT_EQ(expect_same_bytes(64, 64, 56, 1), dnnl_wino_wei_aaOBiOo);
  EXPECT_EQ(expect_same_bytes(256, 256, 14, 1), dnnl_wino_wei_aaOio);
}

TEST(WinogradWeights, FourByThreeLayoutMatchesOneDnnBitForBit) {
  SKIP_WITHOUT_WINOGRAD();
  EXPECT_EQ(expect_same_bytes(256, 256, 80, 1), dnnl_wino_wei_OBaaIBOIio);
  EXPECT_EQ(expect_same_bytes(64, 64, 56, 8), dnnl_wino_wei_OBaaIBOIio);
}

TEST(WinogradWeights, PaddedChannelsMatchOneDnnBitForBit) {
  SKIP_WITHOUT_WINOGRAD();
  EXPECT_EQ(expect_same_bytes(5, 3, 20, 1), dnnl_wino_wei_aaOBiOo);
  EXPECT_EQ(expect_same_bytes(100, 30, 64, 4), dnnl_wino_wei_OBaaIBOIio);
}

TEST(WinogradWeights, LeavesOtherLayoutsToTheReorder) {
  const memory::desc from({16, 16, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  const memory::desc blocked({16, 16, 3, 3}, memory::data_type::f32,
                             memory::format_tag::OIhw16i16o);
  std::vector<float> w = random_weights(16, 16);
  std::vector<float> out(w.size(), 3.0f);
  EXPECT_FALSE(transform_winograd_weights(w.data(), from, blocked, out.data()));
  EXPECT_EQ(out, std::vector<float>(w.size(), 3.0f));
}

TEST(WinogradWeights, LeavesOtherSourceLayoutsToTheReorder) {
  SKIP_WITHOUT_WINOGRAD();
  const std::optional<memory::desc> to = winograd_layout(16, 16, 14, 1);
  const memory::desc hwio({16, 16, 3, 3}, memory::data_type::f32, memory::format_tag::hwio);
  std::vector<float> w = random_weights(16, 16);
  std::vector<char> out(to->get_size(), 3);
  EXPECT_FALSE(transform_winograd_weights(w.data(), hwio, *to, out.data()));
  EXPECT_EQ(out, std::vector<char>(to->get_size(), 3));
}

}  // namespace
}  // namespace cleave
