// 8-bit MaxPool on oneDNN's pooling primitive and com.microsoft QLinearConcat, each held to a
// plain reference: a naive pool, and the DequantizeLinear → Concat → QuantizeLinear it replaces.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

struct PoolCase {
  int64_t channels = 3, size = 7, kernel = 3, stride = 2, pad = 0;
  bool ceil_mode = false;
};

int64_t pooled_size(const PoolCase& p) {
  const int64_t span = p.size + 2 * p.pad - p.kernel;
  return (p.ceil_mode ? (span + p.stride - 1) / p.stride : span / p.stride) + 1;
}

// Max of each window's elements inside the input (pads and ceil_mode's extra end never win).
std::vector<double> naive_max_pool(const std::vector<double>& x, const PoolCase& p) {
  const int64_t out = pooled_size(p);
  std::vector<double> y;
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int64_t r = 0; r < out; ++r) {
      for (int64_t q = 0; q < out; ++q) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = r * p.stride - p.pad; i < r * p.stride - p.pad + p.kernel; ++i) {
          for (int64_t j = q * p.stride - p.pad; j < q * p.stride - p.pad + p.kernel; ++j) {
            if (i < 0 || j < 0 || i >= p.size || j >= p.size) continue;
            best = std::max(best, x[static_cast<std::size_t>((c * p.size + i) * p.size + j)]);
          }
        }
        y.push_back(best);
      }
    }
  }
  return y;
}

struct PoolRun {
  std::vector<double> values;
  std::string implementation;
};

PoolRun run_max_pool(const char* type, DataType dtype, const std::vector<double>& x,
                     const PoolCase& p) {
  const std::string text = fmt::format(
      "graph g [ai.onnx=13] (%x: {0}[1,{1},{2},{2}]) {{\n"
      "  %y = MaxPool[kernel_shape=[{3},{3}], strides=[{4},{4}], pads=[{5},{5},{5},{5}], "
      "ceil_mode={6}](%x)\n  return %y\n}}",
      type, p.channels, p.size, p.kernel, p.stride, p.pad, p.ceil_mode ? 1 : 0);
  Graph graph = parse_graph(text);
  Executor executor(graph, {});
  std::vector<Tensor> out =
      executor.run({{"x", make_tensor(dtype, {1, p.channels, p.size, p.size}, x)}});
  EXPECT_EQ(out.at(0).dtype(), dtype);
  return {out.at(0).to_double_vector(),
          executor.stats().implementations[graph.value(*graph.find_value("y")).producer]};
}

TEST(Int8MaxPool, UnsignedPoolsOnOneDnnAsTheNaiveLoop) {
  PoolCase p;
  p.ceil_mode = true;  // squeezenet's pools: the last window hangs over the end.
  std::vector<double> x;
  for (int64_t i = 0; i < p.channels * p.size * p.size; ++i) x.push_back((i * 89 + 7) % 256);
  PoolRun run = run_max_pool("u8", DataType::kUInt8, x, p);
  EXPECT_EQ(run.values, naive_max_pool(x, p));
  EXPECT_NE(run.implementation.find(':'), std::string::npos) << run.implementation;
}

TEST(Int8MaxPool, SignedPadsNeverWinOverNegativeValues) {
  PoolCase p;
  p.pad = 1;
  std::vector<double> x;
  for (int64_t i = 0; i < p.channels * p.size * p.size; ++i) x.push_back(-1 - (i * 37) % 128);
  PoolRun run = run_max_pool("i8", DataType::kInt8, x, p);
  EXPECT_EQ(run.values, naive_max_pool(x, p));
}

// Concat of two u8 or i8 inputs along axis 1, a with the output's map and b with another one,
// as DequantizeLinear → Concat → QuantizeLinear (`fused` false) or as QLinearConcat.
std::string concat_graph(const char* type, bool fused) {
  const std::string body =
      fused ? "  %y = com.microsoft.QLinearConcat[axis=1](@ys, @yz, %a, @ys, @yz, %b, @bs, @bz)\n"
            : "  %af = DequantizeLinear(%a, @ys, @yz)\n"
              "  %bf = DequantizeLinear(%b, @bs, @bz)\n"
              "  %c = Concat[axis=1](%af, %bf)\n"
              "  %y = QuantizeLinear(%c, @ys, @yz)\n";
  return fmt::format(
      "graph g [ai.onnx=13, com.microsoft=1] (%a: {0}[2,12,1], %b: {0}[2,128,1]) {{\n"
      "  @ys: f32[] = [0.0371]\n  @yz: {0}[] = [5]\n"
      "  @bs: f32[] = [0.0123]\n  @bz: {0}[] = [{2}]\n{1}  return %y\n}}",
      type, body, type == std::string("u8") ? 250 : -7);
}

// Every byte value of b (two batches of 128) through both graphs.
std::vector<double> run_concat(const char* type, DataType dtype, bool fused) {
  std::vector<double> a, b;
  const double low = dtype == DataType::kInt8 ? -128 : 0;
  for (int64_t i = 0; i < 24; ++i) a.push_back(low + (i * 53) % 256);
  for (int64_t i = 0; i < 256; ++i) b.push_back(low + i);
  std::vector<Tensor> out = kernel_test::run_graph(
      concat_graph(type, fused),
      {{"a", make_tensor(dtype, {2, 12, 1}, a)}, {"b", make_tensor(dtype, {2, 128, 1}, b)}});
  EXPECT_EQ(out.at(0).shape(), (std::vector<int64_t>{2, 140, 1}));
  return out.at(0).to_double_vector();
}

TEST(QLinearConcat, UnsignedGivesTheBitsOfTheQdqConcat) {
  EXPECT_EQ(run_concat("u8", DataType::kUInt8, true), run_concat("u8", DataType::kUInt8, false));
}

TEST(QLinearConcat, SignedGivesTheBitsOfTheQdqConcat) {
  EXPECT_EQ(run_concat("i8", DataType::kInt8, true), run_concat("i8", DataType::kInt8, false));
}

// The kernel keeps a part's table across runs; a scale that is a graph input and changes
// between two runs of one executor must change it. b's 131 values per row (every byte once,
// then a tail shorter than the mapping loop's 8) against the QDQ graph at each scale.
TEST(QLinearConcat, AScaleThatChangesBetweenRunsMapsWithTheNewScale) {
  const std::string fused =
      "graph g [ai.onnx=13, com.microsoft=1] (%a: u8[2,12,1], %b: u8[2,131,1], %bs: f32[]) {\n"
      "  @ys: f32[] = [0.0371]\n  @yz: u8[] = [5]\n  @bz: u8[] = [250]\n"
      "  %y = com.microsoft.QLinearConcat[axis=1](@ys, @yz, %a, @ys, @yz, %b, %bs, @bz)\n"
      "  return %y\n}";
  std::vector<double> a, b;
  for (int64_t i = 0; i < 24; ++i) a.push_back((i * 53) % 256);
  for (int64_t i = 0; i < 2 * 131; ++i) b.push_back(i % 256);
  Graph graph = parse_graph(fused);
  Executor executor(graph, {});
  for (const char* scale : {"0.0123", "0.0517", "0.0123"}) {
    const std::string qdq = fmt::format(
        "graph g [ai.onnx=13] (%a: u8[2,12,1], %b: u8[2,131,1]) {{\n"
        "  @ys: f32[] = [0.0371]\n  @yz: u8[] = [5]\n  @bs: f32[] = [{}]\n  @bz: u8[] = [250]\n"
        "  %af = DequantizeLinear(%a, @ys, @yz)\n  %bf = DequantizeLinear(%b, @bs, @bz)\n"
        "  %c = Concat[axis=1](%af, %bf)\n  %y = QuantizeLinear(%c, @ys, @yz)\n  return %y\n}}",
        scale);
    const Tensor x_a = make_tensor(DataType::kUInt8, {2, 12, 1}, a);
    const Tensor x_b = make_tensor(DataType::kUInt8, {2, 131, 1}, b);
    const std::vector<Tensor> want = kernel_test::run_graph(qdq, {{"a", x_a}, {"b", x_b}});
    const std::vector<Tensor> got = executor.run(
        {{"a", x_a}, {"b", x_b}, {"bs", make_tensor(DataType::kFloat, {}, {std::stod(scale)})}});
    EXPECT_EQ(got.at(0).to_double_vector(), want.at(0).to_double_vector()) << "b's scale " << scale;
  }
}

// squeezenet's pooled concat: DequantizeLinear'd parts → Concat → MaxPool → QuantizeLinear
// (`fused` false), or QLinearConcat to the pool's map → u8 MaxPool, as QDQ fusion writes it.
std::vector<double> run_pooled_concat(bool fused) {
  const std::string body =
      fused ? "  %c = com.microsoft.QLinearConcat[axis=1](@ys, @yz, %a, @ys, @yz, %b, @bs, @bz)\n"
              "  %y = MaxPool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1](%c)\n"
            : "  %af = DequantizeLinear(%a, @ys, @yz)\n"
              "  %bf = DequantizeLinear(%b, @bs, @bz)\n"
              "  %c = Concat[axis=1](%af, %bf)\n"
              "  %p = MaxPool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1](%c)\n"
              "  %y = QuantizeLinear(%p, @ys, @yz)\n";
  const std::string text = fmt::format(
      "graph g [ai.onnx=13, com.microsoft=1] (%a: u8[1,2,6,6], %b: u8[1,3,6,6]) {{\n"
      "  @ys: f32[] = [0.0371]\n  @yz: u8[] = [5]\n"
      "  @bs: f32[] = [0.0123]\n  @bz: u8[] = [250]\n{}  return %y\n}}",
      body);
  std::vector<double> a, b;
  for (int64_t i = 0; i < 72; ++i) a.push_back((i * 53) % 256);
  for (int64_t i = 0; i < 108; ++i) b.push_back((i * 71 + 11) % 256);
  std::vector<Tensor> out =
      kernel_test::run_graph(text, {{"a", make_tensor(DataType::kUInt8, {1, 2, 6, 6}, a)},
                                    {"b", make_tensor(DataType::kUInt8, {1, 3, 6, 6}, b)}});
  return out.at(0).to_double_vector();
}

TEST(QLinearConcat, ThenPooledGivesTheBitsOfTheFloatPoolOfTheConcat) {
  EXPECT_EQ(run_pooled_concat(true), run_pooled_concat(false));
}

}  // namespace
}  // namespace cleave
