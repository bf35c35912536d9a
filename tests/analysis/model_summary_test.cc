// The inspect report's numbers, JSON and unit formatting.
#include "analysis/model_summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/text.h"

namespace cleave {
namespace {

const char* kDiamond = R"(graph diamond (%x: f32[1,4,8,8]) {
  @w3: f32[4,4,3,3]
  @w1: f32[4,4,1,1]
  %a: f32[1,4,8,8] = Relu(%x)
  %b: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%a, @w1)
  %c: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w3)
  %d: f32[1,4,8,8] = Add(%b, %c)
  %e = Relu(%d)
  return %e
})";

TEST(ModelSummary, CountsNodesEdgesParametersAndFlops) {
  ModelSummary summary = summarize_model(parse_graph(kDiamond));
  EXPECT_EQ(summary.node_count, 5);
  EXPECT_EQ(summary.edge_count, 5);  // a->b, a->c, b->d, c->d, d->e
  EXPECT_EQ(summary.initializer_count, 2);
  EXPECT_EQ(summary.parameter_count, 144 + 16);
  EXPECT_EQ(summary.parameter_bytes, (144 + 16) * 4);
  // Relu 256 + 1x1 conv 2*256*4 + 3x3 conv 2*256*36 + Add 256; the last Relu has no shape.
  EXPECT_EQ(summary.flops, 256 + 2048 + 18432 + 256);
  EXPECT_EQ(summary.nodes_with_unknown_flops, 1);
}

TEST(ModelSummary, HistogramIsSortedByCountThenName) {
  ModelSummary summary = summarize_model(parse_graph(kDiamond));
  using Entry = std::pair<std::string, int64_t>;
  EXPECT_EQ(summary.op_histogram, (std::vector<Entry>{{"Conv", 2}, {"Relu", 2}, {"Add", 1}}));
}

TEST(ModelSummary, JsonHasEveryNumberAndTheCriticalPathByName) {
  nlohmann::json json = summary_to_json(summarize_model(parse_graph(kDiamond)));
  EXPECT_EQ(json["node_count"], 5);
  EXPECT_EQ(json["static_cost"]["total_weight"], 1 + 2 + 3 + 1 + 1);
  EXPECT_EQ(json["static_cost"]["critical_path_length"], 1 + 3 + 1 + 1 + 3);
  EXPECT_EQ(json["static_cost"]["critical_path"], (std::vector<std::string>{"a", "c", "d", "e"}));
  EXPECT_TRUE(json["nodes"][4]["flops"].is_null());
  EXPECT_EQ(json["nodes"][2]["flops"], 18432);
}

TEST(ModelSummary, ReportListsTheCriticalPath) {
  std::string report = format_summary(summarize_model(parse_graph(kDiamond)));
  EXPECT_NE(report.find("parallelism            0.89x"), std::string::npos) << report;
  EXPECT_NE(report.find("critical path:\n  a "), std::string::npos) << report;
}

TEST(ModelSummary, FormatsUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(format_flops(83'100'000), "83.1 MFLOP");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_count(12), "12");
}

}  // namespace
}  // namespace cleave
