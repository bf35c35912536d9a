// Cost tables on disk: the JSON a profile is cached as, read back with every field checked.
#include <fmt/core.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "support/json_file.h"

namespace cleave {

nlohmann::json cost_table_to_json(const CostTable& table, const Graph& graph) {
  nlohmann::json nodes = nlohmann::json::array();
  for (NodeId id : graph.node_ids()) {
    const NodeCost& cost = table.nodes[id];
    nodes.push_back({{"node", graph.node(id).name},
                     {"op", graph.node(id).op_type},
                     {"seconds", cost.seconds},
                     {"output_bytes", cost.output_bytes},
                     {"weight_bytes", cost.weight_bytes},
                     {"flops", cost.flops}});
    if (cost.busy_seconds) nodes.back()["busy_seconds"] = *cost.busy_seconds;
  }
  nlohmann::json json = {
      {"source", table.source}, {"fingerprint", graph_fingerprint(graph)}, {"nodes", nodes}};
  if (!table.run_seconds.empty()) {
    json["run_seconds"] = table.run_seconds;
    json["calibration"] = table.calibration;
    json["disturbed_blocks"] = table.disturbed_blocks;
  }
  if (!table.context.empty()) json["context"] = table.context;
  if (table.conditions) json["conditions"] = conditions_to_json(*table.conditions);
  if (table.has_busy_seconds()) {
    json["busy_run_seconds"] = table.busy_run_seconds;
    json["busy_neighbours"] = table.busy_neighbours;
  }
  return json;
}

CostTable cost_table_from_json(const nlohmann::json& json, const Graph& graph,
                               const std::string& origin) {
  const JsonField root(json, origin);
  root.expect_object();
  const std::optional<JsonField> fingerprint = root.find("fingerprint");
  if (!fingerprint || fingerprint->string() != graph_fingerprint(graph)) {
    throw Error(fmt::format("{}: cost table was made for another graph", origin));
  }
  CostTable table;
  table.source = root.at("source").string();
  // Times are checked like any input: a negative or infinite time (an edited cache) would make
  // every plan's prediction meaningless.
  const auto seconds_list = [](const JsonField& list) {
    std::vector<double> values;
    for (std::size_t k = 0; k < list.size(); ++k) values.push_back(list.at(k).non_negative());
    return values;
  };
  if (auto field = root.find("run_seconds")) table.run_seconds = seconds_list(*field);
  if (auto field = root.find("calibration")) table.calibration = seconds_list(*field);
  if (auto field = root.find("disturbed_blocks")) {
    for (std::size_t k = 0; k < field->size(); ++k) {
      table.disturbed_blocks.push_back(
          static_cast<int>(field->at(k).integer(0, std::numeric_limits<int>::max())));
    }
  }
  if (auto field = root.find("context")) table.context = field->string();
  if (!table.context.empty() && table.context != "in-context" && table.context != "alone")
    root.at("context").fail("\"in-context\" or \"alone\"");
  if (auto field = root.find("conditions")) table.conditions = conditions_from_json(*field);
  if (auto field = root.find("busy_run_seconds")) table.busy_run_seconds = field->non_negative();
  if (auto field = root.find("busy_neighbours")) {
    table.busy_neighbours = static_cast<int>(field->integer(0, std::numeric_limits<int>::max()));
  }
  table.nodes.resize(graph.node_capacity());
  std::vector<NodeId> ids = graph.node_ids();
  const JsonField nodes = root.at("nodes");
  if (nodes.size() != ids.size())
    throw Error(
        fmt::format("{}: cost table has {} nodes, graph {}", origin, nodes.size(), ids.size()));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const JsonField entry = nodes.at(i);
    NodeCost& cost = table.nodes[ids[i]];
    cost.seconds = seconds_list(entry.at("seconds"));
    if (cost.seconds.empty()) entry.at("seconds").fail("at least one time");
    cost.output_bytes = entry.at("output_bytes").non_negative();
    cost.weight_bytes = entry.at("weight_bytes").non_negative();
    cost.flops = entry.at("flops").non_negative();
    // An in-context table prices multi-worker plans from these: every node has one.
    if (table.context == "in-context" || entry.find("busy_seconds"))
      cost.busy_seconds = entry.at("busy_seconds").non_negative();
  }
  return table;
}

}  // namespace cleave
