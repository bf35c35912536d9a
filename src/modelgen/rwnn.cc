// Randomly wired network generator: one Relu + Conv per DAG node, Adds where paths meet.
#include "modelgen/rwnn.h"

#include <fmt/core.h>

#include <cmath>

#include "modelgen/model_builder.h"

namespace cleave {

namespace {

// Weights come from their own stream so the structure stays the same as generate_random_dag's
// for the same seed.
constexpr uint64_t kWeightStream = 0x9e3779b97f4a7c15ULL;

}  // namespace

Graph build_rwnn(const RandomDag& dag, const RwnnOptions& options) {
  if (options.channels < 1 || options.height < 1 || options.width < 1 || options.batch < 1 ||
      options.classes < 1) {
    throw Error("rwnn: channels, size, batch and classes must be positive");
  }
  ModelBuilder builder("rwnn", options.dag.seed ^ kWeightStream);
  ValueId x = builder.input("input", {options.batch, 3, options.height, options.width});
  ValueId stem = builder.conv("stem", x, options.channels, 3, 1, 1);

  const auto predecessors = dag.predecessors();
  std::vector<ValueId> node_output(dag.node_count, kNoValue);
  const int entry = dag.module_inputs.front().front();
  for (int v : dag.topological_order()) {
    const std::string prefix = fmt::format("m{}_n{}", dag.module_of(v), v % dag.nodes_per_module);
    std::vector<ValueId> inputs;
    if (v == entry) inputs.push_back(stem);
    for (int u : predecessors[v]) inputs.push_back(node_output[u]);
    if (inputs.empty()) {
      throw Error(fmt::format("rwnn: DAG node {} ({}) has no input", v, prefix));
    }
    ValueId sum = inputs[0];
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      sum = builder.add(fmt::format("{}_add{}", prefix, i), sum, inputs[i]);
    }
    const double gain = 1.0 / std::sqrt(static_cast<double>(inputs.size()));
    node_output[v] =
        builder.conv(prefix, builder.relu(prefix + "_relu", sum), options.channels, 3, 1, 1, gain);
  }

  ValueId exit = node_output[dag.module_outputs.back().front()];
  ValueId y = builder.global_average_pool("head_pool", exit);
  y = builder.flatten("head_flatten", y);
  builder.output(builder.gemm("logits", y, options.classes));
  return builder.take();
}

Graph generate_rwnn(const RwnnOptions& options) {
  return build_rwnn(generate_random_dag(options.dag), options);
}

}  // namespace cleave
