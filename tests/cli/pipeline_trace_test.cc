// `cleave run --plan pipeline`: its --trace (one event per stage firing), its --gantt (one box per
// stage firing) and its report's plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

class PipelineTrace : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,8]) {
  %a = Relu(%x)
  %b = Tanh(%a)
  %c = Sigmoid(%b)
  %d = Neg(%c)
  return %d
}
)"),
                path("m.onnx"));
  }
  // `run --plan pipeline` of 2 stages over 3 samples, with extra options.
  CommandResult run_pipeline(const std::string& options) const {
    return cleave("run " + path("m.onnx") +
                  " --costs static --plan pipeline --workers 2 --samples 3 " + options);
  }
};

TEST_F(PipelineTrace, TraceHoldsOneEventPerStageFiring) {
  const CommandResult r = run_pipeline("--trace " + path("trace.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  std::map<std::string, int> firings;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X") ++firings[event["name"].get<std::string>()];
  }
  // 2 stages, each fired once per sample.
  EXPECT_EQ(firings, (std::map<std::string, int>{{"stage0", 3}, {"stage1", 3}}));
  EXPECT_THAT(r.out, HasSubstr("trace      " + path("trace.json")));
}

TEST_F(PipelineTrace, GanttDrawsOneBoxPerStageFiringOnItsWorker) {
  const CommandResult r = run_pipeline("--gantt " + path("g.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = read_text(path("g.svg"));
  // 2 stages, each fired once per sample; stage k on worker k.
  EXPECT_EQ(count_of(svg, "<title>stage0 #"), 3);
  EXPECT_EQ(count_of(svg, "<title>stage1 #"), 3);
  EXPECT_EQ(count_of(svg, " on worker 0: "), 3);
  EXPECT_EQ(count_of(svg, " on worker 1: "), 3);
  EXPECT_THAT(r.out, HasSubstr("gantt      " + path("g.svg")));
}

TEST_F(PipelineTrace, TextReportNamesThePipelinePlan) {
  const CommandResult r = run_pipeline("");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pipeline of 2 stages x 1 thread\n"));
  EXPECT_THAT(r.out, HasSubstr("plan       pipeline of 2 stages x 1 thread on 2 worker(s), "
                               "3 sample(s): predicted "));
  EXPECT_THAT(r.out, Not(HasSubstr("1 thread(s)\n")));
}

TEST_F(PipelineTrace, JsonReportNamesThePipelinePlan) {
  const CommandResult r =
      run_pipeline("--json --trace " + path("trace.json") + " --gantt " + path("g.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["plan"]["strategy"], "pipeline");
  EXPECT_EQ(report["plan"]["stages"], 2);
  EXPECT_EQ(report["plan"]["workers"], 2);
  EXPECT_EQ(report["plan"]["threads_per_worker"], 1);
  EXPECT_EQ(report["plan"]["samples"], 3);
  EXPECT_EQ(report["trace_file"], path("trace.json"));
  EXPECT_EQ(report["gantt_file"], path("g.svg"));
}

}  // namespace
}  // namespace cleave
