// One packed copy of a weight that several nodes read (a detector's head on each pyramid level),
// and none where products read their weights as loaded (pack_product_weights).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/random_inputs.h"
#include "text_numbers.h"

namespace cleave {
namespace {

// `readers` convolutions of one 3x3 weight @w, each on an input of its own.
Graph convolutions_sharing_a_weight(int readers) {
  std::string inputs, body, outputs;
  for (int r = 0; r < readers; ++r) {
    inputs += fmt::format("{}%x{}: f32[1,16,10,10]", r ? ", " : "", r);
    body += fmt::format("  %y{0} = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x{0}, @w)\n", r);
    outputs += fmt::format("{}%y{}", r ? ", " : "", r);
  }
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] ({}) {{\n  @w: f32[16,16,3,3] = [{}]\n{}"
                  "  return {}\n}}",
                  inputs, text_numbers(16 * 16 * 9, 1), body, outputs));
}

// Bytes of packed constants an executor of `graph` holds after a run.
std::size_t packed_bytes_after_a_run(const Graph& graph) {
  const std::size_t before = packed_constant_bytes();
  Executor executor(graph);
  executor.run(random_inputs(graph, 1));
  return packed_constant_bytes() - before;
}

TEST(SharedPackedWeights, ThreeReadersHoldOneCopy) {
  const std::size_t one = packed_bytes_after_a_run(convolutions_sharing_a_weight(1));
  ASSERT_GT(one, 0u) << "the Conv kernel packs its weight";
  EXPECT_EQ(packed_bytes_after_a_run(convolutions_sharing_a_weight(3)), one);
}

TEST(SharedPackedWeights, TheCopyGoesWithTheLastKernel) {
  const std::size_t before = packed_constant_bytes();
  { packed_bytes_after_a_run(convolutions_sharing_a_weight(2)); }
  EXPECT_EQ(packed_constant_bytes(), before);
}

TEST(SharedPackedWeights, OutputsEqualThoseOfUnsharedCopies) {
  const Graph shared = convolutions_sharing_a_weight(2);
  const Graph alone = convolutions_sharing_a_weight(1);
  auto inputs = random_inputs(shared, 7);
  Executor both(shared);
  Executor first(alone);
  const auto outputs = both.run(inputs);
  inputs.erase("x1");
  const auto reference = first.run(inputs);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(bitwise_equal({outputs[0]}, reference));
}

// A classifier's head: a Gemm of the weight as stored ([columns, inner], read transposed) and a
// MatMul of a weight as multiplied ([inner, columns]).
Graph products() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%x: f32[1,96]) {{\n"
                  "  @w: f32[80,96] = [{}]\n  @c: f32[80] = [{}]\n  @v: f32[80,24] = [{}]\n"
                  "  %h = Gemm[transB=1](%x, @w, @c)\n  %y = MatMul(%h, @v)\n  return %y\n}}",
                  text_numbers(80 * 96, 1), text_numbers(80, 2), text_numbers(80 * 24, 3)));
}

TEST(PackedProductWeights, ReadWhereTheyLieWhenPackingIsOff) {
  const Graph graph = products();
  const auto inputs = random_inputs(graph, 3);
  const std::size_t before = packed_constant_bytes();
  std::vector<Tensor> reference;
  {
    Executor packing(graph);
    reference = packing.run(inputs);
    ASSERT_GE(packed_constant_bytes() - before, (80u * 96 + 80 * 24) * sizeof(float))
        << "by default the Gemm and the MatMul pack their weights";
  }
  ASSERT_EQ(packed_constant_bytes(), before) << "the copies went with their kernels";
  ExecutorOptions options;
  options.pack_product_weights = false;
  Executor in_place(graph, options);
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> outputs = in_place.run(inputs);
    EXPECT_EQ(packed_constant_bytes(), before) << "no copy of either weight";
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].shape(), reference[0].shape());
    // Another kernel for the same products: equal up to the order of the sums.
    for (int64_t i = 0; i < outputs[0].element_count(); ++i) {
      const float want = reference[0].data<float>()[i];
      EXPECT_NEAR(outputs[0].data<float>()[i], want, 1e-5f * (1.0f + std::fabs(want))) << i;
    }
  }
}

}  // namespace
}  // namespace cleave
