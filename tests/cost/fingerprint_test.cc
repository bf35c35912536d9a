// graph_fingerprint: the cache key of a model's layouts, profiles and plans, over every weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "ir/graph.h"

namespace cleave {
namespace {

// 1,001 floats: 125 whole 32-byte blocks and a 4-byte tail.
Graph one_weight(float last) {
  std::vector<float> values(1001);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  values.back() = last;
  Graph graph;
  graph.add_initializer("w", TensorData::from(DataType::kFloat, {1001}, values));
  return graph;
}

// The weight's last element sits in the tail no whole block reaches.
TEST(GraphFingerprint, TellsApartWeightsThatDifferInTheirLastByte) {
  EXPECT_EQ(graph_fingerprint(one_weight(1.0f)), graph_fingerprint(one_weight(1.0f)));
  EXPECT_NE(graph_fingerprint(one_weight(1.0f)), graph_fingerprint(one_weight(-1.0f)));
}

// A weight read from its file in pieces of any size (a plan of unread weights) hashes as the
// whole: pieces that end inside a block carry over.
TEST(GraphFingerprint, WeightsGivenInOddPiecesHashAsWhole) {
  const Graph whole = one_weight(3.0f);
  Graph unread = whole;
  const ValueId w = *unread.find_value("w");
  const auto bytes = unread.value(w).initializer->bytes;
  unread.value(w).initializer->bytes.reset();
  const std::string pieces = graph_fingerprint(unread, [&](ValueId, const auto& add) {
    for (std::size_t at = 0; at < bytes->size(); at += 7)
      add(bytes->data() + at, std::min<std::size_t>(7, bytes->size() - at));
  });
  EXPECT_EQ(pieces, graph_fingerprint(whole));
}

}  // namespace
}  // namespace cleave
