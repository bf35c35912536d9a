// Greedy earliest-finish list scheduling without insertion.
#include "plan/greedy.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "plan/list_schedule.h"

namespace cleave {

Plan plan_greedy(const TaskGraph& graph, const GreedyOptions&) {
  const std::vector<int> order = graph.topological_order();
  const auto in_edges = graph.in_edges();
  const std::size_t devices = graph.machine.size();
  MemoryTracker memory(graph);
  std::vector<int> worker_of_task(graph.tasks.size(), -1);
  std::vector<double> finish(graph.tasks.size(), 0.0);
  std::vector<double> worker_free(devices, 0.0);
  double makespan = 0;
  for (int task : order) {
    const Task& info = graph.tasks[task];
    int best = -1;
    double best_finish = std::numeric_limits<double>::infinity();
    for (std::size_t device = 0; device < devices; ++device) {
      const int worker = static_cast<int>(device);
      if (!std::isfinite(info.time[device]) || !memory.fits(task, worker)) continue;
      double start = worker_free[device];
      for (int edge : in_edges[task]) {
        const int producer = graph.edges[edge].first;
        start = std::max(
            start, finish[producer] + graph.edge_time(edge, worker_of_task[producer], worker));
      }
      const double candidate = start + info.time[device];
      if (!std::isfinite(candidate)) continue;  // an input could not reach this device
      if (best < 0 || candidate < best_finish) {
        best = worker;
        best_finish = candidate;
      }
    }
    if (best < 0) {
      throw Error(
          fmt::format("greedy: task \"{}\" ({} weight bytes) fits on no device: memory is "
                      "full or too small, or its inputs cannot reach, everywhere it can "
                      "run",
                      info.name, info.weight_bytes));
    }
    memory.add(task, best);
    worker_of_task[task] = best;
    finish[task] = best_finish;
    worker_free[best] = best_finish;
    makespan = std::max(makespan, best_finish);
  }
  Plan plan;
  plan.strategy = "greedy";
  plan.tasks.resize(graph.tasks.size());
  plan.order.assign(devices, {});
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    plan.tasks[task].task = static_cast<int>(task);
    plan.tasks[task].worker = worker_of_task[task];
  }
  for (int task : order) plan.order[worker_of_task[task]].push_back(task);
  finish_plan(plan, graph, makespan);
  return plan;
}

}  // namespace cleave
