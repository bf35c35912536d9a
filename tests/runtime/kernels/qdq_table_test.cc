// com.cleave.ByteTable, as QDQ table fusion writes it, gives the bytes the elementwise chain it
// replaces gives, with the kernels each node of the chain runs on at full size.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/constant_folding.h"
#include "passes/dead_code.h"
#include "passes/qdq_fusion.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

// 16384 values: at oneDNN's size for every op of the chain (elementwise.h's kDnnlThreshold).
constexpr int64_t kChannels = 16, kSide = 32, kCount = kChannels * kSide * kSide;

std::string chain_graph(const std::string& type, const std::string& x_zero,
                        const std::string& y_zero, const std::string& chain) {
  return fmt::format(R"(graph main [ai.onnx=13] (%x: {0}[1,{1},{2},{2}]) {{
  @xs: f32[] = [0.0473]
  @xz: {0}[] = [{3}]
  @ys: f32[] = [0.0291]
  @yz: {0}[] = [{4}]
  @half: f32[] = [0.5]
  %xf = DequantizeLinear(%x, @xs, @xz)
{5}  %y = QuantizeLinear(%r, @ys, @yz)
  return %y
}}
)",
                     type, kChannels, kSide, x_zero, y_zero, chain);
}

// Every byte value many times over, in an order that is not the byte order.
Tensor every_byte(DataType type) {
  Tensor x = Tensor::allocate(type, {1, kChannels, kSide, kSide});
  auto* bytes = static_cast<uint8_t*>(x.raw());
  for (int64_t i = 0; i < kCount; ++i) bytes[i] = static_cast<uint8_t>(i * 37 + i / 256);
  return x;
}

std::vector<uint8_t> run(Graph graph, const Tensor& x, int threads) {
  ExecutorOptions options;
  options.threads = threads;
  Executor executor(graph, options);
  Tensor y = executor.run({{"x", x}}).at(0);
  const auto* bytes = static_cast<const uint8_t*>(y.raw());
  return {bytes, bytes + y.element_count() * static_cast<int64_t>(element_size(y.dtype()))};
}

void expect_table_equals_chain(const std::string& text, DataType type) {
  const Graph chain = parse_graph(text);
  Graph fused = parse_graph(text);
  ASSERT_EQ(fuse_qdq(fused).count("elementwise chains fused into com.cleave.ByteTable"), 1);
  fold_constants(fused);
  eliminate_dead_code(fused);
  ASSERT_EQ(fused.node_count(), 1u);
  const Tensor x = every_byte(type);
  const std::vector<uint8_t> expected = run(chain, x, 1);
  std::vector<int> seen(256, 0);
  for (uint8_t v : expected) seen[v] = 1;
  int distinct = 0;
  for (int v : seen) distinct += v;
  EXPECT_GT(distinct, 100);  // The map is not a few constants.
  for (int threads : {1, 2}) {
    const std::vector<uint8_t> got = run(fused, x, threads);
    ASSERT_EQ(got.size(), expected.size());
    int differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) differ += got[i] != expected[i];
    EXPECT_EQ(differ, 0) << threads << " thread(s)";
  }
}

TEST(QdqTable, SiluOfU8IsTheChainsBytes) {
  expect_table_equals_chain(
      chain_graph("u8", "113", "20", "  %s = Sigmoid(%xf)\n  %r = Mul(%xf, %s)\n"),
      DataType::kUInt8);
}

TEST(QdqTable, SiluOfI8IsTheChainsBytes) {
  expect_table_equals_chain(
      chain_graph("i8", "-15", "-100", "  %s = Sigmoid(%xf)\n  %r = Mul(%xf, %s)\n"),
      DataType::kInt8);
}

TEST(QdqTable, HardSwishAsHardSigmoidTimesXIsTheChainsBytes) {
  expect_table_equals_chain(chain_graph("u8", "128", "60",
                                        "  %h = HardSigmoid[alpha=0.16666667, beta=0.5](%xf)\n"
                                        "  %m = Mul(%xf, %h)\n  %r = Sub(%m, @half)\n"),
                            DataType::kUInt8);
}

TEST(QdqTable, SiluAsFloatsIsTheChainsFloats) {
  // The chain's float output read by an op outside it (the graph's output here): a table of
  // floats, the same bits.
  const std::string text = fmt::format(R"(graph main [ai.onnx=13] (%x: u8[1,{0},{1},{1}]) {{
  @xs: f32[] = [0.0473]
  @xz: u8[] = [113]
  %xf = DequantizeLinear(%x, @xs, @xz)
  %g = Sigmoid(%xf)
  %silu = Mul(%xf, %g)
  %y = Relu(%silu)
  return %silu
}}
)",
                                       kChannels, kSide);
  Graph fused = parse_graph(text);
  ASSERT_EQ(
      fuse_qdq(fused).count("elementwise chains of float outputs fused into com.cleave.ByteTable"),
      1);
  fold_constants(fused);
  eliminate_dead_code(fused);
  const Tensor x = every_byte(DataType::kUInt8);
  const std::vector<uint8_t> expected = run(parse_graph(text), x, 1);
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kCount) * sizeof(float));
  for (int threads : {1, 2}) {
    EXPECT_EQ(run(fused, x, threads), expected) << threads << " thread(s)";
  }
}

TEST(QdqTable, EachValueIsItsEntryPastWholeVectors) {
  // 40000 values (no multiple of 32, and 2 threads' halves neither) through a table of no
  // pattern: each output must be its value's entry, the vector steps' and the tail's alike.
  std::string entries;
  std::vector<uint8_t> table(256);
  for (int v = 0; v < 256; ++v) {
    table[v] = static_cast<uint8_t>((v * 101 + 57) ^ (v >> 3));
    entries += (v ? ", " : "") + std::to_string(table[v]);
  }
  const int64_t count = 40001;
  const Graph graph =
      parse_graph(fmt::format(R"(graph main [ai.onnx=13, com.cleave=1] (%x: u8[{}]) {{
  @t: u8[256] = [{}]
  %y = com.cleave.ByteTable(%x, @t)
  return %y
}}
)",
                              count, entries));
  Tensor x = Tensor::allocate(DataType::kUInt8, {count});
  auto* bytes = static_cast<uint8_t*>(x.raw());
  for (int64_t i = 0; i < count; ++i) bytes[i] = static_cast<uint8_t>((i * 7919) >> 3);
  for (int threads : {1, 2}) {
    const std::vector<uint8_t> got = run(graph, x, threads);
    ASSERT_EQ(static_cast<int64_t>(got.size()), count);
    int differ = 0;
    for (int64_t i = 0; i < count; ++i) differ += got[i] != table[bytes[i]];
    EXPECT_EQ(differ, 0) << threads << " thread(s)";
  }
}

TEST(QdqTable, ATableOfAnotherSizeIsAnErrorNamingTheNode) {
  std::string values = "0";
  for (int i = 1; i < 255; ++i) values += ", 0";
  Graph graph = parse_graph(R"(graph main [ai.onnx=13, com.cleave=1] (%x: u8[8]) {
  @t: u8[255] = [)" + values +
                            R"(]
  %y = "lookup" com.cleave.ByteTable(%x, @t)
  return %y
}
)");
  try {
    Executor executor(graph);
    executor.run({{"x", Tensor::allocate(DataType::kUInt8, {8})}});
    FAIL() << "a table of 255 values ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lookup"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cleave
