// Packing a large constant in slices, handing each slice's source pages back: the same packed
// bytes and the same outputs as packing it whole.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using dnnl::memory;

std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = value(generator);
  return values;
}

// A Gemm's weight as a classifier stores it ([columns, inner], read transposed) and the layout
// oneDNN's matmul packs it into for one row.
std::pair<memory::desc, memory::desc> transposed_weight_layouts(int64_t inner, int64_t columns) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc stored({inner, columns}, memory::data_type::f32, memory::dims{1, inner});
  const memory::desc any({inner, columns}, memory::data_type::f32, memory::format_tag::any);
  const dnnl::matmul::primitive_desc matmul(
      dnnl::matmul::desc(
          memory::desc({1, inner}, memory::data_type::f32, memory::format_tag::ab), any,
          memory::desc({1, columns}, memory::data_type::f32, memory::format_tag::ab)),
      engine);
  return {stored, matmul.weights_desc()};
}

struct Consumed {
  const std::byte* begin;
  std::size_t size;
};

TEST(SlicedPack, SameBytesAsOnePackAndEverySliceConsumedInOrder) {
  const int64_t inner = 1024, columns = 512;
  const auto [stored, packed_layout] = transposed_weight_layouts(inner, columns);
  const std::vector<float> weight = random_floats(inner * columns, 1);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::shared_ptr<Buffer> whole = pack_constant(weight.data(), stored, packed_layout, engine);
  std::vector<Consumed> consumed;
  const std::shared_ptr<Buffer> sliced =
      pack_constant_in_slices(weight.data(), stored, packed_layout, engine, 64 << 10,
                              [&](const std::byte* begin, std::size_t size) {
                                consumed.push_back({begin, size});
                              });
  ASSERT_EQ(sliced->size(), whole->size());
  EXPECT_EQ(std::memcmp(sliced->data(), whole->data(), whole->size()), 0);
  ASSERT_GT(consumed.size(), 1u) << "a 2 MiB weight in 64 KiB slices";
  const auto* next = reinterpret_cast<const std::byte*>(weight.data());
  for (const Consumed& slice : consumed) {
    EXPECT_EQ(slice.begin, next);
    next = slice.begin + slice.size;
  }
  EXPECT_EQ(next, reinterpret_cast<const std::byte*>(weight.data() + weight.size()));
}

TEST(SlicedPack, PaddedTargetIsPackedWhole) {
  // 1000 columns do not fill the packed layout's column blocks: its padding is written whole.
  const int64_t inner = 256, columns = 1000;
  const auto [stored, packed_layout] = transposed_weight_layouts(inner, columns);
  const std::vector<float> weight = random_floats(inner * columns, 2);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  if (packed_layout.data.padded_dims[1] == columns) GTEST_SKIP() << "no padding on this CPU";
  const std::shared_ptr<Buffer> whole = pack_constant(weight.data(), stored, packed_layout, engine);
  int calls = 0;
  const std::shared_ptr<Buffer> sliced =
      pack_constant_in_slices(weight.data(), stored, packed_layout, engine, 16 << 10,
                              [&](const std::byte*, std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(std::memcmp(sliced->data(), whole->data(), whole->size()), 0);
}

// A classifier's first Gemm, its weight (32 MiB, loaded) large enough to be packed in slices
// while its pages go back.
Graph large_gemm() {
  const int64_t inner = 2048, columns = 4096;
  Graph graph =
      parse_graph(fmt::format("graph main [ai.onnx=17] (%x: f32[1,{0}]) {{\n"
                              "  @w: f32[{1},{0}]\n"
                              "  %y = Gemm[transB=1](%x, @w)\n"
                              "  %z = Relu(%y)\n"
                              "  return %z\n}}",
                              inner, columns));
  const std::vector<float> values = random_floats(inner * columns, 3);
  auto bytes = std::make_shared<std::vector<std::byte>>(values.size() * sizeof(float));
  std::memcpy(bytes->data(), values.data(), bytes->size());
  graph.value(*graph.find_value("w")).initializer->bytes = std::move(bytes);
  return graph;
}

TEST(SlicedPack, ReleasingExecutorGivesTheSameOutputsRunAfterRun) {
  // Two loads of the same model: the reference keeps its own bytes.
  const Graph reference = large_gemm();
  Executor keeping(reference);
  Graph graph = large_gemm();
  const auto inputs = random_inputs(graph, 4);
  ExecutorOptions options;
  options.release_packed_weights = true;
  Executor releasing(graph, options);
  // The releasing executor's copy of the graph is then the only holder of the bytes, as in
  // `cleave run`: only then may their pages go while they are packed.
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  const std::size_t sliced_before = constant_bytes_packed_in_slices();
  for (int run = 0; run < 3; ++run)
    EXPECT_TRUE(bitwise_equal(releasing.run(inputs), keeping.run(inputs))) << "run " << run;
  EXPECT_EQ(releasing.stats().released_weight_bytes, 2048u * 4096 * sizeof(float));
  // Below AVX-512 the matmul runs as sgemm on rows padded by 16 floats (padded_sgemm_weights), a
  // target pack_constant_in_slices packs whole: there the two copies are still both whole for a
  // moment.
  if (!isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core))
    GTEST_SKIP() << "packed whole below AVX-512 (padded weights); outputs checked above";
  EXPECT_EQ(constant_bytes_packed_in_slices() - sliced_before, 2048u * 4096 * sizeof(float));
}

TEST(SlicedPack, SharedBytesArePackedWhole) {
  // Another load holding the same bytes (a layout measurement's executor) still reads them.
  Graph graph = large_gemm();
  const Graph sharing = graph;
  ExecutorOptions options;
  options.release_packed_weights = true;
  Executor releasing(graph, options);
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  const std::size_t sliced_before = constant_bytes_packed_in_slices();
  releasing.run(random_inputs(sharing, 5));
  EXPECT_EQ(constant_bytes_packed_in_slices(), sliced_before);
  const TensorData& kept = *sharing.value(*sharing.find_value("w")).initializer;
  EXPECT_EQ(kept.as<float>()[kept.element_count() / 2], random_floats(2048 * 4096, 3)[2048 * 2048]);
}

}  // namespace
}  // namespace cleave
