// By reference instead of replication: a node two split-joins share runs once, readers pass it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/load.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "stream/executor.h"
#include "stream/from_graph.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"
#include "stream/stream_text.h"
#include "test_models.h"

namespace cleave {
namespace {

// The thesis's `Fused` module: g = Relu(x) feeds both joins, so it is not series-parallel.
constexpr const char* kFused = R"(graph g (%x: f32[1,4]) {
  %g = Relu(%x)
  %f = Tanh(%x)
  %s = Add(%g, %f)
  %h = Sigmoid(%x)
  %t = Add(%g, %h)
  return %s, %t
})";

StreamConversion by_reference(const Graph& g) {
  StreamConversion c = graph_to_stream(g, "model", StreamConversionOptions{true});
  verify_stream(c.root, "converted");
  schedule_stream(flatten_stream(c.root), "converted");
  return c;
}

Graph graph_of(const std::string& text) {
  Graph g = parse_graph(text);
  infer_shapes(g, "test");
  return g;
}

TEST(StreamByReference, SharedNodeRunsOnceAndIsReadWhereReplicationWouldRepeatIt) {
  const StreamConversion c = by_reference(graph_of(kFused));
  EXPECT_EQ(print_stream(c.root),
            "pipeline model {\n"
            "  splitjoin outputs {\n"
            "    split duplicate;\n"
            "    pipeline outputs_branch {\n"
            "      splitjoin sj_v3 {\n"
            "        split duplicate;\n"
            "        filter v1_Relu(pop 1, peek 1, push 1) model \"v1_Relu.onnx\" publishes &v1;\n"
            "        filter v2_Tanh(pop 1, peek 1, push 1) model \"v2_Tanh.onnx\";\n"
            "        join roundrobin(1, 1);\n"
            "      }\n"
            "      filter v3_Add(pop 2, peek 2, push 1) model \"v3_Add.onnx\";\n"
            "    }\n"
            "    pipeline outputs_branch_1 {\n"
            "      splitjoin sj_v5 {\n"
            "        split duplicate;\n"
            "        filter v1_ref(pop 1, peek 1, push 1) identity reads &v1;\n"
            "        filter v4_Sigmoid(pop 1, peek 1, push 1) model \"v4_Sigmoid.onnx\";\n"
            "        join roundrobin(1, 1);\n"
            "      }\n"
            "      filter v5_Add(pop 2, peek 2, push 1) model \"v5_Add.onnx\";\n"
            "    }\n"
            "    join roundrobin(1, 1);\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(c.replicated_filters, 0);
  EXPECT_EQ(c.reference_readers, 1);
  EXPECT_EQ(c.filters, 5);
}

TEST(StreamByReference, SeriesParallelGraphNeedsNoReference) {
  const StreamConversion c = by_reference(graph_of(R"(graph g (%x: f32[1,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %c = Tanh(%a)
  %y = Add(%b, %c)
  return %y
})"));
  EXPECT_EQ(c.reference_readers, 0);
  EXPECT_EQ(print_stream(c.root).find("publishes"), std::string::npos);
}

TEST(StreamByReference, ReadersPassTheSameValuesAsReplication) {
  const Graph g = graph_of(kFused);
  const StreamConversion c = by_reference(g);
  Executor executor(g);
  std::vector<Tensor> items;
  std::vector<std::vector<Tensor>> want;
  for (int i = 0; i < 6; ++i) {
    Tensor x = Tensor::allocate(DataType::kFloat, {1, 4});
    for (int j = 0; j < 4; ++j) x.data<float>()[j] = 0.25f * static_cast<float>(i * 3 - j * 2);
    want.push_back(executor.run({{"x", x}}));
    items.push_back(x);
  }
  for (int workers : {1, 3}) {
    const StreamRunResult r =
        run_stream({c.root, "fused"}, items, testing::on_workers(workers, {}, true));
    ASSERT_EQ(r.outputs.size(), 12u);
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const auto got = r.outputs[k].values<float>();
      const auto expected = want[k / 2][k % 2].values<float>();
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t j = 0; j < got.size(); ++j) EXPECT_FLOAT_EQ(got[j], expected[j]);
    }
  }
}

TEST(StreamByReference, JsonFormKeepsPublishersAndReaders) {
  const StreamConversion c = by_reference(graph_of(kFused));
  const std::string json = stream_to_json(c.root);
  EXPECT_THAT(json, ::testing::HasSubstr("\"publishes\": \"v1\""));
  EXPECT_THAT(json, ::testing::HasSubstr("\"reads\": \"v1\""));
  const StreamProgram back = parse_stream_program(json, "p.json", ".", {false, true});
  EXPECT_EQ(print_stream(back.root), print_stream(c.root));
}

TEST(StreamByReference, ReaderOfAReferenceNobodyPublishesIsRefused) {
  StreamConversion c = by_reference(graph_of(kFused));
  // Drop the publication: the reader now names a value no filter keeps.
  std::vector<Stream*> work = {&c.root};
  while (!work.empty()) {
    Stream* s = work.back();
    work.pop_back();
    s->publishes.clear();
    for (Stream& child : s->streams) work.push_back(&child);
  }
  EXPECT_THAT([&] { verify_stream(c.root, "p.json"); },
              ::testing::ThrowsMessage<Error>(::testing::AllOf(
                  ::testing::HasSubstr("p.json"), ::testing::HasSubstr("v1_ref"),
                  ::testing::HasSubstr("reads \"v1\", which no filter publishes"))));
}

}  // namespace
}  // namespace cleave
