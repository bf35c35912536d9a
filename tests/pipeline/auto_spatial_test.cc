// Auto over the spatial family: a split runs in process as a partitioned graph on the thread
// executor with the model's outputs, and replaces auto's choice when predicted and timed faster.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "../spatial/split_testing.h"
#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "pipeline/plan_and_run.h"
#include "pipeline/spatial_run.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Graph conv_chain() {
  return testing::tall_conv_chain();
}

double largest_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].shape(), b[k].shape()) << "output " << k;
    const std::vector<double> x = a[k].to_double_vector(), y = b[k].to_double_vector();
    if (x.size() != y.size()) return INFINITY;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  return worst;
}

TEST(SpatialRun, TheSplitRunsWithTheModelsOutputsInItsOrder) {
  const Graph graph = conv_chain();
  const SpatialCandidate candidate =
      spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 1);
  ASSERT_TRUE(candidate.plan) << candidate.row.rejected;
  EXPECT_THAT(candidate.row.configuration, StartsWith("split over 2 devices along h"));
  EXPECT_DOUBLE_EQ(candidate.row.predicted_seconds, candidate.plan->plan.makespan);
  std::unique_ptr<ParallelExecutor> split =
      make_spatial_executor(candidate, RunRecipe{}, ConvolutionFamily::kBlocked);
  const Graph& partitioned = candidate.split->graph;
  ASSERT_EQ(partitioned.outputs().size(), graph.outputs().size());
  for (std::size_t k = 0; k < graph.outputs().size(); ++k)
    EXPECT_EQ(partitioned.value(partitioned.outputs()[k]).name,
              graph.value(graph.outputs()[k]).name);
  const SampleInputs inputs = random_inputs(graph, 5);
  Executor whole(graph);
  EXPECT_LT(largest_difference(split->run(inputs), whole.run(inputs)), 1e-4);
}

// What holds beyond the tolerance on this chain: each output element is computed by the same
// direct convolution over the same inputs on whichever machine holds it, so the split's
// outputs are the whole model's bit for bit. (A model whose optimized graph gathers or fuses
// nodes differently across the split may differ in the last bits: the demo Inception by
// 1.4e-6.)
TEST(SpatialRun, OnAChainOfConvolutionsTheOutputsAreBitwiseTheSequentialRuns) {
  const Graph graph = conv_chain();
  const SpatialCandidate candidate =
      spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 1);
  ASSERT_TRUE(candidate.plan) << candidate.row.rejected;
  std::unique_ptr<ParallelExecutor> split =
      make_spatial_executor(candidate, RunRecipe{}, ConvolutionFamily::kBlocked);
  const SampleInputs inputs = random_inputs(graph, 8);
  Executor whole(graph);
  const std::vector<Tensor> want = whole.run(inputs), got = split->run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].byte_size(), want[k].byte_size()) << "output " << k;
    EXPECT_EQ(std::memcmp(got[k].raw(), want[k].raw(), want[k].byte_size()), 0) << "output " << k;
  }
}

// The optimizer's residual form (a Conv reading the residual as input 3, `sum_input`, as auto's
// graphs of ResNets have it): each slice adds the residual's rows of its own output.
TEST(SpatialRun, AFusedResidualSumIsSplitWithItsOutput) {
  const Graph graph = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,8,40,10]) {
  @w1: f32[8,8,1,1]
  @w2: f32[8,8,3,3]
  @b2: f32[8]
  %a: f32[1,8,40,10] = Conv[kernel_shape=[1,1]](%x, @w1)
  %y: f32[1,8,40,10] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], sum_input=3, activation="Relu"](%a, @w2, @b2, %x)
  return %y
})");
  const SpatialCandidate candidate =
      spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 1);
  ASSERT_TRUE(candidate.plan) << candidate.row.rejected;
  std::unique_ptr<ParallelExecutor> split =
      make_spatial_executor(candidate, RunRecipe{}, ConvolutionFamily::kBlocked);
  const SampleInputs inputs = random_inputs(graph, 4);
  Executor whole(graph);
  EXPECT_LT(largest_difference(split->run(inputs), whole.run(inputs)), 1e-4);
}

TEST(SpatialRun, SeveralSamplesRunOneAfterAnotherOnEachMachine) {
  const Graph graph = conv_chain();
  const SpatialCandidate candidate =
      spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 3);
  ASSERT_TRUE(candidate.plan) << candidate.row.rejected;
  std::unique_ptr<ParallelExecutor> split =
      make_spatial_executor(candidate, RunRecipe{}, ConvolutionFamily::kBlocked);
  ASSERT_EQ(split->samples(), 3);
  std::vector<SampleInputs> inputs;
  for (int s = 0; s < 3; ++s) inputs.push_back(random_inputs(graph, 10 + s));
  const std::vector<std::vector<Tensor>> got = split->run(inputs);
  Executor whole(graph);
  for (int s = 0; s < 3; ++s)
    EXPECT_LT(largest_difference(got[s], whole.run(inputs[s])), 1e-4) << "sample " << s;
}

// A profile of the model prices the split by a profile of the split: the pieces' convolutions
// at their own shapes and the copies as they run, with the same profiler (and cache).
TEST(SpatialRun, WithProfiledCostsThePiecesAreProfiledAtTheirOwnShapes) {
  const Graph graph = conv_chain();
  CostChoice choice;
  choice.source = "profile";
  choice.family = ConvolutionFamily::kBlocked;
  const SpatialCandidate candidate =
      spatial_candidate(graph, choose_costs(graph, choice), cpu_machine(2, 1), 1);
  ASSERT_TRUE(candidate.plan && candidate.split) << candidate.row.rejected;
  EXPECT_EQ(candidate.plan->plan.notes.at("piece_costs"), "pieces profiled");
  // The split's profile, now cached: every task is predicted with its own node's seconds, a
  // layer's later pieces at least at its first piece's rate (they were profiled warm).
  const CostTable profiled = choose_costs(candidate.split->graph, choice);
  CostTable pieces = profiled;
  price_pieces_as_their_ranks_run_them(*candidate.split, pieces);
  for (const Task& task : candidate.plan->tasks.tasks) {
    EXPECT_DOUBLE_EQ(task.time[0], pieces.seconds(task.node, 1)) << task.name;
    EXPECT_GE(task.time[0], profiled.seconds(task.node, 1)) << task.name;
  }
}

TEST(SpatialRun, WithStaticCostsThePiecesTakeTheirShareOfTheWholeNode) {
  const Graph graph = conv_chain();
  const SpatialCandidate candidate =
      spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 1);
  ASSERT_TRUE(candidate.plan) << candidate.row.rejected;
  EXPECT_EQ(candidate.plan->plan.notes.at("piece_costs"), "pieces priced by share");
}

TEST(SpatialRun, OneDeviceOffersNoSplit) {
  PreparedRun prepared;
  prepared.graph = conv_chain();
  prepared.costs = static_costs(prepared.graph);
  ModelPlan table;
  RunRecipe recipe;
  recipe.machine = cpu_machine(1, 1);
  EXPECT_FALSE(spatial_if_faster(prepared, recipe, table, {}, {}));
  EXPECT_TRUE(table.candidates.empty());
}

// Auto on the chain with a two-device machine file, static costs, and times by the name the
// timer is given: a split's configuration ("split over ..."), else "kept".
struct Fixture {
  std::map<std::string, double> ms;
  std::map<std::string, int> calls;
  RunRecipe recipe;

  explicit Fixture(std::map<std::string, double> times) : ms(std::move(times)) {
    recipe.strategy = "auto";
    recipe.layouts = "blocked";
    recipe.costs = "static";
    recipe.workers = 2;
    recipe.machine = cpu_machine(2, 1);
    recipe.timer = [this](const std::string& name, ExecutorInterface&,
                          const std::vector<SampleInputs>&) {
      const std::string key = name.rfind("split over", 0) == 0 ? "spatial" : "kept";
      ++calls[key];
      return ms.at(key);
    };
  }
};

const PlanCandidate& spatial_row(const ModelPlan& plan) {
  for (const PlanCandidate& row : plan.candidates)
    if (row.family == "spatial") return row;
  throw Error("no spatial row");
}

TEST(AutoSpatial, PredictedAndTimedFasterRunsTheSplit) {
  Fixture f({{"spatial", 1.0}, {"kept", 2.0}});
  const Graph graph = conv_chain();
  PreparedRun prepared = prepare_run(graph, f.recipe);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->family, "spatial");
  EXPECT_THAT(prepared.plan->configuration, StartsWith("split over 2 devices"));
  EXPECT_TRUE(spatial_row(*prepared.plan).chosen);
  EXPECT_GT(f.calls["spatial"], 0);
  ASSERT_NE(prepared.parallel, nullptr);
  EXPECT_EQ(prepared.executor.get(), prepared.parallel);
  EXPECT_EQ(prepared.pipeline, nullptr);
  int chosen = 0;
  for (const PlanCandidate& row : prepared.plan->candidates) {
    chosen += row.chosen;
    if (!row.chosen) {
      EXPECT_FALSE(row.rejected.empty()) << row.configuration;
    }
  }
  EXPECT_EQ(chosen, 1);
  Executor whole(graph);
  const std::vector<Tensor> got = prepared.executor->run(prepared.inputs).front();
  EXPECT_LT(largest_difference(got, whole.run(prepared.inputs.front())), 1e-4);
}

TEST(AutoSpatial, TimedSlowerKeepsThePlanAndSaysWhy) {
  Fixture f({{"spatial", 3.0}, {"kept", 2.0}});
  PreparedRun prepared = prepare_run(conv_chain(), f.recipe);
  EXPECT_NE(prepared.plan->family, "spatial");
  const PlanCandidate& row = spatial_row(*prepared.plan);
  EXPECT_FALSE(row.chosen);
  EXPECT_THAT(row.rejected, HasSubstr("slower when timed than"));
  EXPECT_THAT(row.rejected, HasSubstr("3.000 ms vs 2.000 ms"));
}

// The decision on given predictions: a split offered slower than what auto kept is not timed.
TEST(AutoSpatial, PredictedSlowerIsNotTimed) {
  Fixture f({{"spatial", 1.0}, {"kept", 2.0}});
  f.recipe.machine.reset();  // auto as without a machine file; the split is offered below
  const Graph graph = conv_chain();
  PreparedRun prepared = prepare_run(graph, f.recipe);
  SpatialCandidate offered = spatial_candidate(graph, static_costs(graph), cpu_machine(2, 1), 1);
  ASSERT_TRUE(offered.plan) << offered.row.rejected;
  offered.row.predicted_seconds = 1e9;
  const KeptRun kept{prepared.plan->configuration, prepared.plan->plan.makespan,
                     prepared.executor.get()};
  const auto input_of = [&](int s) { return random_inputs(prepared.graph, s); };
  f.calls.clear();
  EXPECT_FALSE(spatial_if_faster(prepared, f.recipe, *prepared.plan, kept, input_of, offered));
  EXPECT_EQ(f.calls["spatial"], 0);
  EXPECT_THAT(spatial_row(*prepared.plan).rejected, HasSubstr("not faster than"));
}

TEST(AutoSpatial, ARowWithoutASplitKeepsItsReason) {
  Fixture f({{"spatial", 1.0}, {"kept", 2.0}});
  f.recipe.machine.reset();
  PreparedRun prepared = prepare_run(conv_chain(), f.recipe);
  SpatialCandidate offered;
  offered.row.family = "spatial";
  offered.row.configuration = "split over 2 devices";
  offered.row.predicted_seconds = INFINITY;
  offered.row.rejected = "over memory along every dim (device 0)";
  const KeptRun kept{prepared.plan->configuration, prepared.plan->plan.makespan,
                     prepared.executor.get()};
  f.calls.clear();
  EXPECT_FALSE(spatial_if_faster(prepared, f.recipe, *prepared.plan, kept, {}, offered));
  EXPECT_EQ(f.calls["spatial"], 0);
  EXPECT_EQ(spatial_row(*prepared.plan).rejected, "over memory along every dim (device 0)");
}

}  // namespace
}  // namespace cleave
