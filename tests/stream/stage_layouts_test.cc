// Stage boundaries hand values on in the layout their readers' kernels expect: a pipeline of a
// model with convolutions in blocked layouts computes what the sequential executor computes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "frontend/load.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "stream/stage_executor.h"
#include "test_paths.h"

namespace cleave {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

class StageLayouts : public ::testing::TestWithParam<int> {};

// inception_demo's cuts fall between convolutions whose values are blocked in the sequential
// run; a stage that got them plain picked another kernel and differed by up to 9.5e-7.
TEST_P(StageLayouts, BlockedPipelineEqualsTheSequentialRunBitForBit) {
  const Graph g = load_model(std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx");
  ExecutorOptions blocked;
  blocked.blocked_layouts = true;
  blocked.convolution_family = ConvolutionFamily::kBlocked;
  Executor sequential(g, blocked);
  StageExecutorOptions options;
  options.stages = GetParam();
  options.workers = GetParam();
  options.samples = 2;
  options.stage_options = blocked;
  StageExecutor pipeline(g, options);
  const std::vector<SampleInputs> inputs = {random_inputs(g, 1), random_inputs(g, 2)};
  const std::vector<std::vector<Tensor>> got = pipeline.run(inputs);
  ASSERT_EQ(got.size(), inputs.size());
  for (std::size_t s = 0; s < inputs.size(); ++s) {
    const std::vector<Tensor> want = sequential.run(inputs[s]);
    ASSERT_EQ(got[s].size(), want.size());
    for (std::size_t o = 0; o < want.size(); ++o)
      EXPECT_TRUE(same_bits(got[s][o], want[o])) << "sample " << s << " output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, StageLayouts, ::testing::Values(1, 2, 3));

// Stages a value only passes on (an inception branch waiting for its concat) copy it with an
// Identity of their own; a later stage's kernels must still read the whole run's layout.
int passed_on_values(const StagedStream& staged) {
  int count = 0;
  for (const Stream& stage : staged.root.streams)
    for (NodeId id : stage.graph->topological_order())
      count += stage.graph->node(id).op_type == "Identity" ? 1 : 0;
  return count;
}

class PassThroughLayouts : public ::testing::TestWithParam<int> {};

TEST_P(PassThroughLayouts, ValuesPassedOnThroughStagesKeepTheWholeRunsBits) {
  const Graph g = load_model(std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx");
  ExecutorOptions blocked;
  blocked.blocked_layouts = true;
  blocked.convolution_family = ConvolutionFamily::kBlocked;
  Executor sequential(g, blocked);
  StageExecutorOptions options;
  options.stages = GetParam();
  options.workers = 2;
  options.samples = 2;
  options.stage_options = blocked;
  StageExecutor pipeline(g, options);
  ASSERT_GT(passed_on_values(pipeline.staged()), 0) << "no stage passes a value on";
  const std::vector<SampleInputs> inputs = {random_inputs(g, 1), random_inputs(g, 2)};
  const std::vector<std::vector<Tensor>> got = pipeline.run(inputs);
  ASSERT_EQ(got.size(), inputs.size());
  for (std::size_t s = 0; s < inputs.size(); ++s) {
    const std::vector<Tensor> want = sequential.run(inputs[s]);
    ASSERT_EQ(got[s].size(), want.size());
    for (std::size_t o = 0; o < want.size(); ++o)
      EXPECT_TRUE(same_bits(got[s][o], want[o])) << "sample " << s << " output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, PassThroughLayouts, ::testing::Values(6, 12, 24));

}  // namespace
}  // namespace cleave
