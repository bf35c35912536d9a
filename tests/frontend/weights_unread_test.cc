// Loading a model without its weights (LoadOptions::weights_unread): the graph and the plan on
// paper are the ones a load with the weights gives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "frontend/costs.h"
#include "frontend/load.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

// Weights of 4 KiB and more on every rewrite the passes make of weights: a Conv's BatchNorm
// folded in (once with a 4.4 KB scale vector, once with small ones), a MatMul's bias Add.
const char* kModel = R"(graph g [ai.onnx=13] (%x: f32[1,8,4,4]) {
  @w: f32[1100,8,1,1]
  @s: f32[1100]
  @sh: f32[1100]
  @m: f32[1100]
  @v: f32[1100]
  @w2: f32[32,1100,3,3]
  @s2: f32[32]
  @sh2: f32[32]
  @m2: f32[32]
  @v2: f32[32]
  @fc: f32[32,1200]
  @bias: f32[1200]
  %c = Conv[kernel_shape=[1,1]](%x, @w)
  %b = BatchNormalization(%c, @s, @sh, @m, @v)
  %r = Relu(%b)
  %c2 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r, @w2)
  %b2 = BatchNormalization(%c2, @s2, @sh2, @m2, @v2)
  %p = GlobalAveragePool(%b2)
  %f = Flatten(%p)
  %y = MatMul(%f, @fc)
  %z = Add(%y, @bias)
  return %z
}
)";

class WeightsUnread : public ::testing::Test {
 protected:
  void SetUp() override {
    Graph graph = parse_graph(kModel);
    for (ValueId id : graph.initializers()) {
      TensorData& data = *graph.value(id).initializer;
      std::vector<float> values(static_cast<std::size_t>(data.element_count()), 0.5f);
      data = TensorData::from(DataType::kFloat, data.dims, values);
    }
    path_ = (std::filesystem::temp_directory_path() /
             ("cleave_weights_unread_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx"))
                .string();
    export_onnx(graph, path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  Graph load(bool weights_unread) const {
    LoadOptions options;
    options.weights_unread = weights_unread;
    return load_model(path_, options);
  }

  std::string path_;
};

TEST_F(WeightsUnread, TheGraphIsTheOneLoadedWithWeightsWithoutTheirBytes) {
  const Graph whole = load(false);
  const Graph sizes = load(true);
  // Both BatchNorms folded, the bias fused: the passes rewrote the unread weights too.
  EXPECT_EQ(whole.node_count(), 5u);
  EXPECT_EQ(print_graph(sizes, 0), print_graph(whole, 0));
  for (ValueId id : sizes.initializers()) {
    const TensorData& data = *sizes.value(id).initializer;
    const auto bytes = data.element_count() * static_cast<int64_t>(sizeof(float));
    if (bytes >= 4096) {
      EXPECT_FALSE(data.has_data()) << sizes.value(id).name;
    }
  }
}

TEST_F(WeightsUnread, ThePlanOnPaperIsTheOneMadeWithWeightsLoaded) {
  ModelPlanOptions options;
  options.strategy = "auto";
  Machine machine = cpu_machine(3, 2);
  for (Device& device : machine.devices) device.simulated = true;
  options.machine = machine;
  // Static costs: analytical ones measure this host's peak rates each time, as noise.
  const ModelPlan whole = plan_with_costs(load(false), "static", options, {}).plan;
  const ModelPlan sizes = plan_with_costs(load(true), "static", options, {}).plan;
  EXPECT_EQ(sizes.configuration, whole.configuration);
  EXPECT_EQ(sizes.plan.order, whole.plan.order);
  EXPECT_DOUBLE_EQ(sizes.plan.makespan, whole.plan.makespan);
  ASSERT_EQ(sizes.candidates.size(), whole.candidates.size());
  for (std::size_t c = 0; c < whole.candidates.size(); ++c) {
    EXPECT_EQ(sizes.candidates[c].configuration, whole.candidates[c].configuration);
    EXPECT_DOUBLE_EQ(sizes.candidates[c].predicted_seconds, whole.candidates[c].predicted_seconds);
    EXPECT_EQ(sizes.candidates[c].memory_bytes, whole.candidates[c].memory_bytes);
  }
}

}  // namespace
}  // namespace cleave
