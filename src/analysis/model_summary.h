// The numbers `cleave inspect` reports about a model: sizes, FLOPs, op mix, critical path.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/static_cost.h"
#include "ir/graph.h"

namespace cleave {

struct NodeSummary {
  NodeId id = -1;
  std::string name;  ///< The node's name, or Graph::describe's op type and id when unnamed.
  std::string op_type;
  std::vector<std::string> output_types;  ///< Text-form types, e.g. "f32[1,64,32,32]".
  int64_t static_weight = 0;
  std::optional<int64_t> flops;
  int64_t parameter_bytes = 0;
  std::optional<int64_t> output_bytes;
  bool on_critical_path = false;
};

struct ValueSummary {
  std::string name;
  std::string type;  ///< Text-form type.
};

struct ModelSummary {
  std::string graph_name;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;
  std::vector<ValueSummary> inputs;
  std::vector<ValueSummary> outputs;
  int64_t node_count = 0;
  int64_t edge_count = 0;  ///< Distinct producer -> consumer pairs of nodes.
  int64_t initializer_count = 0;
  int64_t parameter_count = 0;  ///< Elements of all initializers.
  int64_t parameter_bytes = 0;
  int64_t flops = 0;  ///< Sum over the nodes whose FLOPs are known.
  int64_t nodes_with_unknown_flops = 0;
  int64_t activation_bytes = 0;  ///< Sum of node output bytes where known.
  int64_t nodes_with_unknown_activation_bytes = 0;
  /// (op type, count), most frequent first, ties by name.
  std::vector<std::pair<std::string, int64_t>> op_histogram;
  StaticCostReport static_cost;
  std::vector<NodeSummary> nodes;  ///< Live nodes in topological order.
};

/// Computes every number of the report. Throws Error on a cyclic graph.
ModelSummary summarize_model(const Graph& graph);

/// All numbers, machine-readable (the schema is in docs/commands/inspect.md); unknown FLOPs are
/// null.
nlohmann::json summary_to_json(const ModelSummary& summary);

/// The human report: sizes with units, the histogram, the critical path by node names.
std::string format_summary(const ModelSummary& summary);

/// "1.5 KiB", "3.2 MiB", ...: binary units, one decimal.
std::string format_bytes(int64_t bytes);
/// "830 FLOP", "83.1 MFLOP", "1.2 GFLOP": decimal units, one decimal.
std::string format_flops(int64_t flops);
/// "1,234,567".
std::string format_count(int64_t count);

}  // namespace cleave
