// Task cloning: trade redundant computation of cheap producers for fewer cross-worker waits.
#include "plan/cluster/cloning.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "plan/list_schedule.h"

namespace cleave {

namespace {

// The graph with `task` duplicated onto `worker` for the consumers there.
TaskGraph with_clone(const TaskGraph& graph, const std::vector<int>& worker_of_task, int task,
                     int worker, int clone_number) {
  TaskGraph result = graph;
  int clone = static_cast<int>(result.tasks.size());
  Task copy = graph.tasks[task];
  copy.name = fmt::format("{}@clone{}", graph.tasks[task].name, clone_number);
  result.tasks.push_back(copy);
  std::vector<std::pair<int, int>> edges;
  for (const auto& [from, to] : graph.edges) {
    if (from == task && worker_of_task[to] == worker) {
      edges.emplace_back(clone, to);
    } else {
      edges.emplace_back(from, to);
    }
    if (to == task) edges.emplace_back(from, clone);
  }
  result.edges = std::move(edges);
  return result;
}

}  // namespace

PlannedTasks plan_with_cloning(const TaskGraph& graph, const Plan& base,
                               const CloneOptions& options) {
  PlannedTasks best{graph, base};
  std::vector<int> worker_of_task(graph.tasks.size());
  for (std::size_t t = 0; t < graph.tasks.size(); ++t) worker_of_task[t] = base.tasks[t].worker;
  AppendScheduler initial(graph, upward_rank_order(graph));
  double best_makespan = initial.makespan(worker_of_task);
  int budget = std::max(1, static_cast<int>(std::floor(options.max_growth * graph.tasks.size())));
  int clones = 0;
  int64_t trials = 0;
  std::set<std::pair<int, int>> tried;
  bool improved = true;
  while (improved && clones < budget) {
    improved = false;
    const TaskGraph& current = best.tasks;
    double threshold = options.cheap_fraction * best_makespan;
    for (std::size_t task = 0; task < current.tasks.size() && !improved; ++task) {
      if (mean_task_time(current.tasks[task]) > threshold) continue;
      std::set<int> remote_workers;
      for (const auto& [from, to] : current.edges) {
        if (from == static_cast<int>(task) && worker_of_task[to] != worker_of_task[task]) {
          remote_workers.insert(worker_of_task[to]);
        }
      }
      for (int worker : remote_workers) {
        if (!tried.insert({static_cast<int>(task), worker}).second) continue;
        if (options.max_trials >= 0 && trials++ >= options.max_trials) break;
        TaskGraph candidate =
            with_clone(current, worker_of_task, static_cast<int>(task), worker, clones + 1);
        std::vector<int> assignment = worker_of_task;
        assignment.push_back(worker);
        AppendScheduler scheduler(candidate, upward_rank_order(candidate));
        double makespan = scheduler.makespan(assignment);
        if (makespan < best_makespan * (1 - 1e-9)) {
          best_makespan = makespan;
          best.plan = scheduler.to_plan(assignment, "clone");
          best.tasks = std::move(candidate);
          worker_of_task = std::move(assignment);
          ++clones;
          improved = true;
          // Tried pairs refer to old task ids only; new tasks are appended, ids stay valid.
          break;
        }
      }
    }
  }
  if (clones == 0) {
    best.plan = initial.to_plan(worker_of_task, "clone");
  }
  best.plan.notes["clones"] = clones;
  for (const char* key : {"clusters_before_merge", "clusters_after_merge"}) {
    if (base.notes.contains(key)) best.plan.notes[key] = base.notes[key];
  }
  return best;
}

}  // namespace cleave
