// `cleave run` and `cleave bench` with the pipeline strategy: stages over a stream of samples.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

class PipelineRunCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
    Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,3,4,4]) {
  @w1: f32[4,3,1,1]
  @w2: f32[4,4,3,3]
  %c = Conv[kernel_shape=[1,1]](%x, @w1)
  %r = Relu(%c)
  %d = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r, @w2)
  %s = Add(%d, %c)
  %t = Tanh(%s)
  return %t, %r
}
)");
    int k = 0;
    for (ValueId id : graph.initializers()) {
      TensorData& data = *graph.value(id).initializer;
      std::vector<float> values(static_cast<std::size_t>(data.element_count()));
      for (float& v : values) v = 0.05f * static_cast<float>((k++ % 17) - 8);
      data = TensorData::from(DataType::kFloat, data.dims, values);
    }
    export_onnx(graph, path("m.onnx"));
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }
  // Every file of `folder`, by name, as bytes.
  std::map<std::string, std::string> files_of(const std::string& folder) const {
    std::map<std::string, std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path(folder)))
      files[entry.path().filename().string()] = read_text(entry.path());
    return files;
  }
};

TEST_F(PipelineRunCommand, OutputsEqualTheSequentialRun) {
  const CommandResult sequential =
      cleave("run " + path("m.onnx") + " --layouts blocked --output-dir " + path("sequential"));
  ASSERT_EQ(sequential.exit_code, 0) << sequential.err;
  const CommandResult pipeline =
      cleave("run " + path("m.onnx") +
             " --layouts blocked --costs static --plan pipeline --workers 2 --samples 4 "
             "--output-dir " +
             path("pipeline"));
  ASSERT_EQ(pipeline.exit_code, 0) << pipeline.err;
  const auto want = files_of("sequential");
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(files_of("pipeline"), want);
}

TEST_F(PipelineRunCommand, OneSampleRuns) {
  const CommandResult r =
      cleave("run " + path("m.onnx") + " --costs static --plan pipeline --workers 3 --samples 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(PipelineRunCommand, MoreStagesThanNodesIsRefusedNamingTheOption) {
  const CommandResult r =
      cleave("run " + path("m.onnx") + " --costs static --plan pipeline --workers 9 --samples 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--workers 9: a pipeline needs 1 to "));
  EXPECT_THAT(r.err, HasSubstr("nodes"));
}

TEST_F(PipelineRunCommand, BenchTimesThePipelineAndChecksItsOutputs) {
  const CommandResult r = cleave("bench " + path("m.onnx") +
                                 " --costs static --strategy pipeline --workers 2 --samples 4 "
                                 "--warmup 1 --repeat 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["strategy"], "pipeline");
  EXPECT_EQ(report["bitwise_equal"], true);
}

TEST_F(PipelineRunCommand, HelpListsThePipelineStrategy) {
  EXPECT_THAT(cleave("run --help").out, HasSubstr("or pipeline"));
  EXPECT_THAT(cleave("bench --help").out, HasSubstr("or pipeline"));
}

}  // namespace
}  // namespace cleave
