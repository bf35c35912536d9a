// The stream planner: firing costs and the placement of filters, chosen before the executor runs.
#include "stream/stream_planner.h"

#include <fmt/core.h>

#include <algorithm>

#include "plan/registry.h"
#include "stream/placement.h"
#include "support/error.h"

namespace cleave {

namespace {

// Per node: seconds of one firing, given or measured; `node_cost` gets the steady-state seconds.
std::vector<double> firing_costs(const StreamProgram& program, const StreamSetup& setup,
                                 const StreamRunOptions& options, std::vector<double>& node_cost) {
  const StreamGraph& graph = setup.graph;
  const std::vector<int64_t>& repetitions = setup.schedule.repetitions;
  std::vector<double> firing;
  if (options.firing_seconds.empty()) {
    node_cost = measure_node_costs(graph, setup.schedule);
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      firing.push_back(node_cost[v] / static_cast<double>(repetitions[v]));
    }
    return firing;
  }
  if (options.firing_seconds.size() != graph.nodes.size()) {
    throw Error(fmt::format("{}: {} firing costs for {} actors", program.origin,
                            options.firing_seconds.size(), graph.nodes.size()));
  }
  firing = options.firing_seconds;
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    node_cost.push_back(firing[v] * static_cast<double>(repetitions[v]));
  }
  return firing;
}

void check_given_placement(const StreamProgram& program, const StreamGraph& graph,
                           const std::vector<int>& placement, int workers) {
  if (placement.size() != graph.nodes.size()) {
    throw Error(fmt::format("{}: placement has {} entries for {} nodes", program.origin,
                            placement.size(), graph.nodes.size()));
  }
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    if (placement[v] < 0 || placement[v] >= workers) {
      throw Error(fmt::format("{}: node \"{}\" placed on worker {} of {}", program.origin,
                              graph.nodes[v].name, placement[v], workers));
    }
  }
}

}  // namespace

std::vector<std::string> stream_planner_names() {
  return planner_names(PlannerFamily::kStream);
}

std::vector<int> place_stream(const std::vector<double>& node_cost, int workers) {
  return place_longest_first(node_cost, workers);
}

StreamPlan plan_stream(const StreamProgram& program, const StreamSetup& setup,
                       const StreamRunOptions& options) {
  StreamPlan plan;
  plan.workers = std::max(options.workers, 1);
  PlacementCosts costs;
  costs.handoff_seconds = options.handoff_seconds;
  costs.handoff_seconds_per_byte = options.handoff_seconds_per_byte;
  costs.item_bytes = channel_item_bytes(setup.channel_items);
  costs.firing_seconds = firing_costs(program, setup, options, plan.node_cost);
  if (options.placement.empty()) {
    plan.placement = place_stream_nodes(setup.graph, setup.schedule, costs, plan.workers,
                                        options.method, options.capacity_factor);
  } else {
    check_given_placement(program, setup.graph, options.placement, plan.workers);
    plan.placement = evaluate_placement(setup.graph, setup.schedule, costs, options.placement,
                                        plan.workers, options.capacity_factor);
  }
  return plan;
}

StreamRunResult run_stream(const StreamProgram& program, const std::vector<Tensor>& inputs,
                           const StreamRunOptions& options) {
  const StreamSetup setup = prepare_stream(program, inputs, options.mixed_items);
  const StreamPlan plan = plan_stream(program, setup, options);
  return execute_stream(program, setup, inputs, plan, options);
}

}  // namespace cleave
