// Rewritten weights recorded as how to make them: made from the file's weights when asked.
#include "passes/deferred_weights.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/dead_tap_removal.h"
#include "passes/pass.h"

namespace cleave {
namespace {

// A Conv over a 1x1 map: only the centre of its 3x3 kernel reads the input. Its weights have
// no bytes (left in the file).
const char* kCentreOnly = R"(graph g [ai.onnx=13] (%x: f32[1,2,1,1]) {
  @w: f32[2,2,3,3]
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})";

// The weights of kCentreOnly as the file holds them: element i is i.
TensorData file_weights() {
  std::vector<float> values(36);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return TensorData::from(DataType::kFloat, {2, 2, 3, 3}, values);
}

TEST(DeferredWeights, ACutKernelIsMadeFromTheFileWeightOnlyWhenAsked) {
  Graph graph = parse_graph(kCentreOnly);
  DeferredWeights deferred;
  std::map<std::string, int> reads;
  const FileWeightReader read = [&](const std::string& name) {
    ++reads[name];
    return file_weights();
  };
  EXPECT_EQ(remove_dead_taps(graph).count("Conv kernels shrunk"), 1);
  EXPECT_TRUE(reads.empty());
  const Value& w = graph.value(*graph.find_value("w"));
  EXPECT_FALSE(w.initializer->has_data());
  EXPECT_EQ(w.initializer->dims, (std::vector<int64_t>{2, 2, 1, 1}));
  ASSERT_EQ(deferred.names(), std::vector<std::string>{"w"});
  const std::optional<TensorData> made = deferred.bytes_of("w", read);
  ASSERT_TRUE(made);
  EXPECT_EQ(reads, (std::map<std::string, int>{{"w", 1}}));
  // The centre tap (index 4) of each of the four 3x3 kernels.
  const auto values = made->as<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), (std::vector<float>{4, 13, 22, 31}));
}

TEST(DeferredWeights, WithNoneOpenAPassNeedsTheBytesAsBefore) {
  Graph graph = parse_graph(kCentreOnly);
  const std::size_t before = unread_weight_needs().size();
  EXPECT_EQ(remove_dead_taps(graph).count("Conv kernels shrunk"), 1);
  ASSERT_EQ(unread_weight_needs().size(), before + 1);
  EXPECT_EQ(unread_weight_needs().back(), "w");
}

TEST(DeferredWeights, ARewriteOfARewriteMakesBothInTurn) {
  Graph graph = parse_graph(kCentreOnly);
  DeferredWeights deferred;
  remove_dead_taps(graph);
  const ValueId w = *graph.find_value("w");
  const auto doubled = defer_rewrite(graph, {w}, [](const std::vector<TensorData>& in) {
    std::vector<float> values(in[0].as<float>().begin(), in[0].as<float>().end());
    for (float& value : values) value *= 2;
    return TensorData::from(DataType::kFloat, in[0].dims, values);
  });
  ASSERT_TRUE(doubled);
  const ValueId twice =
      graph.add_initializer("twice", TensorData{DataType::kFloat, {2, 2, 1, 1}, {}, {}});
  record_deferred_weight(graph, twice, doubled);
  int reads = 0;
  const std::optional<TensorData> made = deferred.bytes_of("twice", [&](const std::string&) {
    ++reads;
    return file_weights();
  });
  ASSERT_TRUE(made);
  EXPECT_EQ(reads, 1);
  const auto values = made->as<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), (std::vector<float>{8, 26, 44, 62}));
  EXPECT_FALSE(deferred.bytes_of("x", [](const std::string&) { return TensorData{}; }));
}

TEST(DeferredWeights, ClearForgetsTheRewrites) {
  Graph graph = parse_graph(kCentreOnly);
  DeferredWeights deferred;
  remove_dead_taps(graph);
  deferred.clear();
  EXPECT_TRUE(deferred.names().empty());
}

TEST(DeferredWeights, TwoOpenOnOneThreadIsAnError) {
  DeferredWeights first;
  EXPECT_THROW(DeferredWeights second, Error);
}

TEST(DeferredWeights, RecordingWithNoneOpenIsAnError) {
  Graph graph = parse_graph(kCentreOnly);
  EXPECT_THROW(record_deferred_weight(graph, *graph.find_value("w"), nullptr), Error);
}

}  // namespace
}  // namespace cleave
