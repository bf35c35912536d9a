// The MILP's problem after restrictions, its warm start (plan/earliest_finish), heads and tails,
// device classes for symmetry breaking, and the clean-up of a solved schedule.
#include "plan/schedule/milp_problem.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "ir/graph.h"
#include "plan/earliest_finish.h"
#include "plan/list_schedule.h"

namespace cleave::milp_detail {
namespace {

bool links_symmetric(const Machine& machine, std::size_t a, std::size_t b) {
  // Transfer times at a few sizes capture both latency and bandwidth.
  for (double bytes : {0.0, 1.0, 1e9}) {
    if (machine.transfer_time(a, b, bytes) != machine.transfer_time(b, a, bytes)) return false;
    for (std::size_t other = 0; other < machine.size(); ++other) {
      if (other == a || other == b) continue;
      if (machine.transfer_time(a, other, bytes) != machine.transfer_time(b, other, bytes) ||
          machine.transfer_time(other, a, bytes) != machine.transfer_time(other, b, bytes)) {
        return false;
      }
    }
  }
  return true;
}

double latency_of(const Machine& machine, std::size_t from, std::size_t to) {
  return machine.latency.empty() || from == to ? 0.0 : machine.latency[from][to];
}

// When every model input `task` reads is on `device`: device 0 sends them at the start (its
// copy, then the latency, or the link, whichever is later, with priced ends).
double inputs_ready(const TaskGraph& graph, std::size_t task, std::size_t device) {
  if (device == 0 || graph.machine.endpoint_seconds(1.0) <= 0)
    return graph.input_arrival(task, device);
  double ready = 0;
  for (const ModelValue& input : graph.tasks[task].model_inputs) {
    ready = std::max(ready, std::max(graph.machine.endpoint_seconds(input.bytes) +
                                         latency_of(graph.machine, 0, device),
                                     graph.machine.transfer_time(0, device, input.bytes)));
  }
  return ready;
}

bool has_model_values(const TaskGraph& graph) {
  return std::any_of(graph.tasks.begin(), graph.tasks.end(), [](const Task& task) {
    return !task.model_inputs.empty() || !task.model_outputs.empty();
  });
}

}  // namespace

EndPrices end_prices(const TaskGraph& graph) {
  const Machine& machine = graph.machine;
  EndPrices prices;
  // The sender's cost per message (Machine::send_seconds) beside its copy.
  const double per_message = machine.shared_memory ? 0.0 : machine.send_seconds;
  prices.priced = machine.endpoint_seconds(1.0) > 0 || per_message > 0;
  prices.send.assign(graph.tasks.size(), 0.0);
  prices.receive.assign(graph.edges.size(), 0.0);
  prices.concat.assign(graph.edges.size(), 0.0);
  prices.gather_send.assign(graph.tasks.size(), 0.0);
  prices.gather_bytes.assign(graph.tasks.size(), 0.0);
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    const double copy = machine.endpoint_seconds(graph.bytes_on_edge(edge));
    prices.send[producer] = std::max(prices.send[producer], copy + per_message);
    prices.receive[edge] = copy;
    if (graph.tasks[consumer].copies_remote_inputs) prices.concat[edge] = copy;
  }
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    for (const ModelValue& output : graph.tasks[task].model_outputs) {
      prices.gather_send[task] += machine.endpoint_seconds(output.bytes) + per_message;
      prices.gather_bytes[task] = std::max(prices.gather_bytes[task], output.bytes);
    }
  }
  return prices;
}

double message_seconds(const TaskGraph& graph, const EndPrices& prices, std::size_t edge,
                       std::size_t from, std::size_t to) {
  const double wire = graph.edge_time(edge, from, to);
  if (from == to || !prices.priced) return wire;
  return std::max(wire, latency_of(graph.machine, from, to) + prices.send[graph.edges[edge].first]);
}

double program_nonzeros(const TaskGraph& graph) {
  const double tasks = static_cast<double>(graph.tasks.size());
  const double edges = static_cast<double>(graph.edges.size());
  const double devices = static_cast<double>(graph.machine.size());
  return edges * devices * devices * (devices + 4) + tasks * tasks * devices;
}

Problem make_problem(const TaskGraph& graph, const MilpRestrictions& restrictions) {
  Problem problem;
  problem.graph = &graph;
  problem.tasks = graph.tasks.size();
  problem.devices = graph.machine.size();
  problem.prices = end_prices(graph);
  const auto check_size = [&](std::size_t size, std::size_t expected, const char* what) {
    if (size != 0 && size != expected) {
      throw Error(fmt::format("milp: restriction \"{}\" has {} entries, expected {}", what, size,
                              expected));
    }
  };
  check_size(restrictions.allowed.size(), problem.tasks, "allowed");
  check_size(restrictions.release.size(), problem.tasks, "release");
  check_size(restrictions.device_available.size(), problem.devices, "device_available");
  check_size(restrictions.memory_used.size(), problem.devices, "memory_used");
  problem.allowed.assign(problem.tasks, std::vector<bool>(problem.devices, false));
  problem.ready.assign(problem.tasks, std::vector<double>(problem.devices, 0.0));
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const Task& info = graph.tasks[task];
    if (info.time.size() != problem.devices) {
      throw Error(fmt::format("milp: task \"{}\" has {} times for {} devices", info.name,
                              info.time.size(), problem.devices));
    }
    for (std::size_t device = 0; device < problem.devices; ++device) {
      bool allowed = std::isfinite(info.time[device]) && info.time[device] >= 0;
      if (!restrictions.allowed.empty()) {
        check_size(restrictions.allowed[task].size(), problem.devices, "allowed[task]");
        allowed = allowed && restrictions.allowed[task][device];
      }
      double ready = 0;
      if (!restrictions.release.empty()) {
        check_size(restrictions.release[task].size(), problem.devices, "release[task]");
        ready = restrictions.release[task][device];
      }
      if (!restrictions.device_available.empty()) {
        ready = std::max(ready, restrictions.device_available[device]);
      }
      ready = std::max(ready, inputs_ready(graph, task, device));
      if (!std::isfinite(ready)) allowed = false;
      problem.allowed[task][device] = allowed;
      problem.ready[task][device] = allowed ? ready : 0.0;
    }
  }
  problem.memory_left.resize(problem.devices);
  for (std::size_t device = 0; device < problem.devices; ++device) {
    const double used = restrictions.memory_used.empty() ? 0.0 : restrictions.memory_used[device];
    problem.memory_left[device] = graph.machine.devices[device].memory_bytes - used;
  }
  std::map<int32_t, int> key_of_group;
  problem.memory_key.resize(problem.tasks);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const Task& info = graph.tasks[task];
    int key;
    if (info.weight_group >= 0) {
      const auto [it, added] =
          key_of_group.emplace(info.weight_group, static_cast<int>(problem.key_bytes.size()));
      if (added) problem.key_bytes.push_back(0.0);
      key = it->second;
    } else {
      key = static_cast<int>(problem.key_bytes.size());
      problem.key_bytes.push_back(0.0);
    }
    problem.memory_key[task] = key;
    problem.key_bytes[key] = std::max(problem.key_bytes[key], info.weight_bytes);
  }
  // A key too big for a device keeps all its tasks off it.
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (problem.key_bytes[problem.memory_key[task]] > problem.memory_left[device]) {
        problem.allowed[task][device] = false;
      }
    }
  }
  const std::vector<int> order = graph.topological_order();
  problem.topological_position.resize(problem.tasks);
  for (std::size_t i = 0; i < order.size(); ++i) {
    problem.topological_position[order[i]] = static_cast<int>(i);
  }
  return problem;
}

std::optional<Schedule> list_schedule(const Problem& problem) {
  EarliestFinishLimits limits;
  limits.allowed = &problem.allowed;
  limits.ready = &problem.ready;
  limits.memory_capacity = &problem.memory_left;
  EarliestFinishSchedule placed = schedule_earliest_finish(
      *problem.graph, {.upward_rank_order = true, .insertion = false, .planner = "milp"}, limits);
  if (placed.unplaced >= 0) return std::nullopt;
  return Schedule{std::move(placed.worker), std::move(placed.start), placed.makespan};
}

// An upper bound on the makespan of some optimal schedule when no warm start exists: in a
// schedule without needless idle time, the chain of waits behind the last task visits every
// task and edge at most once after the latest ready time.
double trivial_horizon(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  double horizon = 0;
  double latest_ready = 0;
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    double longest = 0;
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      longest = std::max(longest, graph.tasks[task].time[device]);
      latest_ready = std::max(latest_ready, problem.ready[task][device]);
    }
    horizon += longest;
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    double longest = 0;
    for (std::size_t from = 0; from < problem.devices; ++from) {
      for (std::size_t to = 0; to < problem.devices; ++to) {
        const double time = graph.edge_time(edge, from, to);
        if (std::isfinite(time)) longest = std::max(longest, time);
      }
    }
    horizon += longest + problem.prices.receive[edge] + problem.prices.concat[edge];
  }
  // Each task's sends and gathers, as the longest the program may price them.
  const double devices = static_cast<double>(problem.devices);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    double gather = 0;
    for (std::size_t device = 1; device < problem.devices; ++device) {
      const double wire = graph.machine.transfer_time(device, 0, problem.prices.gather_bytes[task]);
      if (std::isfinite(wire)) gather = std::max(gather, wire);
    }
    horizon += problem.prices.send[task] * devices + problem.prices.gather_send[task] + gather;
  }
  return horizon + latest_ready;
}

HeadsAndTails heads_and_tails(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  HeadsAndTails bounds;
  bounds.head.assign(problem.tasks, 0.0);
  bounds.tail.assign(problem.tasks, 0.0);
  bounds.fastest.assign(problem.tasks, kInfinity);
  std::vector<double> earliest_ready(problem.tasks, kInfinity);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      bounds.fastest[task] = std::min(bounds.fastest[task], graph.tasks[task].time[device]);
      earliest_ready[task] = std::min(earliest_ready[task], problem.ready[task][device]);
    }
    if (!std::isfinite(bounds.fastest[task])) return HeadsAndTails{};  // infeasible anyway
  }
  const std::vector<int> order = graph.topological_order();
  const auto in_edges = graph.in_edges();
  const auto out_edges = graph.out_edges();
  for (int task : order) {
    double head = earliest_ready[task];
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      head = std::max(head, bounds.head[producer] + bounds.fastest[producer]);
    }
    bounds.head[task] = head;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    double tail = 0;
    for (int edge : out_edges[*it]) {
      const int consumer = graph.edges[edge].second;
      tail = std::max(tail, bounds.fastest[consumer] + bounds.tail[consumer]);
    }
    bounds.tail[*it] = tail;
  }
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    bounds.makespan =
        std::max(bounds.makespan, bounds.head[task] + bounds.fastest[task] + bounds.tail[task]);
  }
  return bounds;
}

// Devices that swapping leaves the whole problem unchanged; classes of two or more.
std::vector<std::vector<int>> interchangeable_classes(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  // Device 0 hands out the model inputs and gathers the outputs: it has no twin then.
  const bool values_on_zero = has_model_values(graph);
  const auto swappable = [&](std::size_t a, std::size_t b) {
    if (!graph.machine.identical(a, b) || !links_symmetric(graph.machine, a, b)) return false;
    if (values_on_zero && (a == 0 || b == 0)) return false;
    if (problem.memory_left[a] != problem.memory_left[b]) return false;
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      if (problem.allowed[task][a] != problem.allowed[task][b]) return false;
      if (!problem.allowed[task][a]) continue;
      if (graph.tasks[task].time[a] != graph.tasks[task].time[b] ||
          problem.ready[task][a] != problem.ready[task][b]) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::vector<int>> classes;
  std::vector<bool> placed(problem.devices, false);
  for (std::size_t first = 0; first < problem.devices; ++first) {
    if (placed[first]) continue;
    std::vector<int> members{static_cast<int>(first)};
    for (std::size_t other = first + 1; other < problem.devices; ++other) {
      if (!placed[other] && swappable(first, other)) {
        members.push_back(static_cast<int>(other));
        placed[other] = true;
      }
    }
    if (members.size() > 1) classes.push_back(std::move(members));
  }
  return classes;
}

double task_items(const Task& task) {
  return static_cast<double>(std::max<int64_t>(1, task.batch_end - task.batch_begin));
}

double symmetry_metric(SymmetryBreaking symmetry, const Task& task, std::size_t device) {
  switch (symmetry) {
    case SymmetryBreaking::kTaskCount:
      return 1.0;
    case SymmetryBreaking::kUtilisation:
      return task.time[device];
    case SymmetryBreaking::kBatchItems:
      return task_items(task);
    case SymmetryBreaking::kNone:
      break;
  }
  return 0.0;
}

// Renames devices inside each class so the warm start obeys the symmetry-breaking order
// (metric non-increasing along the class).
void order_by_symmetry(Schedule& schedule, const Problem& problem,
                       const std::vector<std::vector<int>>& classes, SymmetryBreaking symmetry) {
  for (const auto& members : classes) {
    std::vector<double> metric(problem.devices, 0.0);
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      const int device = schedule.device[task];
      metric[device] += symmetry_metric(symmetry, problem.graph->tasks[task], device);
    }
    std::vector<int> by_metric = members;
    std::stable_sort(by_metric.begin(), by_metric.end(),
                     [&](int a, int b) { return metric[a] > metric[b]; });
    std::vector<int> rename(problem.devices);
    std::iota(rename.begin(), rename.end(), 0);
    for (std::size_t k = 0; k < members.size(); ++k) rename[by_metric[k]] = members[k];
    for (int& device : schedule.device) device = rename[device];
  }
}

// Orders tasks on one device from their start times: ties (within rounding) put zero-length
// tasks first, then topological position, which reproduces the solver's order.
std::vector<std::vector<int>> orders_from_starts(const TaskGraph& graph,
                                                 const std::vector<int>& device,
                                                 const std::vector<double>& start) {
  const std::size_t tasks = graph.tasks.size();
  const std::vector<int> topological = graph.topological_order();
  std::vector<int> position(tasks);
  for (std::size_t i = 0; i < topological.size(); ++i)
    position[topological[i]] = static_cast<int>(i);
  double horizon = 0;
  for (std::size_t task = 0; task < tasks; ++task) {
    horizon = std::max(horizon, start[task] + graph.tasks[task].time[device[task]]);
  }
  const double tolerance = 1e-9 * std::max(horizon, 1e-300);
  std::vector<std::vector<int>> order(graph.machine.size());
  for (std::size_t task = 0; task < tasks; ++task)
    order[device[task]].push_back(static_cast<int>(task));
  for (auto& list : order) {
    std::sort(list.begin(), list.end(), [&](int a, int b) {
      if (start[a] != start[b]) return start[a] < start[b];
      return position[a] < position[b];
    });
    // Within runs of (nearly) equal starts, zero-length tasks go first.
    for (std::size_t begin = 0; begin < list.size();) {
      std::size_t end = begin + 1;
      while (end < list.size() && start[list[end]] - start[list[begin]] <= tolerance) ++end;
      std::stable_sort(list.begin() + begin, list.begin() + end, [&](int a, int b) {
        const bool a_zero = graph.tasks[a].time[device[a]] <= 0;
        const bool b_zero = graph.tasks[b].time[device[b]] <= 0;
        if (a_zero != b_zero) return a_zero;
        return position[a] < position[b];
      });
      begin = end;
    }
  }
  return order;
}

std::optional<Schedule> linear_timeline(const Problem& problem, const std::vector<int>& device,
                                        const std::vector<std::vector<int>>& order) {
  const TaskGraph& graph = *problem.graph;
  const EndPrices& prices = problem.prices;
  const Machine& machine = graph.machine;
  const auto in_edges = graph.in_edges();
  const auto successors = graph.successors();
  // Per task: its computing (a Concat's copies included), its whole time on its device (the
  // sends after it), and its copies of the messages it receives.
  std::vector<double> compute(problem.tasks), duration(problem.tasks), receive(problem.tasks, 0.0);
  std::vector<std::vector<bool>> sends_to(problem.tasks, std::vector<bool>(problem.devices, false));
  for (const auto& [producer, consumer] : graph.edges) {
    if (device[producer] != device[consumer]) sends_to[producer][device[consumer]] = true;
  }
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const int here = device[task];
    compute[task] = graph.tasks[task].time[here];
    for (int edge : in_edges[task]) {
      if (device[graph.edges[edge].first] == here) continue;
      compute[task] += prices.concat[edge];
      receive[task] += prices.receive[edge];
    }
    const auto readers = std::count(sends_to[task].begin(), sends_to[task].end(), true);
    duration[task] = compute[task] + prices.send[task] * static_cast<double>(readers) +
                     (here != 0 ? prices.gather_send[task] : 0.0);
  }
  std::vector<int> next_on_device(problem.tasks, -1);
  std::vector<int> previous_on_device(problem.tasks, -1);
  for (const auto& list : order) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      next_on_device[list[i - 1]] = list[i];
      previous_on_device[list[i]] = list[i - 1];
    }
  }
  std::vector<int> waiting(problem.tasks, 0);
  std::vector<int> ready;
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    waiting[task] =
        static_cast<int>(in_edges[task].size()) + (previous_on_device[task] >= 0 ? 1 : 0);
    if (waiting[task] == 0) ready.push_back(static_cast<int>(task));
  }
  Schedule timed;
  timed.device = device;
  timed.start.assign(problem.tasks, 0.0);
  std::vector<double> finish(problem.tasks, 0.0);
  std::size_t done = 0;
  while (!ready.empty()) {
    const int task = ready.back();
    ready.pop_back();
    ++done;
    const auto here = static_cast<std::size_t>(device[task]);
    double begin = std::max(problem.ready[task][here], receive[task]);
    if (previous_on_device[task] >= 0)
      begin = std::max(begin, finish[previous_on_device[task]] + receive[task]);
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      const auto from = static_cast<std::size_t>(device[producer]);
      if (from == here) {
        begin = std::max(begin, finish[producer]);
        continue;
      }
      begin = std::max(
          begin, timed.start[producer] + compute[producer] + graph.edge_time(edge, from, here));
      if (prices.priced)
        begin = std::max(begin, finish[producer] + latency_of(machine, from, here));
    }
    timed.start[task] = begin;
    finish[task] = begin + duration[task];
    timed.makespan = std::max(timed.makespan, finish[task]);
    if (here != 0 && prices.gather_bytes[task] > 0) {
      timed.makespan = std::max(
          {timed.makespan, finish[task] + latency_of(machine, here, 0),
           begin + compute[task] + machine.transfer_time(here, 0, prices.gather_bytes[task])});
    }
    for (int next : successors[task]) {
      if (--waiting[next] == 0) ready.push_back(next);
    }
    if (next_on_device[task] >= 0 && --waiting[next_on_device[task]] == 0) {
      ready.push_back(next_on_device[task]);
    }
  }
  if (done != problem.tasks) return std::nullopt;
  return timed;
}

// The same assignment and per-device orders with every task as early as its inputs, its
// device and its ready time allow (the solver leaves slack on tasks off the critical path).
// Returns false, changing nothing, if the orders contradict the edges.
bool left_justify(const Problem& problem, const std::vector<int>& device,
                  std::vector<double>& start) {
  std::optional<Schedule> timed =
      linear_timeline(problem, device, orders_from_starts(*problem.graph, device, start));
  if (!timed) return false;
  start = std::move(timed->start);
  return true;
}

}  // namespace cleave::milp_detail
