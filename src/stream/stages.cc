// Cutting a graph into FLOP-balanced contiguous stages, each one model filter of a pipeline.
#include "stream/stages.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "analysis/flops.h"

namespace cleave {

namespace {

// The values crossing the cut before position `p` of `order`: produced before it (or graph
// inputs) and read at or after it, or graph outputs; graph inputs first, then by value id.
std::vector<ValueId> crossing(const Graph& graph, const std::vector<NodeId>& order,
                              const std::vector<int>& position, std::size_t p) {
  std::set<ValueId> seen;
  std::vector<ValueId> out;
  const auto before = [&](ValueId v) {
    const Value& value = graph.value(v);
    if (value.initializer) return false;
    return value.producer < 0 ? value.is_graph_input
                              : static_cast<std::size_t>(position[value.producer]) < p;
  };
  for (ValueId v : graph.inputs()) {
    if (seen.insert(v).second) out.push_back(v);
  }
  std::vector<ValueId> rest;
  for (std::size_t q = p; q < order.size(); ++q) {
    for (ValueId v : graph.node(order[q]).inputs) {
      if (v != kNoValue && before(v) && seen.insert(v).second) rest.push_back(v);
    }
  }
  for (ValueId v : graph.outputs()) {
    if (before(v) && seen.insert(v).second) rest.push_back(v);
  }
  std::sort(rest.begin(), rest.end());
  // Graph inputs only cross when something at or after the cut still reads them.
  std::vector<ValueId> kept;
  for (ValueId v : out) {
    bool read =
        std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
    for (std::size_t q = p; q < order.size() && !read; ++q) {
      const auto& ins = graph.node(order[q]).inputs;
      read = std::find(ins.begin(), ins.end(), v) != ins.end();
    }
    if (read || p == 0) kept.push_back(v);
  }
  kept.insert(kept.end(), rest.begin(), rest.end());
  return kept;
}

std::shared_ptr<Graph> stage_graph(const Graph& graph, const std::vector<NodeId>& nodes,
                                   const std::vector<ValueId>& in, const std::vector<ValueId>& out,
                                   int k) {
  auto g = std::make_shared<Graph>();
  g->name = fmt::format("stage{}", k);
  g->opset_imports = graph.opset_imports;
  g->ir_version = graph.ir_version;
  std::map<ValueId, ValueId> local;
  for (ValueId v : in) {
    const Value& value = graph.value(v);
    local[v] = g->add_input(value.name, value.dtype, value.shape);
  }
  for (NodeId id : nodes) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) {
      if (v == kNoValue) {
        inputs.push_back(kNoValue);
        continue;
      }
      if (!local.count(v)) {
        const Value& value = graph.value(v);
        if (!value.initializer) {
          throw Error(fmt::format("stage {}: {} reads \"{}\", which reaches no stage input", k,
                                  graph.describe(id), value.name));
        }
        local[v] = g->add_initializer(value.name, *value.initializer);
      }
      inputs.push_back(local.at(v));
    }
    std::vector<ValueId> outputs;
    for (ValueId v : node.outputs) {
      const Value& value = graph.value(v);
      local[v] = g->add_value(value.name, value.dtype, value.shape);
      outputs.push_back(local[v]);
    }
    g->add_node(node.op_type, inputs, outputs, node.attributes, node.name, node.domain);
  }
  for (ValueId v : out) {
    const ValueId here = local.at(v);
    if (g->value(here).is_graph_input || g->value(here).is_graph_output) {
      // Passed through (or pushed twice): an output of its own.
      const Value& value = graph.value(v);
      const ValueId copy =
          g->add_value(fmt::format("{}.s{}", value.name, k), value.dtype, value.shape);
      g->add_node("Identity", {here}, {copy});
      g->mark_output(copy);
      continue;
    }
    g->mark_output(here);
  }
  return g;
}

}  // namespace

StagedStream graph_to_stages(const Graph& graph, int stages, const std::string& name) {
  return graph_to_stages(graph, stages, name, {});
}

StagedStream graph_to_stages(const Graph& graph, int stages, const std::string& name,
                             const std::vector<double>& node_cost) {
  const std::vector<NodeId> order = graph.topological_order();
  if (stages < 1 || static_cast<std::size_t>(stages) > order.size()) {
    throw Error(fmt::format("stream stages: {} stages for a graph of {} nodes (need 1..{})", stages,
                            order.size(), order.size()));
  }
  std::vector<int> position(graph.node_capacity(), -1);
  if (!node_cost.empty() && node_cost.size() < graph.node_capacity()) {
    throw Error(fmt::format("stream stages: {} node costs for a graph of {} node ids",
                            node_cost.size(), graph.node_capacity()));
  }
  std::vector<int64_t> cost(order.size());
  std::vector<double> weight(order.size());
  double total = 0;
  for (std::size_t p = 0; p < order.size(); ++p) {
    position[order[p]] = static_cast<int>(p);
    cost[p] = std::max<int64_t>(1, node_flops(graph, order[p]).value_or(0));
    weight[p] =
        node_cost.empty() ? static_cast<double>(cost[p]) : std::max(0.0, node_cost[order[p]]);
    total += weight[p];
  }
  // Cut where the running FLOPs pass k/K of the total, keeping every stage non-empty.
  std::vector<std::size_t> begin = {0};
  double running = 0;
  for (std::size_t p = 0; p < order.size() && static_cast<int>(begin.size()) < stages; ++p) {
    running += weight[p];
    const auto k = static_cast<int64_t>(begin.size());
    const std::size_t left = order.size() - (p + 1);
    const bool must = left == static_cast<std::size_t>(stages) - begin.size();
    if (must || running >= total * static_cast<double>(k) / stages) {
      begin.push_back(p + 1);
    }
  }
  begin.push_back(order.size());

  StagedStream out;
  out.root.kind = StreamKind::kPipeline;
  out.root.name = name;
  std::vector<ValueId> in = crossing(graph, order, position, 0);
  for (int k = 0; k < stages; ++k) {
    const std::vector<NodeId> nodes(order.begin() + begin[k], order.begin() + begin[k + 1]);
    const bool last = k + 1 == stages;
    const std::vector<ValueId> next =
        last ? graph.outputs() : crossing(graph, order, position, begin[k + 1]);
    Stream s;
    s.name = fmt::format("stage{}", k);
    s.op = FilterOp::kModel;
    s.model = s.name + ".onnx";
    s.graph = stage_graph(graph, nodes, in, next, k);
    s.pop = s.peek = static_cast<int64_t>(in.size());
    s.push = static_cast<int64_t>(next.size());
    int64_t flops = 0;
    double seconds = 0;
    for (std::size_t p = begin[k]; p < begin[k + 1]; ++p) {
      flops += cost[p];
      seconds += weight[p];
    }
    if (!node_cost.empty()) out.stage_cost.push_back(seconds);
    out.stage_nodes.push_back(static_cast<int64_t>(nodes.size()));
    out.stage_flops.push_back(flops);
    if (!last) out.cut_values.push_back(static_cast<int64_t>(next.size()));
    out.root.streams.push_back(std::move(s));
    in = next;
  }
  return out;
}

double pipeline_seconds(const StagedStream& staged, int samples) {
  double sum = 0, slowest = 0;
  for (double seconds : staged.stage_cost) {
    sum += seconds;
    slowest = std::max(slowest, seconds);
  }
  return sum + (samples - 1) * slowest;
}

}  // namespace cleave
