// The sequential executor with claim_threads (a host with no core free): large convolutions run
// in parts its threads claim, and the outputs are those of one thread, bit for bit; large
// matrix products run in row parts, the same run after run and close to one thread's.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "text_numbers.h"

namespace cleave {
namespace {

// A 3x3 convolution of 64 into 64 channels at 28x28 (58 million flops, split in 4 where its
// kernel is blocked: 8 blocks on AVX2) and a 1x1 one of 64 into 24 (2 million, whole), with a
// ReLU between.
Graph large_then_small() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%x: f32[1,64,28,28]) {{\n"
                  "  @w: f32[64,64,3,3] = [{}]\n"
                  "  @b: f32[64] = [{}]\n"
                  "  @k: f32[24,64,1,1] = [{}]\n"
                  "  %a = \"large\" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w, @b)\n"
                  "  %r = Relu(%a)\n"
                  "  %c = Conv[kernel_shape=[1,1]](%r, @k)\n"
                  "  return %c\n}}",
                  text_numbers(64 * 64 * 9, 1), text_numbers(64, 2), text_numbers(24 * 64, 3)));
}

// A run on a host with no core free: 2 threads claim the parts, and loaded weights are freed
// (the parts keep packed copies of their own).
ExecutorOptions claiming_two() {
  ExecutorOptions options;
  options.claim_threads = 2;
  options.release_packed_weights = true;
  return options;
}

TEST(ClaimedParts, OutputsEqualOneThreadRunAfterRun) {
  const Graph graph = large_then_small();
  const auto inputs = random_inputs(graph, 5);
  Executor single(graph);
  Executor claimed(graph, claiming_two());
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(bitwise_equal(claimed.run(inputs), single.run(inputs))) << "run " << run;
  omp_set_num_threads(2);  // The executors set 1 on this thread.
}

// Claimed parts are cut from a whole kernel on native channel blocks (oneDNN's jit
// convolutions, and every AVX2 one). Where oneDNN 2.6 picks brgconv for the whole (AVX-512),
// parts of another kernel would not give one thread's output bit for bit, so the convolution
// runs whole: the expectation follows the kernel chosen.
TEST(ClaimedParts, OnlyTheLargeConvolutionIsSplit) {
  const Graph graph = large_then_small();
  ExecutorOptions options;
  options.claim_threads = 2;
  Executor claimed(graph, options);
  claimed.run(random_inputs(graph, 5));
  omp_set_num_threads(2);
  const std::vector<std::string> implementations = claimed.stats().implementations;
  const std::string listed = fmt::format("{}", fmt::join(implementations, "; "));
  std::vector<std::string> split;
  for (const std::string& implementation : implementations) {
    if (implementation.find("claimed") != std::string::npos) split.push_back(implementation);
  }
  const std::string& large = implementations.at(graph.find_node("large").value());
  if (large.starts_with("brgconv")) {
    EXPECT_TRUE(split.empty()) << listed;
    return;
  }
  ASSERT_EQ(split.size(), 1u) << listed;
  EXPECT_THAT(split[0], testing::EndsWith("in 4 parts claimed by 2 threads"));
  EXPECT_EQ(split[0], large);
}

// A Gemm reading A transposed with a C of a row per output row (21 million flops), and a
// MatMul with a fused bias and ReLU (the MatMul epilogue fusion's form).
Graph large_products() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%a: f32[128,256], %c: f32[256,320]) {{\n"
                  "  @w: f32[128,320] = [{}]\n"
                  "  @v: f32[320,128] = [{}]\n"
                  "  @b: f32[128] = [{}]\n"
                  "  %g = Gemm[transA=1](%a, @w, %c)\n"
                  "  %m = MatMul[activation=\"Relu\"](%g, @v, @b)\n"
                  "  return %g, %m\n}}",
                  text_numbers(128 * 320, 4), text_numbers(320 * 128, 5), text_numbers(128, 6)));
}

TEST(ClaimedParts, MatrixProductsRunInRowPartsCloseToOneThread) {
  const Graph graph = large_products();
  const auto inputs = random_inputs(graph, 7);
  Executor single(graph);
  Executor claimed(graph, claiming_two());
  const std::vector<Tensor> first = claimed.run(inputs);
  EXPECT_TRUE(bitwise_equal(claimed.run(inputs), first));
  const std::vector<Tensor> want = single.run(inputs);
  omp_set_num_threads(2);
  int split = 0;
  for (const std::string& implementation : claimed.stats().implementations) {
    split += implementation.find("in 4 row parts claimed by 2 threads") != std::string::npos;
  }
  EXPECT_EQ(split, 2);
  ASSERT_EQ(first.size(), want.size());
  for (std::size_t output = 0; output < want.size(); ++output) {
    const auto expected = want[output].values<float>();
    const auto actual = first[output].values<float>();
    ASSERT_EQ(expected.size(), actual.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(actual[i], expected[i], 1e-4f * (1.0f + std::abs(expected[i])))
          << "output " << output << " at " << i;
  }
}

}  // namespace
}  // namespace cleave
