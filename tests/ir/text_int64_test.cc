// The text form keeps every bit of an int64: INT64_MAX (a Slice's "to the end") reads back as
// itself, not through a double.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>

#include "ir/text.h"

namespace cleave {
namespace {

TEST(TextInt64, TensorLiteralKeepsTheExtremes) {
  const Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2]) {
  %k = Constant[value=tensor<i64[3]>[9223372036854775807, -9223372036854775808, 9007199254740993]]()
  %y = Identity(%x)
  return %y, %k
})");
  const Node& node = graph.node(graph.value(*graph.find_value("k")).producer);
  const TensorData& value = node.attribute("value")->t;
  int64_t numbers[3];
  std::memcpy(numbers, value.bytes->data(), sizeof(numbers));
  EXPECT_EQ(numbers[0], INT64_MAX);
  EXPECT_EQ(numbers[1], INT64_MIN);
  EXPECT_EQ(numbers[2], int64_t{9007199254740993});  // 2^53 + 1: no double holds it.
}

TEST(TextInt64, IntAttributesKeepTheExtremes) {
  const Graph graph = parse_graph(R"(graph g [ai.onnx=9] (%x: f32[4]) {
  %y = Slice[axes=[0], ends=[9223372036854775807], starts=[1]](%x)
  return %y
})");
  const Node& node = graph.node(graph.value(*graph.find_value("y")).producer);
  EXPECT_EQ(node.ints_attribute("ends"), (std::vector<int64_t>{INT64_MAX}));
  EXPECT_EQ(print_graph(parse_graph(print_graph(graph, INT_MAX)), INT_MAX),
            print_graph(graph, INT_MAX));
}

}  // namespace
}  // namespace cleave
