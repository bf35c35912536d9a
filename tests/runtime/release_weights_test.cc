// Freeing loaded weights that the kernels keep packed: the same outputs, and only weights no
// kernel reads again go.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "kernels/kernel_test_util.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/random_inputs.h"
#include "text_numbers.h"

namespace cleave {
namespace {

// @w and @k are convolution weights, which the Conv kernel packs; @b is a bias it reads at every
// run, and the Add reads @k too.
Graph two_convolutions() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%x: f32[1,8,6,6]) {{\n"
                  "  @w: f32[8,8,3,3] = [{}]\n"
                  "  @b: f32[8] = [{}]\n"
                  "  @k: f32[8,8,1,1] = [{}]\n"
                  "  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w, @b)\n"
                  "  %c = Conv[kernel_shape=[1,1]](%a, @k)\n"
                  "  %d = Add(%c, @k)\n"
                  "  return %d\n}}",
                  text_numbers(8 * 8 * 9, 1), text_numbers(8, 2), text_numbers(64, 3)));
}

std::weak_ptr<const std::vector<std::byte>> bytes_of(const Graph& graph, const std::string& name) {
  return graph.value(*graph.find_value(name)).initializer->bytes;
}

TEST(ReleasePackedWeights, OutputsStayTheSameRunAfterRun) {
  const Graph graph = two_convolutions();
  const auto inputs = random_inputs(graph, 3);
  Executor keeping(graph);
  ExecutorOptions options;
  options.release_packed_weights = true;
  Executor releasing(graph, options);
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(bitwise_equal(releasing.run(inputs), keeping.run(inputs))) << "run " << run;
}

TEST(ReleasePackedWeights, OnlyWeightsEveryReaderKeepsPackedGo) {
  Graph graph = two_convolutions();
  const auto w = bytes_of(graph, "w"), b = bytes_of(graph, "b"), k = bytes_of(graph, "k");
  ExecutorOptions options;
  options.release_packed_weights = true;
  Executor executor(graph, options);
  // The executor's copy of the graph is the only one left holding the bytes.
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  EXPECT_FALSE(w.expired());
  executor.run(random_inputs(graph, 4));
  EXPECT_TRUE(w.expired());
  EXPECT_FALSE(b.expired()) << "the bias is read at every run";
  EXPECT_FALSE(k.expired()) << "the Add reads @k at every run";
  EXPECT_EQ(executor.stats().released_weight_bytes, 8u * 8 * 9 * sizeof(float));
}

TEST(ReleasePackedWeights, NothingGoesByDefault) {
  Graph graph = two_convolutions();
  const auto w = bytes_of(graph, "w");
  Executor executor(graph);
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  executor.run(random_inputs(graph, 4));
  EXPECT_FALSE(w.expired());
  EXPECT_EQ(executor.stats().released_weight_bytes, 0u);
}

// An int8 convolution (oneDNN's kernel) with 1,152 bytes of int8 weights and a per-channel
// scale: the kernel runs from its packed copy.
Graph int8_convolution() {
  std::vector<int> weights(16 * 8 * 9);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<int>(i % 7) - 3;
  return parse_graph(fmt::format(
      "graph main [ai.onnx=13] (%x: u8[1,8,6,6]) {{\n"
      "  @xs: f32[] = [0.5]\n"
      "  @xz: u8[] = [3]\n"
      "  @w: i8[16,8,3,3] = [{}]\n"
      "  @ws: f32[16] = [{}]\n"
      "  @wz: i8[] = [0]\n"
      "  @ys: f32[] = [0.25]\n"
      "  @yz: u8[] = [1]\n"
      "  %y = QLinearConv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @xs, @xz, @w, @ws, @wz, "
      "@ys, @yz)\n"
      "  return %y\n}}",
      fmt::join(weights, ", "), text_numbers(16, 5)));
}

// Runs `graph` twice with release_packed_weights, its loaded bytes dropped once the executor
// holds them, against `expected`; the int8 weights "w" must be gone and the scales "ws" kept.
// Returns the run's stats.
RunStats released_int8_runs(Graph& graph, const std::map<std::string, Tensor>& inputs,
                            const std::vector<Tensor>& expected) {
  const auto w = bytes_of(graph, "w"), scales = bytes_of(graph, "ws");
  ExecutorOptions options;
  options.release_packed_weights = true;
  Executor releasing(graph, options);
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  for (int run = 0; run < 2; ++run)
    EXPECT_TRUE(bitwise_equal(releasing.run(inputs), expected)) << "run " << run;
  EXPECT_TRUE(w.expired()) << "the int8 weights are held once, packed";
  EXPECT_FALSE(scales.expired()) << "the scales are read at every run";
  return releasing.stats();
}

TEST(ReleasePackedWeights, AnInt8ConvolutionsWeightsGoOncePacked) {
  if (!quantize_detail::dnnl_int8_products_exact())
    GTEST_SKIP() << "oneDNN's int8 kernels are not used on this CPU (no VNNI)";
  Graph graph = int8_convolution();
  const auto inputs = random_inputs(graph, 6);
  const auto expected = Executor(int8_convolution()).run(inputs);
  EXPECT_EQ(released_int8_runs(graph, inputs, expected).released_weight_bytes, 16u * 8 * 9);
}

// The exact f32 route (CLEAVE_INT8_F32) runs from the f32 copy it packed: the loaded int8
// weights go as they do for oneDNN's int8 kernel, and the outputs stay the int8 loops' bits.
TEST(ReleasePackedWeights, TheF32RoutesInt8WeightsGoOncePacked) {
  Graph graph = int8_convolution();
  const auto inputs = random_inputs(graph, 7);
  const auto expected = [&] {
    kernel_test::ScopedEnvironment int8("CLEAVE_INT8_F32", "never");
    return Executor(int8_convolution()).run(inputs);
  }();
  kernel_test::ScopedEnvironment route("CLEAVE_INT8_F32", "always");
  const RunStats stats = released_int8_runs(graph, inputs, expected);
  EXPECT_EQ(stats.released_weight_bytes, 16u * 8 * 9);
  const std::string& implementation = stats.implementations[0];
  EXPECT_NE(implementation.find("int8 as exact f32"), std::string::npos) << implementation;
}

}  // namespace
}  // namespace cleave
