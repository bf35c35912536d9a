// Earliest-finish-time list scheduling, optionally inserting into idle gaps: HEFT, greedy and
// the MILP's warm start are configurations of it. The per-worker orders are the slots' order.
#include "plan/earliest_finish.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "ir/graph.h"
#include "plan/list_schedule.h"
#include "plan/simulator.h"
#include "support/timing.h"

namespace cleave {
namespace {

struct Slot {
  double start = 0;
  double finish = 0;
  int task = -1;
};

// Earliest start at or after `ready` where `duration` fits on a worker with these busy slots
// (sorted by start); `position` receives where the new slot goes.
double earliest_start(const std::vector<Slot>& slots, double ready, double duration, bool insertion,
                      std::size_t& position) {
  if (insertion) {
    // A slot that starts at or before `ready` cannot have room before it, so the search starts
    // at the first slot starting after `ready` (slots do not overlap: starts and finishes are
    // both sorted). Scanning from the first slot made HEFT quadratic on long chains.
    const auto first =
        std::upper_bound(slots.begin(), slots.end(), ready,
                         [](double time, const Slot& slot) { return time < slot.start; });
    std::size_t i = static_cast<std::size_t>(first - slots.begin());
    double gap_begin = i == 0 ? 0.0 : slots[i - 1].finish;
    for (; i < slots.size(); ++i) {
      const double start = std::max(ready, gap_begin);
      // Strictly before the next slot's start: a zero-length task ready exactly when a
      // zero-length producer runs must not jump ahead of it (that order would deadlock).
      if (start < slots[i].start && start + duration <= slots[i].start) {
        position = i;
        return start;
      }
      gap_begin = slots[i].finish;
    }
  }
  position = slots.size();
  return std::max(ready, slots.empty() ? 0.0 : slots.back().finish);
}

// The devices a task is tried on: all of them, or once the time limit is spent only its
// producers' devices and its own fastest one (appending there keeps the plan valid and cheap).
void candidate_devices(const TaskGraph& graph, int task, const std::vector<int>& in_edges,
                       const std::vector<int>& worker, bool cut_short,
                       std::vector<std::size_t>& devices) {
  devices.clear();
  const std::size_t count = graph.machine.size();
  if (!cut_short) {
    for (std::size_t device = 0; device < count; ++device) devices.push_back(device);
    return;
  }
  for (int edge : in_edges) {
    devices.push_back(static_cast<std::size_t>(worker[graph.edges[edge].first]));
  }
  devices.push_back(static_cast<std::size_t>(fastest_device(graph.tasks[task])));
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
}

}  // namespace

EarliestFinishSchedule schedule_earliest_finish(const TaskGraph& graph,
                                                const EarliestFinishOptions& options,
                                                const EarliestFinishLimits& limits) {
  const auto began = std::chrono::steady_clock::now();  // the ranks count against the limit
  const std::vector<int> order =
      options.upward_rank_order ? upward_rank_order(graph) : graph.topological_order();
  const auto in_edges = graph.in_edges();
  const std::size_t devices = graph.machine.size();
  MemoryTracker memory =
      limits.memory_capacity ? MemoryTracker(graph, *limits.memory_capacity) : MemoryTracker(graph);
  EarliestFinishSchedule schedule;
  schedule.worker.assign(graph.tasks.size(), -1);
  schedule.start.assign(graph.tasks.size(), 0.0);
  std::vector<double> finish(graph.tasks.size(), 0.0);
  std::vector<std::vector<Slot>> timeline(devices);
  std::vector<std::size_t> candidates;
  struct Choice {
    int worker = -1;
    double start = 0;
    double finish = std::numeric_limits<double>::infinity();
    std::size_t position = 0;
  };
  // With priced message ends, a task placed on a worker adds its producers' sends there and
  // its own copies, which move tasks placed before it: each candidate is timed by the
  // simulator's clock over the schedule so far with the task in its slot, and the chosen one's
  // times become every placed task's.
  // (Not with ready times: the clock knows none; MILP-SPLIT's modules keep the link's price.)
  const auto tasks = static_cast<double>(graph.tasks.size());
  const bool priced_ends =
      graph.machine.prices_message_ends() && !limits.ready &&
      tasks * tasks * static_cast<double>(devices) <= options.clocked_placement_steps;
  std::vector<std::vector<int>> listed(devices);
  std::optional<OrdersClock> clock;
  if (priced_ends) clock.emplace(graph);
  const auto listed_with = [&](int task, std::size_t device, std::size_t position) {
    std::vector<std::vector<int>> order = listed;
    order[device].insert(order[device].begin() + static_cast<std::ptrdiff_t>(position), task);
    return order;
  };
  // Where `task` finishes earliest among `candidates` (worker -1: nowhere).
  const auto choose = [&](int task, bool insertion) {
    const Task& info = graph.tasks[task];
    Choice best;
    for (std::size_t device : candidates) {
      const int worker = static_cast<int>(device);
      if (!std::isfinite(info.time[device]) || !memory.fits(task, worker)) continue;
      if (limits.allowed && !(*limits.allowed)[task][device]) continue;
      double ready = limits.ready ? (*limits.ready)[task][device] : 0.0;
      ready = std::max(ready, graph.input_arrival(task, device));
      for (int edge : in_edges[task]) {
        const int producer = graph.edges[edge].first;
        ready = std::max(
            ready, finish[producer] + graph.edge_time(edge, schedule.worker[producer], worker));
      }
      std::size_t position = 0;
      const double start =
          earliest_start(timeline[device], ready, info.time[device], insertion, position);
      double candidate = start + info.time[device];
      if (!std::isfinite(candidate)) continue;  // an input could not reach this device
      if (priced_ends)
        candidate = clock->simulate(listed_with(task, device, position)).finish[task];
      if (best.worker < 0 || candidate < best.finish) best = {worker, start, candidate, position};
    }
    return best;
  };
  for (std::size_t index = 0; index < order.size(); ++index) {
    const int task = order[index];
    if (schedule.fallback_tasks == 0 && options.time_limit_seconds > 0 &&
        seconds_since(began) > options.time_limit_seconds) {
      schedule.fallback_tasks = order.size() - index;
    }
    const bool cut_short = schedule.fallback_tasks > 0;
    candidate_devices(graph, task, in_edges[task], schedule.worker, cut_short, candidates);
    Choice chosen = choose(task, options.insertion && !cut_short);
    if (chosen.worker < 0 && cut_short) {
      // The cheap candidates are full or unreachable: this task still gets every device.
      candidate_devices(graph, task, in_edges[task], schedule.worker, false, candidates);
      chosen = choose(task, false);
    }
    const int best = chosen.worker;
    const double best_start = chosen.start;
    const double best_finish = chosen.finish;
    const std::size_t best_position = chosen.position;
    if (best < 0) {
      schedule.unplaced = task;
      break;
    }
    memory.add(task, best);
    schedule.worker[task] = best;
    schedule.start[task] = best_start;
    finish[task] = best_finish;
    timeline[best].insert(timeline[best].begin() + static_cast<std::ptrdiff_t>(best_position),
                          Slot{best_start, best_finish, task});
    schedule.makespan = std::max(schedule.makespan, best_finish);
    if (priced_ends) {
      listed = listed_with(task, static_cast<std::size_t>(best), best_position);
      const Simulation timed = clock->simulate(listed);
      for (std::size_t device = 0; device < devices; ++device) {
        for (Slot& slot : timeline[device]) {
          slot.start = schedule.start[slot.task] = timed.start[slot.task];
          slot.finish = finish[slot.task] = timed.finish[slot.task];
        }
      }
      schedule.makespan = timed.makespan;
    }
  }
  if (schedule.unplaced < 0 && !priced_ends) {
    for (const OutputGather& gather : graph.output_gathers(schedule.worker))
      schedule.makespan = std::max(schedule.makespan, finish[gather.task] + gather.seconds);
  }
  schedule.order.assign(devices, {});
  for (std::size_t device = 0; device < devices; ++device) {
    for (const Slot& slot : timeline[device]) schedule.order[device].push_back(slot.task);
  }
  return schedule;
}

Plan plan_earliest_finish(const TaskGraph& graph, const EarliestFinishOptions& options) {
  EarliestFinishSchedule schedule = schedule_earliest_finish(graph, options);
  if (schedule.unplaced >= 0) {
    const Task& info = graph.tasks[schedule.unplaced];
    throw Error(
        fmt::format("{}: task \"{}\" ({} weight bytes) fits on no device: memory is "
                    "full or too small, or its inputs cannot reach, everywhere it can "
                    "run",
                    options.planner, info.name, info.weight_bytes));
  }
  Plan plan;
  plan.strategy = options.planner;
  plan.tasks.resize(graph.tasks.size());
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    plan.tasks[task].task = static_cast<int>(task);
    plan.tasks[task].worker = schedule.worker[task];
  }
  plan.order = std::move(schedule.order);
  finish_plan(plan, graph, schedule.makespan);
  if (schedule.fallback_tasks > 0) {
    plan.notes["time_limit_reached"] = true;
    plan.notes["fallback_tasks"] = schedule.fallback_tasks;
  }
  return plan;
}

}  // namespace cleave
