// Gathers the per-node and whole-graph numbers of `cleave inspect` and prints them.
#include "analysis/model_summary.h"

#include <fmt/compile.h>
#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "analysis/flops.h"
#include "ir/text.h"

namespace cleave {

namespace {

ValueSummary describe_value(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  return {value.name, print_type(value.dtype, value.shape)};
}

nlohmann::json optional_number(const std::optional<int64_t>& number) {
  return number ? nlohmann::json(*number) : nlohmann::json(nullptr);
}

// Formats are compiled (FMT_COMPILE) where they run once per node: parsing the format string
// at run time took most of a large model's report (200k critical-path lines).
std::string scaled(double value, const char* const* units, int unit_count, double step) {
  int unit = 0;
  while (unit + 1 < unit_count && std::abs(value) >= step) {
    value /= step;
    ++unit;
  }
  return unit == 0 ? fmt::format(FMT_COMPILE("{:.0f} {}"), value, units[0])
                   : fmt::format(FMT_COMPILE("{:.1f} {}"), value, units[unit]);
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return scaled(static_cast<double>(bytes), kUnits, 5, 1024.0);
}

std::string format_flops(int64_t flops) {
  static const char* const kUnits[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  return scaled(static_cast<double>(flops), kUnits, 6, 1000.0);
}

std::string format_count(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

ModelSummary summarize_model(const Graph& graph) {
  ModelSummary summary;
  summary.graph_name = graph.name;
  summary.ir_version = graph.ir_version;
  summary.opset_imports = graph.opset_imports;
  for (ValueId id : graph.inputs()) summary.inputs.push_back(describe_value(graph, id));
  for (ValueId id : graph.outputs()) summary.outputs.push_back(describe_value(graph, id));

  for (ValueId id : graph.initializers()) {
    const TensorData& data = *graph.value(id).initializer;
    const int64_t count = data.element_count();
    ++summary.initializer_count;
    summary.parameter_count += count;
    summary.parameter_bytes += count * static_cast<int64_t>(element_size(data.dtype));
  }

  summary.static_cost = analyze_static_cost(graph);
  std::vector<bool> on_path(graph.node_capacity(), false);
  for (NodeId id : summary.static_cost.critical_path) on_path[id] = true;

  std::map<std::string, int64_t> histogram;
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    NodeSummary entry;
    entry.id = id;
    entry.name = node.name.empty() ? graph.describe(id) : node.name;
    entry.op_type = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    for (ValueId output : node.outputs) {
      const Value& value = graph.value(output);
      entry.output_types.push_back(print_type(value.dtype, value.shape));
    }
    entry.static_weight = summary.static_cost.node_weight[id];
    entry.flops = node_flops(graph, id);
    entry.parameter_bytes = node_parameter_bytes(graph, id);
    entry.output_bytes = node_output_bytes(graph, id);
    entry.on_critical_path = on_path[id];

    ++summary.node_count;
    summary.edge_count += static_cast<int64_t>(graph.predecessors(id).size());
    if (entry.flops) {
      summary.flops += *entry.flops;
    } else {
      ++summary.nodes_with_unknown_flops;
    }
    if (entry.output_bytes) {
      summary.activation_bytes += *entry.output_bytes;
    } else {
      ++summary.nodes_with_unknown_activation_bytes;
    }
    ++histogram[entry.op_type];
    summary.nodes.push_back(std::move(entry));
  }
  summary.op_histogram.assign(histogram.begin(), histogram.end());
  std::stable_sort(summary.op_histogram.begin(), summary.op_histogram.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return summary;
}

namespace {

// The critical path lists node ids; a table by id keeps printing it linear in the node count
// (a search per path node made inspect quadratic: 200k nodes took minutes).
std::vector<const NodeSummary*> nodes_by_id(const ModelSummary& summary) {
  NodeId largest = -1;
  for (const NodeSummary& node : summary.nodes) largest = std::max(largest, node.id);
  std::vector<const NodeSummary*> table(static_cast<std::size_t>(largest + 1), nullptr);
  for (const NodeSummary& node : summary.nodes) {
    if (node.id >= 0) table[static_cast<std::size_t>(node.id)] = &node;
  }
  return table;
}

const NodeSummary* find_node(const std::vector<const NodeSummary*>& table, NodeId id) {
  if (id < 0 || static_cast<std::size_t>(id) >= table.size()) return nullptr;
  return table[static_cast<std::size_t>(id)];
}

}  // namespace

nlohmann::json summary_to_json(const ModelSummary& summary) {
  nlohmann::json json;
  json["graph"] = {{"name", summary.graph_name},
                   {"ir_version", summary.ir_version},
                   {"opset_imports", summary.opset_imports}};
  auto values = [](const std::vector<ValueSummary>& list) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& v : list) array.push_back({{"name", v.name}, {"type", v.type}});
    return array;
  };
  json["inputs"] = values(summary.inputs);
  json["outputs"] = values(summary.outputs);
  json["node_count"] = summary.node_count;
  json["edge_count"] = summary.edge_count;
  json["initializer_count"] = summary.initializer_count;
  json["parameter_count"] = summary.parameter_count;
  json["parameter_bytes"] = summary.parameter_bytes;
  json["flops"] = summary.flops;
  json["nodes_with_unknown_flops"] = summary.nodes_with_unknown_flops;
  json["activation_bytes"] = summary.activation_bytes;
  json["nodes_with_unknown_activation_bytes"] = summary.nodes_with_unknown_activation_bytes;
  nlohmann::json histogram = nlohmann::json::array();
  for (const auto& [op, count] : summary.op_histogram) {
    histogram.push_back({{"op_type", op}, {"count", count}});
  }
  json["op_histogram"] = histogram;

  const StaticCostReport& cost = summary.static_cost;
  nlohmann::json path = nlohmann::json::array();
  const std::vector<const NodeSummary*> by_id = nodes_by_id(summary);
  for (NodeId id : cost.critical_path) {
    if (const NodeSummary* node = find_node(by_id, id)) path.push_back(node->name);
  }
  json["static_cost"] = {{"total_weight", cost.total_weight},
                         {"critical_path_length", cost.critical_path_length},
                         {"critical_path", path},
                         {"critical_path_node_count", cost.critical_path.size()},
                         {"parallelism", cost.parallelism}};

  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeSummary& n : summary.nodes) {
    nodes.push_back({{"id", n.id},
                     {"name", n.name},
                     {"op_type", n.op_type},
                     {"output_types", n.output_types},
                     {"static_weight", n.static_weight},
                     {"flops", optional_number(n.flops)},
                     {"parameter_bytes", n.parameter_bytes},
                     {"output_bytes", optional_number(n.output_bytes)},
                     {"on_critical_path", n.on_critical_path}});
  }
  json["nodes"] = nodes;
  return json;
}

std::string format_summary(const ModelSummary& summary) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  std::string opsets;
  for (const auto& [domain, version] : summary.opset_imports) {
    if (!opsets.empty()) opsets += ", ";
    opsets += fmt::format("{}={}", domain.empty() ? "ai.onnx" : domain, version);
  }
  line(fmt::format("graph:        {} (ONNX IR {}, opsets {})", summary.graph_name,
                   summary.ir_version, opsets));
  for (const auto& v : summary.inputs) line(fmt::format("input:        {} {}", v.name, v.type));
  for (const auto& v : summary.outputs) line(fmt::format("output:       {} {}", v.name, v.type));
  line(fmt::format("nodes:        {} ({} edges between them)", format_count(summary.node_count),
                   format_count(summary.edge_count)));
  line(fmt::format("parameters:   {} in {} initializers ({})",
                   format_count(summary.parameter_count), format_count(summary.initializer_count),
                   format_bytes(summary.parameter_bytes)));
  std::string flops = format_flops(summary.flops);
  if (summary.nodes_with_unknown_flops > 0) {
    flops += fmt::format(" (+ {} nodes unknown)", summary.nodes_with_unknown_flops);
  }
  line(fmt::format("FLOPs:        {}", flops));
  std::string activations = format_bytes(summary.activation_bytes);
  if (summary.nodes_with_unknown_activation_bytes > 0) {
    activations +=
        fmt::format(" (+ {} nodes unknown)", summary.nodes_with_unknown_activation_bytes);
  }
  line(fmt::format("activations:  {} (all node outputs)", activations));

  const StaticCostReport& cost = summary.static_cost;
  line("");
  line("static cost (Ramiel weights, docs/commands/inspect.md):");
  line(fmt::format("  total node weight      {}", cost.total_weight));
  line(fmt::format("  critical path length   {} ({} nodes, {} edges)", cost.critical_path_length,
                   cost.critical_path.size(),
                   cost.critical_path.empty() ? 0 : cost.critical_path.size() - 1));
  line(fmt::format("  parallelism            {:.2f}x", cost.parallelism));

  line("");
  line("op histogram:");
  std::size_t width = 0;
  for (const auto& [op, count] : summary.op_histogram) width = std::max(width, op.size());
  for (const auto& [op, count] : summary.op_histogram) {
    line(fmt::format("  {:<{}}  {:>6}", op, width, count));
  }

  line("");
  line("critical path:");
  const std::vector<const NodeSummary*> by_id = nodes_by_id(summary);
  for (NodeId id : cost.critical_path) {
    const NodeSummary* it = find_node(by_id, id);
    if (!it) continue;
    const std::string flops_text = it->flops ? format_flops(*it->flops) : "? FLOP";
    fmt::format_to(std::back_inserter(out),
                   FMT_COMPILE("  {:<28} {:<18} weight {:>2}  {:>12}  {}\n"), it->name, it->op_type,
                   it->static_weight, flops_text,
                   it->output_types.empty() ? std::string_view() : it->output_types.front());
  }
  return out;
}

}  // namespace cleave
