// `cleave stream --shape`: a model exported with a symbolic batch dim converts, schedules and runs,
// filter by filter or, with --stages, as the Session's pipeline plan.
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

class StreamShape : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(parse_graph(kSymbolicBatch), path("m.onnx"));
  }
  // `stream run --stages 2` of three items: the Session's pipeline plan and stage executor.
  CommandResult run_stages(const std::string& options) const {
    Tensor items = Tensor::allocate(DataType::kFloat, {3, 1, 2});
    for (int i = 0; i < 6; ++i) items.data<float>()[i] = static_cast<float>(i);
    write_npy(path("x.npy"), items);
    return cleave("stream run " + path("m.onnx") +
                  " --shape x=1,2 --stages 2 --input x=" + path("x.npy") + " " + options);
  }
};

TEST_F(StreamShape, ConvertsAModelWithASymbolicBatchDim) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape x=1,2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("filter v1_Mul(pop 2, peek 2, push 1)"));
}

TEST_F(StreamShape, RunComputesEachItemAtTheFixedShape) {
  Tensor items = Tensor::allocate(DataType::kFloat, {3, 1, 2});
  for (int i = 0; i < 6; ++i) items.data<float>()[i] = static_cast<float>(i);
  write_npy(path("x.npy"), items);
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --shape x=1,2 --input x=" + path("x.npy") +
             " --output-dir " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/output.npy"));
  ASSERT_EQ(out.values<float>().size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.values<float>()[i], static_cast<float>(i * i + i)) << i;
}

TEST_F(StreamShape, ScheduleOfAModelTakesTheShape) {
  const CommandResult r = cleave("stream schedule " + path("m.onnx") + " --shape x=1,2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"repetitions\""));
}

TEST_F(StreamShape, WithoutShapeTheSymbolicInputIsNamedWithTheOption) {
  const CommandResult r = cleave("stream " + path("m.onnx"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims (f32[N,2]); fix them "
                               "with --shape x="));
}

TEST_F(StreamShape, RunWithoutShapeIsRefusedBeforeReadingInputs) {
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --input x=" + path("missing.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims"));
}

TEST_F(StreamShape, ShapeNamingNoInputIsRefused) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape z=1,2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape names 'z', which is not an input; inputs are: x"));
}

TEST_F(StreamShape, ShapeContradictingAFixedDimIsRefused) {
  const CommandResult r = cleave("stream run " + path("m.onnx") + " --shape x=1,3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' dim 1 is fixed to 2 by the model, --shape gives 3"));
}

TEST_F(StreamShape, MalformedShapeIsRefused) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape x=1,two");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape 'x=1,two'"));
}

TEST_F(StreamShape, ShapeWithAProgramFileIsRefused) {
  std::ofstream(path("p.json")) << R"({"filter": {"name": "id", "pop": 1, "push": 1,
    "op": "identity"}})";
  const CommandResult r = cleave("stream " + path("p.json") + " --shape x=1,2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape apply to converting an ONNX model"));
}

TEST_F(StreamShape, StagesComputeEachItemAtTheFixedShape) {
  const CommandResult r = run_stages("--workers 2 --output-dir " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/output.npy"));
  ASSERT_EQ(out.values<float>().size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.values<float>()[i], static_cast<float>(i * i + i)) << i;
}

TEST_F(StreamShape, JsonKeepsTheStreamKeysAndAddsTheRunReports) {
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

TEST_F(StreamShape, TraceHoldsOneEventPerStageFiringAsRunWritesIt) {
  const CommandResult r = run_stages("--workers 2 --trace " + path("trace.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  std::map<std::string, int> firings;
  for (const auto& event : trace["traceEvents"])
    if (event["ph"] == "X") ++firings[event["name"].get<std::string>()];
  EXPECT_EQ(firings, (std::map<std::string, int>{{"stage0", 3}, {"stage1", 3}}));
}

TEST_F(StreamShape, TextReportsThroughputLatencyAndWorkers) {
  const CommandResult r = run_stages("--workers 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(path("m.onnx") + ": 3 items in, 3 items out on 2 workers"));
  EXPECT_THAT(r.out, HasSubstr("throughput "));
  EXPECT_THAT(r.out, HasSubstr("latency per iteration: p50 "));
  EXPECT_THAT(r.out, HasSubstr("worker 1: busy "));
}

TEST_F(StreamShape, StagesWithoutShapeAreRefusedBeforeReadingInputs) {
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --stages 2 --input x=" + path("missing.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims"));
}

}  // namespace
}  // namespace cleave
