// Reading, checking, writing and batching the task graphs every planner schedules.
#include "plan/task_graph.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <queue>
#include <set>
#include <sstream>

#include "ir/graph.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/limits.h"
#include "support/topological_order.h"

namespace cleave {
namespace {

double non_negative_number(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    throw Error(fmt::format("{}: expected a non-negative number, got {}", where, show_json(value)));
  }
  return value.get<double>();
}

void check_model_values(const std::vector<ModelValue>& values, const char* field,
                        const std::string& origin, const std::string& task) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].name.empty()) {
      throw Error(
          fmt::format("{}: task \"{}\": {}[{}]: expected a value name", origin, task, field, i));
    }
    if (!std::isfinite(values[i].bytes) || values[i].bytes < 0 || values[i].bytes > kMaxBytes) {
      throw Error(fmt::format(
          "{}: task \"{}\": {}[{}] ('{}'): bytes: expected a non-negative number up to {:g}, "
          "got {}",
          origin, task, field, i, values[i].name, kMaxBytes, values[i].bytes));
    }
  }
}

int64_t integer(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number_integer()) {
    throw Error(fmt::format("{}: expected an integer, got {}", where, show_json(value)));
  }
  return value.get<int64_t>();
}

}  // namespace

double TaskGraph::bytes_on_edge(std::size_t edge) const {
  if (edge < edge_bytes.size() && edge_bytes[edge] >= 0) return edge_bytes[edge];
  return tasks.at(edges.at(edge).first).output_bytes;
}

double TaskGraph::edge_time(std::size_t edge, std::size_t from, std::size_t to) const {
  if (from == to) return 0;
  return machine.transfer_time(from, to, bytes_on_edge(edge));
}

double TaskGraph::input_arrival(std::size_t task, std::size_t worker) const {
  double arrival = 0;
  if (worker == 0) return arrival;
  for (const ModelValue& input : tasks[task].model_inputs)
    arrival = std::max(arrival, machine.transfer_time(0, worker, input.bytes));
  return arrival;
}

std::vector<OutputGather> TaskGraph::output_gathers(const std::vector<int>& worker_of_task) const {
  // Per output and sample: a copy on device 0 (nothing to send), else the first producer.
  std::map<std::pair<std::string, int64_t>, std::pair<int, double>> sender;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    for (const ModelValue& output : tasks[t].model_outputs) {
      auto [found, fresh] = sender.try_emplace({output.name, tasks[t].batch_begin},
                                               static_cast<int>(t), output.bytes);
      if (!fresh && worker_of_task[t] == 0) found->second.first = static_cast<int>(t);
    }
  }
  std::vector<OutputGather> gathers;
  for (const auto& [key, chosen] : sender) {
    const auto [task, bytes] = chosen;
    const int worker = worker_of_task[task];
    if (worker == 0) continue;
    gathers.push_back({task, bytes, machine.transfer_time(worker, 0, bytes)});
  }
  return gathers;
}

std::vector<std::vector<int>> TaskGraph::successors() const {
  std::vector<std::vector<int>> result(tasks.size());
  for (const auto& [from, to] : edges) result.at(from).push_back(to);
  return result;
}

std::vector<std::vector<int>> TaskGraph::predecessors() const {
  std::vector<std::vector<int>> result(tasks.size());
  for (const auto& [from, to] : edges) result.at(to).push_back(from);
  return result;
}

std::vector<std::vector<int>> TaskGraph::in_edges() const {
  std::vector<std::vector<int>> result(tasks.size());
  for (std::size_t edge = 0; edge < edges.size(); ++edge) {
    result.at(edges[edge].second).push_back(static_cast<int>(edge));
  }
  return result;
}

std::vector<std::vector<int>> TaskGraph::out_edges() const {
  std::vector<std::vector<int>> result(tasks.size());
  for (std::size_t edge = 0; edge < edges.size(); ++edge) {
    result.at(edges[edge].first).push_back(static_cast<int>(edge));
  }
  return result;
}

std::vector<int> TaskGraph::topological_order() const {
  for (const auto& [from, to] : edges) {
    if (from < 0 || to < 0 || static_cast<std::size_t>(std::max(from, to)) >= tasks.size()) {
      throw Error(fmt::format("edge ({}, {}) names a task that does not exist", from, to));
    }
  }
  std::vector<int> order = cleave::topological_order(successors());
  if (order.size() == tasks.size()) return order;
  const std::vector<int> cycle = find_cycle(predecessors(), order);
  std::vector<std::string> names;
  for (int task : cycle) names.push_back(tasks[task].name);
  if (!names.empty()) names.push_back(names.front());
  throw Error(fmt::format("the task graph has a cycle through task \"{}\": {}",
                          cycle.empty() ? std::string("?") : tasks[cycle.front()].name,
                          fmt::join(names, " -> ")));
}

void TaskGraph::check(const std::string& origin) const {
  const std::size_t devices = machine.size();
  if (devices == 0) throw Error(fmt::format("{}: the machine has no devices", origin));
  if (machine.bandwidth.size() != devices) {
    throw Error(fmt::format("{}: bandwidth: expected {} rows, got {}", origin, devices,
                            machine.bandwidth.size()));
  }
  std::set<std::string> names;
  for (const Task& task : tasks) {
    if (task.name.empty()) throw Error(fmt::format("{}: a task has an empty name", origin));
    if (!names.insert(task.name).second) {
      throw Error(fmt::format("{}: task \"{}\": duplicate task name", origin, task.name));
    }
    if (task.time.size() != devices) {
      throw Error(fmt::format("{}: task \"{}\": time: expected {} entries (one per device), got {}",
                              origin, task.name, devices, task.time.size()));
    }
    bool runs_somewhere = false;
    for (std::size_t device = 0; device < devices; ++device) {
      const double time = task.time[device];
      if (std::isnan(time) || time < 0 || (std::isfinite(time) && time > kMaxSeconds)) {
        throw Error(fmt::format(
            "{}: task \"{}\": time[{}] ({}): expected a non-negative number of "
            "seconds up to {:g} (or null: cannot run there), got {}",
            origin, task.name, device, machine.devices[device].name, kMaxSeconds, time));
      }
      runs_somewhere = runs_somewhere || std::isfinite(time);
    }
    if (!runs_somewhere) {
      throw Error(
          fmt::format("{}: task \"{}\": cannot run on any device (every time is "
                      "infinite)",
                      origin, task.name));
    }
    if (!task.busy_time.empty() && task.busy_time.size() != devices) {
      throw Error(fmt::format(
          "{}: task \"{}\": busy_time: expected {} entries (one per device) or none, got {}",
          origin, task.name, devices, task.busy_time.size()));
    }
    for (std::size_t device = 0; device < task.busy_time.size(); ++device) {
      const double time = task.busy_time[device];
      if (std::isnan(time) || time < 0 || (std::isfinite(time) && time > kMaxSeconds)) {
        throw Error(fmt::format(
            "{}: task \"{}\": busy_time[{}] ({}): expected a non-negative number of seconds up "
            "to {:g} (or null), got {}",
            origin, task.name, device, machine.devices[device].name, kMaxSeconds, time));
      }
    }
    if (!std::isfinite(task.output_bytes) || task.output_bytes < 0 ||
        task.output_bytes > kMaxBytes) {
      throw Error(fmt::format(
          "{}: task \"{}\": output_bytes: expected a non-negative number up to {:g}, got {}",
          origin, task.name, kMaxBytes, task.output_bytes));
    }
    if (!std::isfinite(task.weight_bytes) || task.weight_bytes < 0 ||
        task.weight_bytes > kMaxBytes) {
      throw Error(fmt::format(
          "{}: task \"{}\": weight_bytes: expected a non-negative number up to {:g}, got {}",
          origin, task.name, kMaxBytes, task.weight_bytes));
    }
    check_model_values(task.model_inputs, "model_inputs", origin, task.name);
    check_model_values(task.model_outputs, "model_outputs", origin, task.name);
  }
  for (std::size_t edge = 0; edge < edges.size(); ++edge) {
    const auto [from, to] = edges[edge];
    if (from < 0 || to < 0 || static_cast<std::size_t>(from) >= tasks.size() ||
        static_cast<std::size_t>(to) >= tasks.size()) {
      throw Error(fmt::format("{}: edges[{}]: task index out of range", origin, edge));
    }
    if (edge < edge_bytes.size() &&
        (std::isnan(edge_bytes[edge]) || edge_bytes[edge] > kMaxBytes)) {
      throw Error(fmt::format("{}: edges[{}] ({} -> {}): bytes is NaN", origin, edge,
                              tasks[from].name, tasks[to].name));
    }
  }
  try {
    topological_order();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", origin, e.what()));
  }
}

namespace {

// The devices and links of a task graph file (its own keys and messages, unlike a machine file).
Machine task_graph_machine(const nlohmann::json& json, const std::string& origin) {
  Machine machine;
  std::set<std::string> device_names;
  for (std::size_t i = 0; i < json["devices"].size(); ++i) {
    const std::string where = fmt::format("{}: devices[{}]", origin, i);
    Device device = device_from_json(json["devices"][i], where);
    if (!device_names.insert(device.name).second) {
      throw Error(fmt::format("{}.name: duplicate device name \"{}\"", where, device.name));
    }
    machine.devices.push_back(std::move(device));
  }
  const std::size_t devices = machine.size();
  if (json.contains("name") && json["name"].is_string()) machine.name = json["name"];
  if (json.contains("bandwidth")) {
    machine.bandwidth = link_matrix_from_json(json["bandwidth"], devices, origin + ": bandwidth");
  } else if (devices > 1) {
    throw Error(
        fmt::format("{}: bandwidth: missing; {} devices need a {}x{} matrix of bytes/s "
                    "(0 = no link)",
                    origin, devices, devices, devices));
  } else {
    machine.bandwidth.assign(devices, std::vector<double>(devices, 0.0));
  }
  if (json.contains("latency")) {
    machine.latency = link_matrix_from_json(json["latency"], devices, origin + ": latency");
  } else {
    machine.latency.assign(devices, std::vector<double>(devices, 0.0));
  }
  if (json.contains("link_source")) {
    if (!json["link_source"].is_string()) {
      throw Error(fmt::format("{}: link_source: expected a string, got {}", origin,
                              show_json(json["link_source"])));
    }
    machine.link_source = json["link_source"].get<std::string>();
  }
  if (json.contains("task_seconds"))
    machine.task_seconds = non_negative_number(json["task_seconds"], origin + ": task_seconds");
  if (json.contains("run_seconds"))
    machine.run_seconds = non_negative_number(json["run_seconds"], origin + ": run_seconds");
  if (json.contains("shared_memory")) {
    if (!json["shared_memory"].is_boolean()) {
      throw Error(fmt::format("{}: shared_memory: expected true or false, got {}", origin,
                              show_json(json["shared_memory"])));
    }
    machine.shared_memory = json["shared_memory"].get<bool>();
  }
  message_ends_from_json(json, origin, machine);
  shared_link_from_json(json, origin, machine);
  return machine;
}

// A task's "model_inputs" or "model_outputs": [{"name": "x", "bytes": 602112}, ...].
std::vector<ModelValue> model_values_from_json(const nlohmann::json& entry, const char* field,
                                               const std::string& where) {
  std::vector<ModelValue> values;
  if (!entry.contains(field)) return values;
  const nlohmann::json& list = entry[field];
  if (!list.is_array()) {
    throw Error(fmt::format("{}: {}: expected an array of {{\"name\", \"bytes\"}}, got {}", where,
                            field, show_json(list)));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}: {}[{}]", where, field, i);
    const nlohmann::json& item = list[i];
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
        item["name"].get<std::string>().empty() || !item.contains("bytes")) {
      throw Error(
          fmt::format("{}: expected {{\"name\": a value's name, \"bytes\": a number}}, got {}", at,
                      show_json(item)));
    }
    values.push_back(
        {item["name"].get<std::string>(), non_negative_number(item["bytes"], at + ": bytes")});
  }
  return values;
}

// A task's seconds per device (`time`, `busy_time`): an array of one entry per device.
std::vector<double> device_times(const nlohmann::json& list, const std::string& where,
                                 std::size_t devices) {
  if (!list.is_array()) {
    throw Error(fmt::format("{}: expected an array of {} seconds, one per device, got {}", where,
                            devices, show_json(list)));
  }
  if (list.size() != devices) {
    throw Error(fmt::format("{}: expected {} entries (one per device), got {}", where, devices,
                            list.size()));
  }
  std::vector<double> times;
  for (std::size_t device = 0; device < devices; ++device) {
    const nlohmann::json& value = list[device];
    // JSON has no infinity: null (or "inf") marks a device the task cannot run on.
    if (value.is_null() || (value.is_string() && value.get<std::string>() == "inf")) {
      times.push_back(std::numeric_limits<double>::infinity());
    } else {
      times.push_back(non_negative_number(value, fmt::format("{}[{}]", where, device)));
    }
  }
  return times;
}

// tasks[i] of a task graph file, its name recorded in `index_of`.
Task task_from_json(const nlohmann::json& entry, std::size_t i, const std::string& origin,
                    std::size_t devices, std::map<std::string, int>& index_of) {
  std::string where = fmt::format("{}: tasks[{}]", origin, i);
  if (!entry.is_object()) {
    throw Error(fmt::format("{}: expected an object, got {}", where, show_json(entry)));
  }
  if (!entry.contains("name") || !entry["name"].is_string() ||
      entry["name"].get<std::string>().empty()) {
    throw Error(fmt::format("{}.name: expected a non-empty string", where));
  }
  Task task;
  task.name = entry["name"].get<std::string>();
  where = fmt::format("{}: task \"{}\"", origin, task.name);
  if (!index_of.emplace(task.name, static_cast<int>(i)).second) {
    throw Error(
        fmt::format("{}: duplicate task name (also tasks[{}])", where, index_of[task.name]));
  }
  if (!entry.contains("time")) {
    throw Error(
        fmt::format("{}: time: expected an array of {} seconds, one per device", where, devices));
  }
  task.time = device_times(entry["time"], where + ": time", devices);
  if (entry.contains("busy_time")) {
    task.busy_time = device_times(entry["busy_time"], where + ": busy_time", devices);
  }
  if (entry.contains("output_bytes")) {
    task.output_bytes = non_negative_number(entry["output_bytes"], where + ": output_bytes");
  }
  if (entry.contains("weight_bytes")) {
    task.weight_bytes = non_negative_number(entry["weight_bytes"], where + ": weight_bytes");
  }
  if (entry.contains("node")) {
    task.node = static_cast<int32_t>(integer(entry["node"], where + ": node"));
  }
  if (entry.contains("batch_begin")) {
    task.batch_begin = integer(entry["batch_begin"], where + ": batch_begin");
  }
  if (entry.contains("batch_end")) {
    task.batch_end = integer(entry["batch_end"], where + ": batch_end");
  }
  if (task.batch_begin < 0 || task.batch_end <= task.batch_begin) {
    throw Error(fmt::format("{}: batch slice [{}, {}) is empty or negative", where,
                            task.batch_begin, task.batch_end));
  }
  if (entry.contains("weight_group")) {
    task.weight_group =
        static_cast<int32_t>(integer(entry["weight_group"], where + ": weight_group"));
  }
  task.model_inputs = model_values_from_json(entry, "model_inputs", where);
  task.model_outputs = model_values_from_json(entry, "model_outputs", where);
  if (entry.contains("copies_remote_inputs")) {
    if (!entry["copies_remote_inputs"].is_boolean()) {
      throw Error(fmt::format("{}: copies_remote_inputs: expected true or false, got {}", where,
                              show_json(entry["copies_remote_inputs"])));
    }
    task.copies_remote_inputs = entry["copies_remote_inputs"].get<bool>();
  }
  return task;
}

// The dependences of `json`'s "edges" (a pair given twice is one), with their bytes if any
// edge gives them.
void edges_from_json(const nlohmann::json& json, const std::string& origin,
                     const std::map<std::string, int>& index_of, TaskGraph& graph) {
  if (!json.contains("edges")) return;
  if (!json["edges"].is_array()) {
    throw Error(fmt::format("{}: edges: expected an array of [producer, consumer] pairs", origin));
  }
  std::set<std::pair<int, int>> seen;
  bool any_edge_bytes = false;
  std::vector<double> edge_bytes;
  for (std::size_t i = 0; i < json["edges"].size(); ++i) {
    const nlohmann::json& entry = json["edges"][i];
    const std::string where = fmt::format("{}: edges[{}]", origin, i);
    if (!entry.is_array() || entry.size() < 2 || entry.size() > 3 || !entry[0].is_string() ||
        !entry[1].is_string()) {
      throw Error(
          fmt::format("{}: expected [\"producer\", \"consumer\"] or [\"producer\", "
                      "\"consumer\", bytes], got {}",
                      where, show_json(entry)));
    }
    int ends[2];
    for (int side = 0; side < 2; ++side) {
      const std::string name = entry[side].get<std::string>();
      const auto found = index_of.find(name);
      if (found == index_of.end()) {
        throw Error(fmt::format("{}: unknown task \"{}\"", where, name));
      }
      ends[side] = found->second;
    }
    if (ends[0] == ends[1]) {
      throw Error(fmt::format("{}: task \"{}\" depends on itself (a cycle)", where,
                              entry[0].get<std::string>()));
    }
    double bytes = -1;
    if (entry.size() == 3) {
      bytes = non_negative_number(entry[2], where + "[2] (bytes)");
      any_edge_bytes = true;
    }
    // The same pair twice is one dependence; counting its transfer twice would be wrong.
    if (!seen.insert({ends[0], ends[1]}).second) continue;
    graph.edges.emplace_back(ends[0], ends[1]);
    edge_bytes.push_back(bytes);
  }
  if (any_edge_bytes) graph.edge_bytes = std::move(edge_bytes);
}

}  // namespace

TaskGraph task_graph_from_json(const nlohmann::json& json, const std::string& origin) {
  if (!json.is_object()) {
    throw Error(
        fmt::format("{}: expected a JSON object with devices, bandwidth, tasks, edges", origin));
  }
  TaskGraph graph;
  if (!json.contains("devices") || !json["devices"].is_array() || json["devices"].empty()) {
    throw Error(fmt::format("{}: devices: expected a non-empty array of devices", origin));
  }
  graph.machine = task_graph_machine(json, origin);
  const std::size_t devices = graph.machine.size();

  if (!json.contains("tasks") || !json["tasks"].is_array()) {
    throw Error(fmt::format("{}: tasks: expected an array of tasks", origin));
  }
  std::map<std::string, int> index_of;
  for (std::size_t i = 0; i < json["tasks"].size(); ++i) {
    graph.tasks.push_back(task_from_json(json["tasks"][i], i, origin, devices, index_of));
  }

  edges_from_json(json, origin, index_of, graph);
  graph.check(origin);
  return graph;
}

namespace {

nlohmann::json device_times_json(const std::vector<double>& times) {
  nlohmann::json list = nlohmann::json::array();
  for (double time : times) {
    if (std::isfinite(time)) {
      list.push_back(time);
    } else {
      list.push_back(nullptr);
    }
  }
  return list;
}

}  // namespace

nlohmann::json task_graph_to_json(const TaskGraph& graph) {
  nlohmann::json devices = nlohmann::json::array();
  for (const Device& device : graph.machine.devices) devices.push_back(device_to_json(device));
  nlohmann::json tasks = nlohmann::json::array();
  for (const Task& task : graph.tasks) {
    nlohmann::json entry = {{"name", task.name},
                            {"time", device_times_json(task.time)},
                            {"output_bytes", task.output_bytes},
                            {"weight_bytes", task.weight_bytes}};
    if (!task.busy_time.empty()) entry["busy_time"] = device_times_json(task.busy_time);
    if (task.node >= 0) entry["node"] = task.node;
    if (task.batch_begin != 0 || task.batch_end != 1) {
      entry["batch_begin"] = task.batch_begin;
      entry["batch_end"] = task.batch_end;
    }
    if (task.weight_group >= 0) entry["weight_group"] = task.weight_group;
    if (task.copies_remote_inputs) entry["copies_remote_inputs"] = true;
    for (const auto& [field, values] :
         {std::pair{"model_inputs", &task.model_inputs}, {"model_outputs", &task.model_outputs}}) {
      if (values->empty()) continue;
      nlohmann::json list = nlohmann::json::array();
      for (const ModelValue& value : *values)
        list.push_back({{"name", value.name}, {"bytes", value.bytes}});
      entry[field] = std::move(list);
    }
    tasks.push_back(std::move(entry));
  }
  nlohmann::json edges = nlohmann::json::array();
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    nlohmann::json entry = {graph.tasks.at(from).name, graph.tasks.at(to).name};
    if (edge < graph.edge_bytes.size() && graph.edge_bytes[edge] >= 0) {
      entry.push_back(graph.edge_bytes[edge]);
    }
    edges.push_back(std::move(entry));
  }
  nlohmann::json json = {{"devices", devices}, {"bandwidth", graph.machine.bandwidth}};
  bool any_latency = false;
  for (const auto& row : graph.machine.latency) {
    for (double value : row) any_latency = any_latency || value != 0;
  }
  if (any_latency) json["latency"] = graph.machine.latency;
  if (!graph.machine.link_source.empty()) json["link_source"] = graph.machine.link_source;
  if (graph.machine.task_seconds > 0) json["task_seconds"] = graph.machine.task_seconds;
  if (graph.machine.run_seconds > 0) json["run_seconds"] = graph.machine.run_seconds;
  if (graph.machine.shared_memory) json["shared_memory"] = true;
  message_ends_to_json(graph.machine, json);
  json["tasks"] = std::move(tasks);
  json["edges"] = std::move(edges);
  return json;
}

TaskGraph read_task_graph(const std::string& path) {
  return task_graph_from_json(read_json_file(path, "task graph"), path);
}

void write_task_graph(const TaskGraph& graph, const std::string& path) {
  write_file_atomically(path, task_graph_to_json(graph).dump(1) + "\n");
}

std::vector<int64_t> default_slice_sizes(int64_t batch) {
  if (batch < 1) throw Error(fmt::format("batch: expected a positive size, got {}", batch));
  if (batch >= 4 && batch % 4 == 0) return std::vector<int64_t>(4, batch / 4);
  if (batch % 2 == 0) return {batch / 2, batch / 2};
  return {batch};
}

TaskGraph batch_task_graph(const TaskGraph& per_sample, int64_t batch,
                           const std::vector<int64_t>& slice_sizes) {
  if (batch < 1) throw Error(fmt::format("batch: expected a positive size, got {}", batch));
  if (slice_sizes.empty()) throw Error("batch: no slice sizes given");
  int64_t total = 0;
  for (int64_t size : slice_sizes) {
    if (size < 1) throw Error(fmt::format("batch: slice size {} is not positive", size));
    total += size;
  }
  if (total != batch) {
    throw Error(fmt::format("batch: slice sizes {} add up to {}, not the batch {}",
                            fmt::join(slice_sizes, "+"), total, batch));
  }
  TaskGraph batched;
  batched.machine = per_sample.machine;
  const std::size_t slices = slice_sizes.size();
  int32_t next_group = 0;
  for (const Task& task : per_sample.tasks)
    next_group = std::max(next_group, task.weight_group + 1);
  batched.tasks.reserve(per_sample.tasks.size() * slices);
  for (std::size_t index = 0; index < per_sample.tasks.size(); ++index) {
    const Task& task = per_sample.tasks[index];
    const int32_t group = task.weight_group >= 0 ? task.weight_group : next_group++;
    int64_t begin = 0;
    for (std::size_t slice = 0; slice < slices; ++slice) {
      const int64_t size = slice_sizes[slice];
      Task part = task;
      part.name = fmt::format("{}@{}:{}", task.name, begin, begin + size);
      part.batch_begin = begin;
      part.batch_end = begin + size;
      part.weight_group = group;
      part.output_bytes = task.output_bytes * static_cast<double>(size);
      for (ModelValue& value : part.model_inputs) value.bytes *= static_cast<double>(size);
      for (ModelValue& value : part.model_outputs) value.bytes *= static_cast<double>(size);
      for (std::size_t device = 0; device < part.time.size(); ++device) {
        const auto& supported = batched.machine.devices.at(device).batch_sizes;
        const bool allowed = supported.empty() ||
                             std::find(supported.begin(), supported.end(), size) != supported.end();
        part.time[device] = allowed ? task.time[device] * static_cast<double>(size)
                                    : std::numeric_limits<double>::infinity();
        if (!part.busy_time.empty()) {
          part.busy_time[device] = allowed ? task.busy_time[device] * static_cast<double>(size)
                                           : std::numeric_limits<double>::infinity();
        }
      }
      bool runs_somewhere = false;
      for (double time : part.time) runs_somewhere = runs_somewhere || std::isfinite(time);
      if (!runs_somewhere) {
        throw Error(
            fmt::format("batch: task \"{}\": no device supports a slice of {} samples "
                        "(check the devices' batch_sizes)",
                        task.name, size));
      }
      batched.tasks.push_back(std::move(part));
      begin += size;
    }
  }
  for (std::size_t edge = 0; edge < per_sample.edges.size(); ++edge) {
    const auto [from, to] = per_sample.edges[edge];
    const bool own_bytes = edge < per_sample.edge_bytes.size() && per_sample.edge_bytes[edge] >= 0;
    for (std::size_t slice = 0; slice < slices; ++slice) {
      batched.edges.emplace_back(static_cast<int>(from * slices + slice),
                                 static_cast<int>(to * slices + slice));
      if (!per_sample.edge_bytes.empty()) {
        batched.edge_bytes.push_back(
            own_bytes ? per_sample.edge_bytes[edge] * static_cast<double>(slice_sizes[slice]) : -1);
      }
    }
  }
  return batched;
}

}  // namespace cleave
