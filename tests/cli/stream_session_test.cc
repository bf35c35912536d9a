// `cleave stream run MODEL --stages K` through the Session: the model loaded with --shape, a
// pipeline plan of K stages, the stage executor, the pipeline's trace and the run report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// x * x + x on a batch of symbolic size N.
constexpr const char* kSymbolicBatch = R"(graph g (%x: f32[N,2]) {
  %s: f32[N,2] = "square" Mul(%x, %x)
  %y: f32[N,2] = "plus" Add(%s, %x)
  return %y
})";

class StreamSession : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(parse_graph(kSymbolicBatch), path("m.onnx"));
    Tensor items = Tensor::allocate(DataType::kFloat, {3, 1, 2});
    for (int i = 0; i < 6; ++i) items.data<float>()[i] = static_cast<float>(i);
    write_npy(path("x.npy"), items);
  }
  CommandResult run_stages(const std::string& options) const {
    return cleave("stream run " + path("m.onnx") +
                  " --shape x=1,2 --stages 2 --input x=" + path("x.npy") + " " + options);
  }
};

TEST_F(StreamSession, StagesComputeEachItemAtTheFixedShape) {
  const CommandResult r = run_stages("--workers 2 --output-dir " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/output.npy"));
  ASSERT_EQ(out.values<float>().size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.values<float>()[i], static_cast<float>(i * i + i)) << i;
}

TEST_F(StreamSession, JsonKeepsTheStreamKeysAndAddsTheRunReports) {
  const CommandResult r = run_stages("--workers 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["items"], 3);
  EXPECT_EQ(j["outputs"], 3);
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["worker_busy"].size(), 2u);
  EXPECT_EQ(j["placement"]["actors"].size(), 2u);
  EXPECT_EQ(j["placement"]["method"], "balanced");
  EXPECT_EQ(j["plan"]["strategy"], "pipeline");
  EXPECT_EQ(j["plan"]["workers"], 2);
  EXPECT_EQ(j["model"], path("m.onnx"));
  EXPECT_EQ(j["latency_ms"]["runs"].size(), 1u);
}

TEST_F(StreamSession, TraceHoldsOneEventPerStageFiringAsRunWritesIt) {
  const CommandResult r = run_stages("--workers 2 --trace " + path("trace.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  std::map<std::string, int> firings;
  for (const auto& event : trace["traceEvents"])
    if (event["ph"] == "X") ++firings[event["name"].get<std::string>()];
  EXPECT_EQ(firings, (std::map<std::string, int>{{"stage0", 3}, {"stage1", 3}}));
}

TEST_F(StreamSession, TextReportsThroughputLatencyAndWorkers) {
  const CommandResult r = run_stages("--workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(path("m.onnx") + ": 3 items in, 3 items out on 2 workers"));
  EXPECT_THAT(r.out, HasSubstr("throughput "));
  EXPECT_THAT(r.out, HasSubstr("latency per iteration: p50 "));
  EXPECT_THAT(r.out, HasSubstr("worker 1: busy "));
}

TEST_F(StreamSession, StagesWithoutShapeAreRefusedBeforeReadingInputs) {
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --stages 2 --input x=" + path("missing.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims"));
}

}  // namespace
}  // namespace cleave
