// Plans: derived transfers, validation (placement, deadlock, memory), and the plan JSON file.
#include "plan/plan.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "ir/graph.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/topological_order.h"

namespace cleave {
namespace {

std::string worker_name(const TaskGraph& graph, int worker) {
  if (worker >= 0 && static_cast<std::size_t>(worker) < graph.machine.size()) {
    return graph.machine.devices[worker].name;
  }
  return fmt::format("#{}", worker);
}

std::string task_name(const TaskGraph& graph, int task) {
  if (task >= 0 && static_cast<std::size_t>(task) < graph.tasks.size()) {
    return graph.tasks[task].name;
  }
  return fmt::format("#{}", task);
}

nlohmann::json number_or_null(double value) {
  if (std::isfinite(value)) return value;
  return nullptr;
}

double read_time(const nlohmann::json& value, const std::string& where) {
  if (value.is_null()) return std::numeric_limits<double>::infinity();
  if (!value.is_number() || std::isnan(value.get<double>()) || value.get<double>() < 0) {
    throw Error(fmt::format("{}: expected a number of seconds >= 0 (or null), got {}", where,
                            show_json(value)));
  }
  return value.get<double>();
}

// Reads a plan whose task and worker names are resolved by the given functions (which return
// -1 for an unknown name).
Plan parse_plan(const nlohmann::json& json, const std::string& origin, std::size_t task_count,
                const std::function<int(const std::string&, std::size_t position)>& task_index,
                const std::function<int(const std::string&)>& worker_index,
                std::size_t worker_count) {
  if (!json.is_object()) throw Error(fmt::format("{}: expected a JSON object (a plan)", origin));
  Plan plan;
  if (json.contains("strategy")) {
    if (!json["strategy"].is_string()) {
      throw Error(fmt::format("{}: strategy: expected a string, got {}", origin,
                              show_json(json["strategy"])));
    }
    plan.strategy = json["strategy"].get<std::string>();
  }
  if (json.contains("objective")) {
    if (!json["objective"].is_string() ||
        (json["objective"] != "latency" && json["objective"] != "throughput")) {
      throw Error(fmt::format("{}: objective: expected \"latency\" or \"throughput\", got {}",
                              origin, show_json(json["objective"])));
    }
    plan.objective = json["objective"].get<std::string>();
  }
  if (json.contains("batch")) {
    if (!json["batch"].is_number_integer() || json["batch"].get<int64_t>() < 1) {
      throw Error(fmt::format("{}: batch: expected a positive integer, got {}", origin,
                              show_json(json["batch"])));
    }
    plan.batch = json["batch"].get<int64_t>();
  }
  if (json.contains("makespan")) plan.makespan = read_time(json["makespan"], origin + ": makespan");
  if (json.contains("notes")) plan.notes = json["notes"];

  if (!json.contains("workers") || !json["workers"].is_array()) {
    throw Error(fmt::format("{}: workers: expected an array of worker names", origin));
  }
  std::vector<int> worker_of_position;
  for (std::size_t i = 0; i < json["workers"].size(); ++i) {
    const nlohmann::json& name = json["workers"][i];
    if (!name.is_string()) {
      throw Error(
          fmt::format("{}: workers[{}]: expected a name, got {}", origin, i, show_json(name)));
    }
    const int worker = worker_index(name.get<std::string>());
    if (worker < 0) {
      throw Error(fmt::format("{}: workers[{}]: unknown worker \"{}\"", origin, i,
                              name.get<std::string>()));
    }
    worker_of_position.push_back(worker);
  }

  if (!json.contains("tasks") || !json["tasks"].is_array()) {
    throw Error(fmt::format("{}: tasks: expected an array of placed tasks", origin));
  }
  plan.tasks.assign(task_count, PlannedTask{});
  for (std::size_t i = 0; i < json["tasks"].size(); ++i) {
    const nlohmann::json& entry = json["tasks"][i];
    std::string where = fmt::format("{}: tasks[{}]", origin, i);
    if (!entry.is_object() || !entry.contains("task") || !entry["task"].is_string()) {
      throw Error(
          fmt::format("{}: expected {{\"task\": name, \"worker\": name, \"start\", "
                      "\"finish\"}}, got {}",
                      where, show_json(entry)));
    }
    const std::string name = entry["task"].get<std::string>();
    where = fmt::format("{}: task \"{}\"", origin, name);
    const int task = task_index(name, i);
    if (task < 0) throw Error(fmt::format("{}: unknown task", where));
    if (plan.tasks[task].task >= 0) throw Error(fmt::format("{}: placed twice", where));
    if (!entry.contains("worker") || !entry["worker"].is_string()) {
      throw Error(fmt::format("{}: worker: expected a worker name", where));
    }
    const int worker = worker_index(entry["worker"].get<std::string>());
    if (worker < 0) {
      throw Error(
          fmt::format("{}: unknown worker \"{}\"", where, entry["worker"].get<std::string>()));
    }
    PlannedTask& placed = plan.tasks[task];
    placed.task = task;
    placed.worker = worker;
    if (entry.contains("start")) placed.start = read_time(entry["start"], where + ": start");
    if (entry.contains("finish")) placed.finish = read_time(entry["finish"], where + ": finish");
  }

  plan.order.assign(worker_count, {});
  if (json.contains("order")) {
    const nlohmann::json& order = json["order"];
    if (!order.is_array() || order.size() != worker_of_position.size()) {
      throw Error(fmt::format("{}: order: expected one list of task names per worker ({} lists)",
                              origin, worker_of_position.size()));
    }
    for (std::size_t position = 0; position < order.size(); ++position) {
      if (!order[position].is_array()) {
        throw Error(fmt::format("{}: order[{}]: expected a list of task names", origin, position));
      }
      for (const nlohmann::json& name : order[position]) {
        if (!name.is_string()) {
          throw Error(fmt::format("{}: order[{}]: expected task names, got {}", origin, position,
                                  show_json(name)));
        }
        const int task = task_index(name.get<std::string>(), task_count);
        if (task < 0) {
          throw Error(fmt::format("{}: order[{}]: unknown task \"{}\"", origin, position,
                                  name.get<std::string>()));
        }
        plan.order[worker_of_position[position]].push_back(task);
      }
    }
  } else {
    // No order given: each worker runs its tasks by predicted start time.
    std::vector<int> by_start;
    for (std::size_t task = 0; task < task_count; ++task) {
      if (plan.tasks[task].task >= 0) by_start.push_back(static_cast<int>(task));
    }
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](int a, int b) { return plan.tasks[a].start < plan.tasks[b].start; });
    for (int task : by_start) plan.order[plan.tasks[task].worker].push_back(task);
  }
  return plan;
}

}  // namespace

std::vector<Transfer> Plan::transfers(const TaskGraph& graph) const {
  std::vector<Transfer> result;
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    const int from_worker = tasks.at(from).worker;
    const int to_worker = tasks.at(to).worker;
    if (from_worker == to_worker) continue;
    result.push_back(Transfer{from, to, from_worker, to_worker, graph.bytes_on_edge(edge)});
  }
  return result;
}

std::vector<int> execution_order(const Plan& plan, const TaskGraph& graph) {
  const std::size_t task_count = graph.tasks.size();
  const std::size_t worker_count = graph.machine.size();
  if (plan.tasks.size() != task_count) {
    throw Error(fmt::format("plan: places {} tasks but the task graph has {}", plan.tasks.size(),
                            task_count));
  }
  for (std::size_t task = 0; task < task_count; ++task) {
    const PlannedTask& placed = plan.tasks[task];
    if (placed.task != static_cast<int>(task)) {
      throw Error(fmt::format("plan: task \"{}\" is not placed", graph.tasks[task].name));
    }
    if (placed.worker < 0 || static_cast<std::size_t>(placed.worker) >= worker_count) {
      throw Error(
          fmt::format("plan: task \"{}\" is placed on worker {}, but the machine has "
                      "workers 0..{}",
                      graph.tasks[task].name, placed.worker, worker_count - 1));
    }
  }
  if (plan.order.size() != worker_count) {
    throw Error(fmt::format("plan: has orders for {} workers but the machine has {}",
                            plan.order.size(), worker_count));
  }
  std::vector<int> listed_on(task_count, -1);
  // Per task, the task before it in its worker's order (-1 for the first).
  std::vector<int> previous_on_worker(task_count, -1);
  for (std::size_t worker = 0; worker < worker_count; ++worker) {
    int previous = -1;
    for (int task : plan.order[worker]) {
      if (task < 0 || static_cast<std::size_t>(task) >= task_count) {
        throw Error(
            fmt::format("plan: the order of worker {} lists task #{}, which does not "
                        "exist",
                        worker_name(graph, static_cast<int>(worker)), task));
      }
      if (listed_on[task] >= 0) {
        throw Error(fmt::format("plan: task \"{}\" is listed twice (orders of {} and {})",
                                task_name(graph, task), worker_name(graph, listed_on[task]),
                                worker_name(graph, static_cast<int>(worker))));
      }
      if (plan.tasks[task].worker != static_cast<int>(worker)) {
        throw Error(fmt::format("plan: task \"{}\" is placed on {} but listed in the order of {}",
                                task_name(graph, task), worker_name(graph, plan.tasks[task].worker),
                                worker_name(graph, static_cast<int>(worker))));
      }
      listed_on[task] = static_cast<int>(worker);
      previous_on_worker[task] = previous;
      previous = task;
    }
  }
  for (std::size_t task = 0; task < task_count; ++task) {
    if (listed_on[task] < 0) {
      throw Error(fmt::format("plan: task \"{}\" (placed on {}) is missing from the orders",
                              task_name(graph, static_cast<int>(task)),
                              worker_name(graph, plan.tasks[task].worker)));
    }
  }

  // Data edges plus "next on the same worker" edges; data edges first among a task's
  // predecessors, so a deadlock is reported through data dependences where there are some.
  std::vector<std::vector<int>> successors = graph.successors();
  std::vector<std::vector<int>> predecessors = graph.predecessors();
  for (std::size_t task = 0; task < task_count; ++task) {
    if (previous_on_worker[task] >= 0) {
      successors[previous_on_worker[task]].push_back(static_cast<int>(task));
      predecessors[task].push_back(previous_on_worker[task]);
    }
  }
  std::vector<int> order = topological_order(successors);
  if (order.size() == task_count) return order;

  // Deadlock: name the tasks that wait on each other, each with what it waits for.
  const std::vector<int> cycle = find_cycle(predecessors, order);
  const auto data_predecessors = graph.predecessors();
  std::vector<std::string> steps;
  for (std::size_t i = cycle.size(); i-- > 0;) {
    const int task = cycle[i];
    const int blocker = cycle[(i + cycle.size() - 1) % cycle.size()];
    const auto& data = data_predecessors[task];
    const bool by_order = std::find(data.begin(), data.end(), blocker) == data.end();
    steps.push_back(
        fmt::format("\"{}\" on {} waits for \"{}\" on {} ({})", task_name(graph, task),
                    worker_name(graph, plan.tasks[task].worker), task_name(graph, blocker),
                    worker_name(graph, plan.tasks[blocker].worker),
                    by_order ? "earlier in the same worker's order" : "needs its output"));
  }
  throw Error(fmt::format("plan: the worker orders deadlock (they contradict the dependences): {}",
                          fmt::join(steps, "; ")));
}

std::vector<double> weight_bytes_per_worker(const TaskGraph& graph,
                                            const std::vector<int>& worker_of_task) {
  std::vector<double> used(graph.machine.size(), 0.0);
  // A shared group costs its largest member's weights once per worker holding any member.
  std::map<std::pair<int, int>, double> group_bytes;  // (worker, weight group) -> bytes
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const int worker = worker_of_task.at(task);
    if (worker < 0 || static_cast<std::size_t>(worker) >= used.size()) continue;
    const Task& info = graph.tasks[task];
    if (info.weight_group >= 0) {
      double& bytes = group_bytes[{worker, info.weight_group}];
      bytes = std::max(bytes, info.weight_bytes);
    } else {
      used[worker] += info.weight_bytes;
    }
  }
  for (const auto& [key, bytes] : group_bytes) used[key.first] += bytes;
  return used;
}

int over_memory_worker(const TaskGraph& graph, const std::vector<int>& worker_of_task) {
  const std::vector<double> used = weight_bytes_per_worker(graph, worker_of_task);
  for (std::size_t worker = 0; worker < used.size(); ++worker) {
    // Planners track memory incrementally, summing in another order: allow rounding slack.
    const double memory = graph.machine.devices[worker].memory_bytes;
    if (used[worker] > memory + 1e-9 * memory) return static_cast<int>(worker);
  }
  return -1;
}

void validate_plan(const Plan& plan, const TaskGraph& graph) {
  execution_order(plan, graph);
  std::vector<int> worker_of_task(graph.tasks.size());
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const int worker = plan.tasks[task].worker;
    worker_of_task[task] = worker;
    const double time = graph.tasks[task].time[worker];
    if (!std::isfinite(time)) {
      throw Error(
          fmt::format("plan: task \"{}\" is placed on {}, where it cannot run (no time "
                      "given)",
                      graph.tasks[task].name, worker_name(graph, worker)));
    }
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    const int from_worker = worker_of_task[from];
    const int to_worker = worker_of_task[to];
    if (!std::isfinite(graph.edge_time(edge, from_worker, to_worker))) {
      throw Error(
          fmt::format("plan: \"{}\" on {} sends to \"{}\" on {}, but there is no link "
                      "between them",
                      graph.tasks[from].name, worker_name(graph, from_worker), graph.tasks[to].name,
                      worker_name(graph, to_worker)));
    }
  }
  const int over = over_memory_worker(graph, worker_of_task);
  if (over >= 0) {
    throw Error(
        fmt::format("plan: the weights placed on {} need {} bytes, more than its memory "
                    "of {} bytes",
                    worker_name(graph, over), weight_bytes_per_worker(graph, worker_of_task)[over],
                    graph.machine.devices[over].memory_bytes));
  }
}

nlohmann::json plan_to_json(const Plan& plan, const TaskGraph& graph) {
  nlohmann::json workers = nlohmann::json::array();
  for (const Device& device : graph.machine.devices) workers.push_back(device.name);
  nlohmann::json tasks = nlohmann::json::array();
  for (const PlannedTask& placed : plan.tasks) {
    tasks.push_back({{"task", task_name(graph, placed.task)},
                     {"worker", worker_name(graph, placed.worker)},
                     {"start", number_or_null(placed.start)},
                     {"finish", number_or_null(placed.finish)}});
  }
  nlohmann::json order = nlohmann::json::array();
  for (const auto& list : plan.order) {
    nlohmann::json names = nlohmann::json::array();
    for (int task : list) names.push_back(task_name(graph, task));
    order.push_back(std::move(names));
  }
  nlohmann::json transfers = nlohmann::json::array();
  for (const Transfer& transfer : plan.transfers(graph)) {
    transfers.push_back({{"from_task", task_name(graph, transfer.producer_task)},
                         {"to_task", task_name(graph, transfer.consumer_task)},
                         {"from_worker", worker_name(graph, transfer.from_worker)},
                         {"to_worker", worker_name(graph, transfer.to_worker)},
                         {"bytes", transfer.bytes}});
  }
  return {{"strategy", plan.strategy},
          {"objective", plan.objective},
          {"batch", plan.batch},
          {"workers", workers},
          {"tasks", tasks},
          {"order", order},
          {"makespan", number_or_null(plan.makespan)},
          {"transfers", transfers},
          {"notes", plan.notes}};
}

Plan plan_from_json(const nlohmann::json& json, const std::string& origin) {
  if (!json.is_object() || !json.contains("tasks") || !json["tasks"].is_array() ||
      !json.contains("workers") || !json["workers"].is_array()) {
    throw Error(
        fmt::format("{}: expected a plan object with \"workers\" and \"tasks\" arrays", origin));
  }
  std::map<std::string, int> task_by_name;
  for (std::size_t i = 0; i < json["tasks"].size(); ++i) {
    const nlohmann::json& entry = json["tasks"][i];
    if (entry.is_object() && entry.contains("task") && entry["task"].is_string()) {
      if (!task_by_name.emplace(entry["task"].get<std::string>(), static_cast<int>(i)).second) {
        throw Error(fmt::format("{}: tasks[{}]: task {} is placed twice", origin, i,
                                show_json(entry["task"])));
      }
    }
  }
  std::map<std::string, int> worker_by_name;
  for (std::size_t i = 0; i < json["workers"].size(); ++i) {
    if (json["workers"][i].is_string()) {
      if (!worker_by_name.emplace(json["workers"][i].get<std::string>(), static_cast<int>(i))
               .second) {
        throw Error(fmt::format("{}: workers[{}]: duplicate worker name {}", origin, i,
                                show_json(json["workers"][i])));
      }
    }
  }
  const auto task_index = [&](const std::string& name, std::size_t position) {
    const auto found = task_by_name.find(name);
    if (found == task_by_name.end()) return -1;
    // In "tasks", each entry is the task at its own position; a repeated name is caught as
    // "placed twice".
    return position < json["tasks"].size() ? static_cast<int>(position) : found->second;
  };
  const auto worker_index = [&](const std::string& name) {
    const auto found = worker_by_name.find(name);
    return found == worker_by_name.end() ? -1 : found->second;
  };
  return parse_plan(json, origin, json["tasks"].size(), task_index, worker_index,
                    json["workers"].size());
}

Plan plan_from_json(const nlohmann::json& json, const TaskGraph& graph, const std::string& origin) {
  std::map<std::string, int> task_by_name;
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    task_by_name.emplace(graph.tasks[i].name, static_cast<int>(i));
  }
  std::map<std::string, int> worker_by_name;
  for (std::size_t i = 0; i < graph.machine.size(); ++i) {
    worker_by_name.emplace(graph.machine.devices[i].name, static_cast<int>(i));
  }
  const auto task_index = [&](const std::string& name, std::size_t) {
    const auto found = task_by_name.find(name);
    return found == task_by_name.end() ? -1 : found->second;
  };
  const auto worker_index = [&](const std::string& name) {
    const auto found = worker_by_name.find(name);
    return found == worker_by_name.end() ? -1 : found->second;
  };
  Plan plan =
      parse_plan(json, origin, graph.tasks.size(), task_index, worker_index, graph.machine.size());
  try {
    validate_plan(plan, graph);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", origin, e.what()));
  }
  return plan;
}

Plan read_plan(const std::string& path, const TaskGraph& graph) {
  return plan_from_json(read_json_file(path, "plan file"), graph, path);
}

void write_plan(const Plan& plan, const TaskGraph& graph, const std::string& path) {
  write_file_atomically(path, plan_to_json(plan, graph).dump(1) + "\n");
}

}  // namespace cleave
