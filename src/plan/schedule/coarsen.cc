// Chain contraction for the schedulers, and the expansion of a coarse plan to the fine tasks.
#include "plan/schedule/coarsen.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "plan/simulator.h"

namespace cleave {
namespace {

std::vector<std::set<int>> distinct(const std::vector<std::vector<int>>& lists) {
  std::vector<std::set<int>> sets(lists.size());
  for (std::size_t i = 0; i < lists.size(); ++i) sets[i].insert(lists[i].begin(), lists[i].end());
  return sets;
}

Task chain_task(const TaskGraph& graph, const std::vector<int>& members) {
  const Task& first = graph.tasks[members.front()];
  if (members.size() == 1) return first;
  const Task& last = graph.tasks[members.back()];
  Task task;
  task.name = fmt::format("{}..{}", first.name, last.name);
  task.time.assign(graph.device_count(), 0.0);
  task.busy_time.assign(first.busy_time.empty() ? 0 : graph.device_count(), 0.0);
  for (int member : members) {
    const Task& part = graph.tasks[member];
    for (std::size_t device = 0; device < task.time.size(); ++device) {
      task.time[device] += part.time[device];
      // A part without busy times takes its time alone there too.
      if (!task.busy_time.empty())
        task.busy_time[device] +=
            part.busy_time.empty() ? part.time[device] : part.busy_time[device];
    }
    task.weight_bytes += part.weight_bytes;
  }
  task.output_bytes = last.output_bytes;
  task.batch_begin = first.batch_begin;
  task.batch_end = first.batch_end;
  return task;
}

}  // namespace

CoarseGraph contract_chains(const TaskGraph& graph) {
  const std::size_t count = graph.tasks.size();
  const std::vector<std::set<int>> successors = distinct(graph.successors());
  const std::vector<std::set<int>> predecessors = distinct(graph.predecessors());
  std::vector<int> next(count, -1);
  std::vector<bool> has_previous(count, false);
  for (std::size_t task = 0; task < count; ++task) {
    if (successors[task].size() != 1) continue;
    const int after = *successors[task].begin();
    if (predecessors[after].size() != 1) continue;
    if (graph.tasks[task].weight_group >= 0 || graph.tasks[after].weight_group >= 0) continue;
    next[task] = after;
    has_previous[after] = true;
  }
  CoarseGraph coarse;
  coarse.graph.machine = graph.machine;
  coarse.coarse_of_task.assign(count, -1);
  // Chains numbered by their first task's place in a topological order, so the coarse graph
  // lists its tasks in the fine graph's order.
  for (int head : graph.topological_order()) {
    if (has_previous[head]) continue;
    std::vector<int> members;
    for (int task = head; task >= 0; task = next[task]) {
      coarse.coarse_of_task[task] = static_cast<int>(coarse.members.size());
      members.push_back(task);
    }
    coarse.graph.tasks.push_back(chain_task(graph, members));
    coarse.members.push_back(std::move(members));
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const int from = coarse.coarse_of_task[graph.edges[edge].first];
    const int to = coarse.coarse_of_task[graph.edges[edge].second];
    if (from == to) continue;
    coarse.graph.edges.emplace_back(from, to);
    coarse.graph.edge_bytes.push_back(graph.bytes_on_edge(edge));
  }
  return coarse;
}

Plan expand_plan(const Plan& coarse_plan, const CoarseGraph& coarse, const TaskGraph& fine) {
  if (coarse_plan.tasks.size() != coarse.members.size()) {
    throw Error(fmt::format("expand_plan: the plan places {} tasks, the coarse graph has {}",
                            coarse_plan.tasks.size(), coarse.members.size()));
  }
  Plan plan;
  plan.strategy = coarse_plan.strategy;
  plan.objective = coarse_plan.objective;
  plan.batch = coarse_plan.batch;
  plan.notes = coarse_plan.notes;
  plan.notes["coarse_tasks"] = coarse.members.size();
  plan.tasks.resize(fine.tasks.size());
  for (std::size_t task = 0; task < fine.tasks.size(); ++task) {
    plan.tasks[task].task = static_cast<int>(task);
    plan.tasks[task].worker = coarse_plan.tasks.at(coarse.coarse_of_task.at(task)).worker;
  }
  plan.order.resize(coarse_plan.order.size());
  for (std::size_t worker = 0; worker < coarse_plan.order.size(); ++worker) {
    for (int chain : coarse_plan.order[worker]) {
      const std::vector<int>& members = coarse.members.at(chain);
      plan.order[worker].insert(plan.order[worker].end(), members.begin(), members.end());
    }
  }
  validate_plan(plan, fine);
  apply_simulation(plan, simulate(plan, fine));
  return plan;
}

}  // namespace cleave
