// The model-to-stream conversion bounds the filters replication makes: a dense block's shared
// values are repeated exponentially often, and DenseNet ran out of memory.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/text.h"
#include "stream/from_graph.h"

namespace cleave {
namespace {

// `layers` layers, each the Relu of the Concat of the input and every earlier layer's output.
Graph dense_block(int layers) {
  std::string text = "graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {\n";
  std::vector<std::string> earlier = {"%x"};
  int64_t channels = 1;
  for (int i = 1; i <= layers; ++i) {
    std::string inputs;
    for (const std::string& name : earlier) inputs += (inputs.empty() ? "" : ", ") + name;
    text += fmt::format("  %c{0}: f32[1,{1},2,2] = Concat[axis=1]({2})\n", i, channels, inputs);
    text += fmt::format("  %y{0}: f32[1,{1},2,2] = Relu(%c{0})\n", i, channels);
    earlier.push_back(fmt::format("%y{}", i));
    channels *= 2;
  }
  return parse_graph(text + fmt::format("  return %y{}\n}}\n", layers));
}

TEST(ReplicationBound, ASmallDenseBlockIsReplicated) {
  const StreamConversion conversion = graph_to_stream(dense_block(6));
  EXPECT_GT(conversion.replicated_filters, 0);
}

TEST(ReplicationBound, ADeepDenseBlockIsRefusedNamingTheBoundAndTheWayOut) {
  try {
    graph_to_stream(dense_block(24));
    FAIL() << "converted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::AllOf(::testing::HasSubstr("not series-parallel"),
                                           ::testing::HasSubstr("more than 65536 filters for its "
                                                                "48 nodes"),
                                           ::testing::HasSubstr("--no-replicate")));
  }
}

}  // namespace
}  // namespace cleave
