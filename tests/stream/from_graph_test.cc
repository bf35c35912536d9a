// Graph -> instructions -> stream: each conversion case of thesis ch. 4, text in, text out.
#include "stream/from_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/load.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "stream/executor.h"
#include "stream/schedule.h"
#include "stream/stream_text.h"
#include "test_models.h"

namespace cleave {
namespace {

Graph graph_of(const std::string& text) {
  Graph g = parse_graph(text);
  infer_shapes(g, "test");
  return g;
}

StreamConversion convert(const std::string& text) {
  StreamConversion c = graph_to_stream(graph_of(text));
  verify_stream(c.root, "converted");
  const StreamGraph flat = flatten_stream(c.root);
  schedule_stream(flat, "converted");  // every conversion must have a steady state
  return c;
}

TEST(StreamFromGraph, SequentialGraphIsOnePipeline) {
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  return %b
})");
  EXPECT_EQ(print_instructions(c.instructions),
            "var0 = placeholder()\n"
            "var1 = Relu(var0)\n"
            "var2 = Sigmoid(var1)\n"
            "return var2\n");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  filter v1_Relu(pop 1, peek 1, push 1) model \"v1_Relu.onnx\";\n"
            "  filter v2_Sigmoid(pop 1, peek 1, push 1) model \"v2_Sigmoid.onnx\";\n"
            "}\n");
}

TEST(StreamFromGraph, FanOutBecomesADuplicateSplitJoinBeforeTheJoin) {
  // The residual block shape: a feeds two branches that meet at Add.
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %c = Tanh(%a)
  %d = Neg(%c)
  %y = Add(%b, %d)
  return %y
})");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  filter v1_Relu(pop 1, peek 1, push 1) model \"v1_Relu.onnx\";\n"
            "  splitjoin sj_v5 {\n"
            "    split duplicate;\n"
            "    filter v2_Sigmoid(pop 1, peek 1, push 1) model \"v2_Sigmoid.onnx\";\n"
            "    pipeline sj_v5_branch_1 {\n"
            "      filter v3_Tanh(pop 1, peek 1, push 1) model \"v3_Tanh.onnx\";\n"
            "      filter v4_Neg(pop 1, peek 1, push 1) model \"v4_Neg.onnx\";\n"
            "    }\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "  filter v5_Add(pop 2, peek 2, push 1) model \"v5_Add.onnx\";\n"
            "}\n");
  EXPECT_EQ(c.replicated_filters, 0);
}

TEST(StreamFromGraph, TwoInputsBecomeARoundRobinSplitJoin) {
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4], %y: f32[1,4]) {
  %a = Relu(%x)
  %b = Tanh(%y)
  %s = Add(%a, %b)
  return %s
})");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  splitjoin sj_v4 {\n"
            "    split roundrobin(1, 1);\n"
            "    filter v2_Relu(pop 1, peek 1, push 1) model \"v2_Relu.onnx\";\n"
            "    filter v3_Tanh(pop 1, peek 1, push 1) model \"v3_Tanh.onnx\";\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "  filter v4_Add(pop 2, peek 2, push 1) model \"v4_Add.onnx\";\n"
            "}\n");
}

TEST(StreamFromGraph, TwoOutputsAreJoinedRoundRobin) {
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4]) {
  %a = Relu(%x)
  %b = Tanh(%x)
  return %a, %b
})");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  splitjoin outputs {\n"
            "    split duplicate;\n"
            "    filter v1_Relu(pop 1, peek 1, push 1) model \"v1_Relu.onnx\";\n"
            "    filter v2_Tanh(pop 1, peek 1, push 1) model \"v2_Tanh.onnx\";\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "}\n");
}

TEST(StreamFromGraph, UnusedTupleOutputIsDroppedByASeparator) {
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4]) {
  %a, %b = Split[axis=1](%x)
  %y = Relu(%a)
  return %y
})");
  EXPECT_EQ(print_instructions(c.instructions),
            "var0 = placeholder()\n"
            "var1 = Split<1>(var0)\n"
            "var2 = getitem<0>(var1)\n"
            "var3 = getitem<1>(var1)  # dead\n"
            "var4 = Relu(var2)\n"
            "return var4\n");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  filter v1_Split(pop 1, peek 1, push 2) model \"v1_Split.onnx\";\n"
            "  filter v2_getitem0(pop 2, peek 2, push 1) separator(0);\n"
            "  filter v4_Relu(pop 1, peek 1, push 1) model \"v4_Relu.onnx\";\n"
            "}\n");
}

TEST(StreamFromGraph, TupleOutputsToDifferentBranchesSplitRoundRobin) {
  const StreamConversion c = convert(R"(graph g (%x: f32[1,4]) {
  %a, %b = Split[axis=1](%x)
  %c = Relu(%a)
  %y = Add(%c, %b)
  return %y
})");
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  filter v1_Split(pop 1, peek 1, push 2) model \"v1_Split.onnx\";\n"
            "  splitjoin sj_v5 {\n"
            "    split roundrobin(1, 1);\n"
            "    filter v4_Relu(pop 1, peek 1, push 1) model \"v4_Relu.onnx\";\n"
            "    filter pass(pop 1, peek 1, push 1) identity;\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "  filter v5_Add(pop 2, peek 2, push 1) model \"v5_Add.onnx\";\n"
            "}\n");
}

constexpr const char* kFused = R"(graph g (%x: f32[1,4]) {
  %g = Relu(%x)
  %f = Tanh(%x)
  %s = Add(%g, %f)
  %h = Sigmoid(%x)
  %t = Add(%g, %h)
  return %s, %t
})";

TEST(StreamFromGraph, SharedNodeOfTwoSplitJoinsIsReplicated) {
  // The thesis's `Fused` module: g feeds both joins, so each split-join gets its own g.
  const StreamConversion c = convert(kFused);
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  splitjoin outputs {\n"
            "    split duplicate;\n"
            "    pipeline outputs_branch {\n"
            "      splitjoin sj_v3 {\n"
            "        split duplicate;\n"
            "        filter v1_Relu(pop 1, peek 1, push 1) model \"v1_Relu.onnx\";\n"
            "        filter v2_Tanh(pop 1, peek 1, push 1) model \"v2_Tanh.onnx\";\n"
            "        join roundrobin(1, 1);\n"
            "      }\n"
            "      filter v3_Add(pop 2, peek 2, push 1) model \"v3_Add.onnx\";\n"
            "    }\n"
            "    pipeline outputs_branch_1 {\n"
            "      splitjoin sj_v5 {\n"
            "        split duplicate;\n"
            "        filter v1_Relu_1(pop 1, peek 1, push 1) model \"v1_Relu_1.onnx\";\n"
            "        filter v4_Sigmoid(pop 1, peek 1, push 1) model \"v4_Sigmoid.onnx\";\n"
            "        join roundrobin(1, 1);\n"
            "      }\n"
            "      filter v5_Add(pop 2, peek 2, push 1) model \"v5_Add.onnx\";\n"
            "    }\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(c.replicated_filters, 1);
  EXPECT_EQ(c.live_instructions, 5);
  EXPECT_EQ(c.filters, 6);
}

TEST(StreamFromGraph, ConvertedStreamComputesTheGraph) {
  const Graph g = graph_of(kFused);
  const StreamConversion c = graph_to_stream(g);
  Executor executor(g);
  std::vector<Tensor> items;
  std::vector<std::vector<Tensor>> want;
  for (int i = 0; i < 5; ++i) {
    Tensor x = Tensor::allocate(DataType::kFloat, {1, 4});
    for (int j = 0; j < 4; ++j) x.data<float>()[j] = 0.5f * static_cast<float>(i - j);
    want.push_back(executor.run({{"x", x}}));
    items.push_back(x);
  }
  const StreamRunResult r = run_stream({c.root, "fused"}, items, testing::on_workers(2, {}, true));
  ASSERT_EQ(r.outputs.size(), 10u);
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    const auto got = r.outputs[k].values<float>();
    const auto expected = want[k / 2][k % 2].values<float>();
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t j = 0; j < got.size(); ++j) EXPECT_FLOAT_EQ(got[j], expected[j]);
  }
}

}  // namespace
}  // namespace cleave
