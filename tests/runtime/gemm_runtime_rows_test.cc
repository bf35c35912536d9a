// A Gemm/MatMul whose row count is known only at run time keeps one packed copy of its weights:
// prepared again for each new row count, it gives the reference values and the loaded weights go.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "text_numbers.h"

namespace cleave {
namespace {

constexpr int64_t kInner = 64, kColumns = 48;

// %x has N rows, known only at run time; @w (transposed, as a classifier's head stores it) and
// the bias @c are packed or read by the Gemm.
Graph runtime_rows_gemm() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%x: f32[N,{1}]) {{\n"
                  "  @w: f32[{0},{1}] = [{2}]\n"
                  "  @c: f32[{0}] = [{3}]\n"
                  "  %y = Gemm[transB=1](%x, @w, @c)\n"
                  "  return %y\n}}",
                  kColumns, kInner, text_numbers(kColumns * kInner, 1), text_numbers(kColumns, 2)));
}

// The same product as a MatMul of a 3-D A (its rows stacked) and an added bias.
Graph runtime_rows_matmul() {
  return parse_graph(
      fmt::format("graph main [ai.onnx=17] (%x: f32[2,N,{0}]) {{\n"
                  "  @w: f32[{0},{1}] = [{2}]\n"
                  "  %y = MatMul(%x, @w)\n"
                  "  return %y\n}}",
                  kInner, kColumns, text_numbers(kColumns * kInner, 3)));
}

std::vector<float> floats_of(const Graph& graph, const std::string& name) {
  const TensorData& data = *graph.value(*graph.find_value(name)).initializer;
  std::vector<float> values(data.bytes->size() / sizeof(float));
  std::memcpy(values.data(), data.bytes->data(), data.bytes->size());
  return values;
}

Tensor rows_input(std::vector<int64_t> shape) {
  Tensor x = Tensor::allocate(DataType::kFloat, shape);
  float* values = x.data<float>();
  for (int64_t i = 0; i < x.element_count(); ++i)
    values[i] = static_cast<float>((i * 7 % 19) / 19.0 - 0.5);
  return x;
}

// Row r, column j of x times w (w given [columns, inner] when `transposed`), plus bias[j].
std::vector<float> reference(const Tensor& x, const std::vector<float>& w, bool transposed,
                             const std::vector<float>& bias) {
  const int64_t rows = x.element_count() / kInner;
  const float* a = x.data<float>();
  std::vector<float> out(static_cast<std::size_t>(rows * kColumns));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < kColumns; ++j) {
      double sum = bias.empty() ? 0.0 : bias[j];
      for (int64_t k = 0; k < kInner; ++k)
        sum += double{a[r * kInner + k]} * (transposed ? w[j * kInner + k] : w[k * kColumns + j]);
      out[r * kColumns + j] = static_cast<float>(sum);
    }
  }
  return out;
}

void expect_near(const Tensor& actual, const std::vector<float>& expected, int64_t rows) {
  ASSERT_EQ(actual.element_count(), static_cast<int64_t>(expected.size())) << rows << " rows";
  const float* values = actual.data<float>();
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(values[i], expected[i], 1e-4) << "element " << i << " of " << rows << " rows";
}

ExecutorOptions releasing() {
  ExecutorOptions options;
  options.release_packed_weights = true;
  return options;
}

TEST(GemmRuntimeRows, NewRowCountsGiveReferenceValues) {
  const Graph graph = runtime_rows_gemm();
  const std::vector<float> w = floats_of(graph, "w"), c = floats_of(graph, "c");
  Executor executor(graph, releasing());
  for (int64_t rows : {3, 17, 1, 3}) {
    const Tensor x = rows_input({rows, kInner});
    const std::vector<Tensor> outputs = executor.run({{"x", x}});
    expect_near(outputs.at(0), reference(x, w, true, c), rows);
  }
}

TEST(GemmRuntimeRows, LoadedWeightsGoAfterTheFirstPacking) {
  Graph graph = runtime_rows_gemm();
  std::weak_ptr<const std::vector<std::byte>> w =
      graph.value(*graph.find_value("w")).initializer->bytes;
  Executor executor(graph, releasing());
  // The executor's copy of the graph is the only one left holding the bytes.
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
  executor.run({{"x", rows_input({5, kInner})}});
  EXPECT_TRUE(w.expired());
  EXPECT_EQ(executor.stats().released_weight_bytes,
            static_cast<std::size_t>(kColumns * kInner) * sizeof(float));
  const std::size_t packed = packed_constant_bytes();
  executor.run({{"x", rows_input({9, kInner})}});
  EXPECT_EQ(packed_constant_bytes(), packed) << "prepared again, it packs no second copy";
}

TEST(GemmRuntimeRows, ExecutorsSharingOnePackEachPrepareAgain) {
  const Graph graph = runtime_rows_gemm();
  const std::vector<float> w = floats_of(graph, "w"), c = floats_of(graph, "c");
  // Their copies of the graph share the loaded bytes, so the second takes the first's pack.
  Executor first(graph, releasing()), second(graph, releasing());
  for (int64_t rows : {5, 9}) {
    const Tensor x = rows_input({rows, kInner});
    expect_near(first.run({{"x", x}}).at(0), reference(x, w, true, c), rows);
    expect_near(second.run({{"x", x}}).at(0), reference(x, w, true, c), rows);
  }
  EXPECT_EQ(second.stats().released_weight_bytes,
            static_cast<std::size_t>(kColumns * kInner) * sizeof(float));
}

TEST(GemmRuntimeRows, MatMulOfStackedRowsKeepsOneCopy) {
  const Graph graph = runtime_rows_matmul();
  const std::vector<float> w = floats_of(graph, "w");
  Executor executor(graph, releasing());
  for (int64_t rows : {4, 11}) {
    const Tensor x = rows_input({2, rows, kInner});
    const std::vector<Tensor> outputs = executor.run({{"x", x}});
    expect_near(outputs.at(0), reference(x, w, false, {}), rows);
  }
  EXPECT_EQ(executor.stats().released_weight_bytes,
            static_cast<std::size_t>(kColumns * kInner) * sizeof(float));
}

}  // namespace
}  // namespace cleave
