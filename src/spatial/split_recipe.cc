// A split's options to JSON and back, exactly, checked against the graph they split.
#include "spatial/split_recipe.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "machine/machine.h"
#include "support/error.h"
#include "support/json_file.h"

namespace cleave {

namespace {

// JSON has no infinity; a machine file's diagonal or an unset rate may be one.
nlohmann::json exact(double value) {
  if (std::isfinite(value)) return value;
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

double exact_of(const JsonField& field) {
  if (field.json().is_string()) {
    const std::string text = field.string();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    field.fail("a number, \"inf\", \"-inf\" or \"nan\"");
  }
  return field.number();
}

nlohmann::json exact_list(const std::vector<double>& values) {
  nlohmann::json list = nlohmann::json::array();
  for (double value : values) list.push_back(exact(value));
  return list;
}

std::vector<double> exact_list_of(const JsonField& field) {
  std::vector<double> values;
  for (std::size_t i = 0; i < field.size(); ++i) values.push_back(exact_of(field.at(i)));
  return values;
}

nlohmann::json exact_table(const std::vector<std::vector<double>>& rows) {
  nlohmann::json table = nlohmann::json::array();
  for (const auto& row : rows) table.push_back(exact_list(row));
  return table;
}

std::vector<std::vector<double>> exact_table_of(const JsonField& field) {
  std::vector<std::vector<double>> rows;
  for (std::size_t i = 0; i < field.size(); ++i) rows.push_back(exact_list_of(field.at(i)));
  return rows;
}

SplitDim dim_of(const JsonField& field) {
  const std::optional<SplitDim> dim =
      field.json().is_string() ? parse_split_dim(field.string()) : std::nullopt;
  if (!dim) field.fail("\"h\", \"w\", \"c\", \"hw\" or \"none\"");
  return *dim;
}

// A list of one entry per machine, or none.
void require_per_machine(const JsonField& field, std::size_t size, int machines) {
  if (size != 0 && size != static_cast<std::size_t>(machines))
    field.fail(fmt::format("{} entries (one per machine) or none", machines));
}

}  // namespace

nlohmann::json split_recipe_json(const SplitModelOptions& options) {
  nlohmann::json layers = nlohmann::json::object();
  for (const auto& [name, config] : options.split.layers) {
    nlohmann::json entry = {{"shares", exact_list(config.shares)}};
    if (config.dim) entry["dim"] = std::string(split_dim_name(*config.dim));
    layers[name] = entry;
  }
  const SplitCostModel& cost = options.cost;
  nlohmann::json recipe = {{"machines", options.split.machines},
                           {"dim", std::string(split_dim_name(options.split.dim))},
                           {"speeds", exact_list(options.split.speeds)},
                           {"layers", layers},
                           {"fuse", options.fuse},
                           {"cost",
                            {{"flops_per_second", exact(cost.flops_per_second)},
                             {"bytes_per_second", exact(cost.bytes_per_second)},
                             {"latency_seconds", exact(cost.latency_seconds)},
                             {"copy_bytes_per_second", exact(cost.copy_bytes_per_second)},
                             {"seconds_per_copy", exact(cost.seconds_per_copy)},
                             {"speeds", exact_list(cost.speeds)},
                             {"bandwidth", exact_table(cost.bandwidth)},
                             {"latency", exact_table(cost.latency)},
                             {"fixed_fuse_depth", cost.fixed_fuse_depth}}}};
  // The search priced each halo's receiving end on the machine (SplitCostModel::receive_seconds),
  // and that decides which tiles fuse: without it a rank rebuilt another partitioned graph
  // than rank 0's whenever the ends tipped a decision.
  // So do the sender's cost per message and a shared link's queue (exchange_seconds).
  if (cost.machine && (cost.machine->prices_message_ends() || cost.machine->queues_on_one_link())) {
    std::vector<double> speeds;
    for (const Device& device : cost.machine->devices) speeds.push_back(device.speed);
    recipe["cost"]["message_ends"] = {
        {"endpoint_bandwidth", exact(cost.machine->endpoint_bandwidth)},
        {"wake_seconds", exact(cost.machine->wake_seconds)},
        {"send_seconds", exact(cost.machine->send_seconds)},
        {"shared_link", cost.machine->queues_on_one_link()},
        {"link_burst_bytes", exact(cost.machine->link_burst_bytes)},
        {"device_speeds", exact_list(speeds)}};
  }
  return recipe;
}

SplitModelOptions split_recipe_from_json(const nlohmann::json& recipe, const Graph& graph,
                                         const std::string& origin) {
  const JsonField root(recipe, origin);
  root.expect_object();
  SplitModelOptions options;
  options.figures_only = true;
  SplitOptions& split = options.split;
  split.machines = static_cast<int>(root.at("machines").integer(1, 1 << 16));
  split.dim = dim_of(root.at("dim"));
  split.speeds = exact_list_of(root.at("speeds"));
  require_per_machine(root.at("speeds"), split.speeds.size(), split.machines);
  const JsonField layers = root.at("layers");
  layers.expect_object();
  for (const auto& [name, _] : layers.json().items()) {
    const JsonField entry = layers.at(name);
    entry.expect_object();
    LayerConfig config;
    config.shares = exact_list_of(entry.at("shares"));
    if (const std::optional<JsonField> dim = entry.find("dim")) config.dim = dim_of(*dim);
    split.layers[name] = config;
  }
  try {
    validate_layer_configs(graph, split);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", origin, e.what()));
  }
  options.fuse = root.at("fuse").boolean();
  const JsonField cost_field = root.at("cost");
  SplitCostModel& cost = options.cost;
  cost.flops_per_second = exact_of(cost_field.at("flops_per_second"));
  cost.bytes_per_second = exact_of(cost_field.at("bytes_per_second"));
  cost.latency_seconds = exact_of(cost_field.at("latency_seconds"));
  cost.copy_bytes_per_second = exact_of(cost_field.at("copy_bytes_per_second"));
  cost.seconds_per_copy = exact_of(cost_field.at("seconds_per_copy"));
  cost.speeds = exact_list_of(cost_field.at("speeds"));
  require_per_machine(cost_field.at("speeds"), cost.speeds.size(), split.machines);
  cost.bandwidth = exact_table_of(cost_field.at("bandwidth"));
  cost.latency = exact_table_of(cost_field.at("latency"));
  for (const char* table : {"bandwidth", "latency"}) {
    const JsonField rows = cost_field.at(table);
    require_per_machine(rows, rows.size(), split.machines);
    for (std::size_t i = 0; i < rows.size(); ++i)
      require_per_machine(rows.at(i), rows.at(i).size(), split.machines);
  }
  cost.fixed_fuse_depth = static_cast<int>(
      cost_field.at("fixed_fuse_depth").integer(0, std::numeric_limits<int>::max()));
  if (const std::optional<JsonField> ends = cost_field.find("message_ends")) {
    ends->expect_object();
    auto machine = std::make_shared<Machine>();
    machine->name = "split recipe";
    machine->shared_memory = false;
    machine->endpoint_bandwidth = exact_of(ends->at("endpoint_bandwidth"));
    machine->wake_seconds = exact_of(ends->at("wake_seconds"));
    // Absent in the recipes of splits written before these were priced.
    if (const std::optional<JsonField> send = ends->find("send_seconds"))
      machine->send_seconds = exact_of(*send);
    if (const std::optional<JsonField> shared = ends->find("shared_link"))
      machine->shared_link = shared->boolean();
    if (const std::optional<JsonField> burst = ends->find("link_burst_bytes"))
      machine->link_burst_bytes = exact_of(*burst);
    const JsonField speeds = ends->at("device_speeds");
    for (double speed : exact_list_of(speeds)) {
      if (!(speed > 0)) speeds.fail("positive speeds, one per device");
      Device device;
      device.name = fmt::format("rank{}", machine->devices.size());
      device.speed = speed;
      machine->devices.push_back(device);
    }
    if (machine->devices.size() < static_cast<std::size_t>(split.machines))
      speeds.fail(fmt::format("at least {} entries (one per machine)", split.machines));
    cost.machine = std::move(machine);
  }
  return options;
}

}  // namespace cleave
