// Helpers for the spatial tests: graphs with random weights, whole-model and split runs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "cost/cost_table.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "spatial/split_model.h"
#include "spatial/split_plan.h"

namespace cleave::testing {

/// The text-form graph with every initializer that has no data filled with seeded values.
inline Graph graph_with_weights(const std::string& text, uint64_t seed = 7) {
  Graph g = parse_graph(text);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  for (ValueId v : g.initializers()) {
    TensorData& t = *g.value(v).initializer;
    if (t.has_data()) continue;
    std::vector<float> values(static_cast<std::size_t>(t.element_count()));
    for (float& x : values) x = t.dtype == DataType::kFloat ? dist(rng) : 0;
    if (t.dtype == DataType::kFloat) t = TensorData::from<float>(t.dtype, t.dims, values);
  }
  return g;
}

/// Three convolutions over a tall image, two outputs of different shapes: split along H, each
/// machine computes about half of every layer, where no task plan has two branches to run at
/// once (with static costs and fast links the split is the fastest prediction).
inline Graph tall_conv_chain() {
  return graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,4,64,12]) {
  @w1: f32[8,4,3,3]
  @w2: f32[8,8,3,3]
  @w3: f32[4,8,3,3]
  %c1: f32[1,8,64,12] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1: f32[1,8,64,12] = Relu(%c1)
  %c2: f32[1,8,64,12] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r1, @w2)
  %r2: f32[1,8,64,12] = Relu(%c2)
  %c3: f32[1,4,64,12] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r2, @w3)
  %t: f32[1,4,64,12] = Tanh(%c3)
  return %t, %r1
})");
}

/// Runs a split as every command does: its partitioned graph and plan on the thread executor,
/// one worker per machine (unpinned: a test may have more machines than the host has cores).
/// Returns the graph outputs by name.
inline std::map<std::string, Tensor> run_split(const SplitResult& r,
                                               const std::map<std::string, Tensor>& inputs) {
  const Graph& graph = r.partitioned.graph;
  const ModelPlan plan =
      split_plan(graph, r.partitioned, static_costs(graph), cpu_machine(r.partitioned.machines, 1));
  ParallelOptions options;
  options.pin_threads = false;
  ParallelExecutor executor(graph, plan.tasks, plan.plan, options);
  const std::vector<Tensor> outputs = executor.run(inputs);
  std::map<std::string, Tensor> named;
  for (std::size_t k = 0; k < outputs.size(); ++k)
    named[graph.value(graph.outputs()[k]).name] = outputs[k];
  return named;
}

/// Largest absolute difference between the whole model's outputs and the split's.
inline double split_error(const Graph& g, const SplitResult& r, uint64_t seed = 3) {
  auto inputs = random_inputs(g, seed);
  Executor whole(g);
  std::vector<Tensor> expected = whole.run(inputs);
  auto got = run_split(r, inputs);
  double worst = 0;
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    const std::string& name = g.value(g.outputs()[k]).name;
    const Tensor& t = got.at(name);
    EXPECT_EQ(t.shape(), expected[k].shape()) << name;
    auto a = expected[k].to_double_vector(), b = t.to_double_vector();
    if (a.size() != b.size()) return INFINITY;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

inline SplitResult split(const Graph& g, int machines, SplitDim dim, bool fuse = true,
                         std::vector<double> speeds = {}) {
  SplitModelOptions o;
  o.split.machines = machines;
  o.split.dim = dim;
  o.split.speeds = std::move(speeds);
  o.fuse = fuse;
  return split_model(g, o);
}

}  // namespace cleave::testing
