// Stage grouping: a graph cut into FLOP-balanced contiguous stages, one model filter each.
#include "stream/stages.h"

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

// Two equal MatMuls with a residual Add around the second: the cut falls between them and
// the residual value crosses it beside the first MatMul's result.
constexpr const char* kResidual = R"(graph g (%x: f32[1,4]) {
  @w1: f32[4,4] = [1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4]
  @w2: f32[4,4] = [0,1,0,0, 1,0,0,0, 0,0,0,1, 0,0,1,0]
  %a = MatMul(%x, @w1)
  %r = Relu(%a)
  %b = MatMul(%r, @w2)
  %y = Add(%b, %a)
  return %y
})";

TEST(StreamStages, CutBalancesFlopsAndPassesLiveValuesAcross) {
  const StagedStream s = graph_to_stages(graph_of(kResidual), 2);
  EXPECT_EQ(print_stream(s.root),
            "pipeline model {\n"
            "  filter stage0(pop 1, peek 1, push 2) model \"stage0.onnx\";\n"
            "  filter stage1(pop 2, peek 2, push 1) model \"stage1.onnx\";\n"
            "}\n");
  EXPECT_EQ(s.stage_nodes, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.cut_values, (std::vector<int64_t>{2}));
  EXPECT_EQ(
      print_graph(*s.root.streams[1].graph),
      "graph stage1 [ai.onnx=17] (%a: f32[1,4], %r: f32[1,4]) {\n"
      "  @w2: f32[4,4] = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, "
      "1.0, 0.0]\n"
      "  %b: f32[1,4] = MatMul(%r, @w2)\n"
      "  %y: f32[1,4] = Add(%b, %a)\n"
      "  return %y: f32[1,4]\n"
      "}\n");
}

TEST(StreamStages, StagedPipelineComputesTheGraph) {
  const Graph g = graph_of(kResidual);
  Executor executor(g);
  for (int stages : {1, 2, 4}) {
    const StagedStream s = graph_to_stages(g, stages);
    verify_stream(s.root, "staged");
    std::vector<Tensor> items;
    std::vector<Tensor> want;
    for (int i = 0; i < 5; ++i) {
      Tensor x = Tensor::allocate(DataType::kFloat, {1, 4});
      for (int j = 0; j < 4; ++j) x.data<float>()[j] = static_cast<float>(i - j);
      want.push_back(executor.run({{"x", x}})[0]);
      items.push_back(x);
    }
    const StreamRunResult r =
        run_stream({s.root, "staged"}, items, testing::on_workers(2, {}, true));
    ASSERT_EQ(r.outputs.size(), want.size()) << stages << " stages";
    for (std::size_t k = 0; k < want.size(); ++k) {
      const auto got = r.outputs[k].values<float>();
      const auto expected = want[k].values<float>();
      EXPECT_EQ(std::vector<float>(got.begin(), got.end()),
                std::vector<float>(expected.begin(), expected.end()))
          << stages << " stages, item " << k;
    }
  }
}

TEST(StreamStages, NodeCostsMoveTheCut) {
  // By FLOPs the cut falls after Relu (2 + 2 nodes); with the Add costing most of the time,
  // everything before it is one stage.
  const Graph g = graph_of(kResidual);
  std::vector<double> seconds(g.node_capacity(), 1e-6);
  seconds[g.node_ids().back()] = 1e-3;
  const StagedStream s = graph_to_stages(g, 2, "model", seconds);
  EXPECT_EQ(s.stage_nodes, (std::vector<int64_t>{3, 1}));
  ASSERT_EQ(s.stage_cost.size(), 2u);
  EXPECT_DOUBLE_EQ(s.stage_cost[1], 1e-3);
}

TEST(StreamStages, MoreStagesThanNodesIsRefused) {
  EXPECT_THAT([] { graph_to_stages(graph_of(kResidual), 5); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("5 stages for a graph of 4 "
                                                                   "nodes (need 1..4)")));
}

}  // namespace
}  // namespace cleave
