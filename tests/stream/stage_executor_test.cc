// The pipelined-stage executor behind ExecutorInterface: outputs, input checks, trace, observers.
#include "stream/stage_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "frontend/load.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/trace.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Two inputs and two outputs, a value (%a) read on both sides of any cut, so that cut values
// of different sources cross the stages and each sample's outputs keep their graph order.
constexpr const char* kModel = R"(graph g (%x: f32[1,4], %z: f32[1,4]) {
  @w1: f32[4,4] = [1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4]
  @w2: f32[4,4] = [0,1,0,0, 1,0,0,0, 0,0,0,1, 0,0,1,0]
  %a = MatMul(%x, @w1)
  %r = Relu(%a)
  %b = MatMul(%r, @w2)
  %y = Add(%b, %z)
  %t = Tanh(%a)
  return %y, %t
})";

Graph model() {
  Graph g = parse_graph(kModel);
  infer_shapes(g, "test");
  return g;
}

SampleInputs sample(int s) {
  SampleInputs inputs;
  for (const char* name : {"x", "z"}) {
    Tensor t = Tensor::allocate(DataType::kFloat, {1, 4});
    for (int j = 0; j < 4; ++j) {
      t.data<float>()[j] = 0.37f * static_cast<float>(s - j) + (name[0] == 'z' ? 0.5f : -0.25f);
    }
    inputs[name] = t;
  }
  return inputs;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.byte_size() == b.byte_size() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

// Counts what an executor tells its observers.
class CountingObserver : public ExecutorObserver {
 public:
  void on_run_begin(int workers, int tasks) override {
    workers_ = workers;
    tasks_ = tasks;
  }
  void on_task_end(const Trace::Event& /*event*/) override { ++ended_; }
  void on_run_end(double /*makespan*/) override { ++runs_; }
  int workers_ = 0, tasks_ = 0, ended_ = 0, runs_ = 0;
};

TEST(StageExecutor, OutputsEqualTheSequentialExecutorsBitForBit) {
  const Graph g = model();
  Executor sequential(g);
  for (int stages : {1, 2, 3}) {
    for (int samples : {1, 4}) {
      StageExecutorOptions options;
      options.stages = stages;
      options.workers = 2;
      options.samples = samples;
      StageExecutor pipeline(g, options);
      std::vector<SampleInputs> inputs;
      for (int s = 0; s < samples; ++s) inputs.push_back(sample(s));
      const std::vector<std::vector<Tensor>> got = pipeline.run(inputs);
      ASSERT_EQ(got.size(), inputs.size());
      for (int s = 0; s < samples; ++s) {
        const std::vector<Tensor> want = sequential.run(inputs[s]);
        ASSERT_EQ(got[s].size(), want.size());
        for (std::size_t o = 0; o < want.size(); ++o) {
          EXPECT_TRUE(same_bits(got[s][o], want[o]))
              << stages << " stages, " << samples << " samples: sample " << s << " output " << o;
        }
      }
      EXPECT_EQ(pipeline.stats().runs, 1);
      EXPECT_EQ(pipeline.stats().tasks, stages);
    }
  }
}

TEST(StageExecutor, WrongInputIsRefusedNamingIt) {
  StageExecutorOptions options;
  options.stages = 2;
  options.workers = 2;
  options.samples = 2;
  StageExecutor pipeline(model(), options);
  std::vector<SampleInputs> inputs = {sample(0), sample(1)};
  inputs[1]["z"] = Tensor::allocate(DataType::kFloat, {1, 3});
  EXPECT_THAT([&] { pipeline.run(inputs); },
              ::testing::ThrowsMessage<Error>(HasSubstr("sample 1: input 'z'")));
  // The executor runs again after a refusal.
  inputs[1] = sample(1);
  EXPECT_EQ(pipeline.run(inputs).size(), 2u);
}

TEST(StageExecutor, MoreStagesThanNodesIsRefusedNamingTheOption) {
  StageExecutorOptions options;
  options.stages = 6;
  options.stages_option = "--workers";
  EXPECT_THAT([&] { StageExecutor pipeline(model(), options); },
              ::testing::ThrowsMessage<Error>(HasSubstr("--workers 6: a pipeline needs 1 to 5")));
}

TEST(StageExecutor, TraceHasOneEventPerFiringAndObserversSeeThem) {
  StageExecutorOptions options;
  options.stages = 3;
  options.workers = 2;
  options.samples = 4;
  StageExecutor pipeline(model(), options);
  auto observer = std::make_shared<CountingObserver>();
  pipeline.add_observer(observer);
  pipeline.run({sample(0), sample(1), sample(2), sample(3)});
  const Trace& trace = pipeline.last_trace();
  ASSERT_EQ(trace.events.size(), 12u);
  std::vector<int> per_stage(3, 0);
  for (const Trace::Event& event : trace.events) {
    ASSERT_GE(event.task, 0);
    ASSERT_LT(event.task, 3);
    ++per_stage[event.task];
    EXPECT_EQ(event.worker, event.task % 2) << "stage " << event.task;
    EXPECT_LE(event.start, event.end);
  }
  EXPECT_EQ(per_stage, (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(observer->workers_, 2);
  EXPECT_EQ(observer->tasks_, 3);
  EXPECT_EQ(observer->ended_, 12);
  EXPECT_EQ(observer->runs_, 1);
  const std::string json = chrome_trace_json(trace, pipeline.task_names(), pipeline.worker_names());
  EXPECT_THAT(json, HasSubstr("\"stage2\""));
}

}  // namespace
}  // namespace cleave
