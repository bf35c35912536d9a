// The DiviML program's columns and rows, one function per condition, and the MIP start.
#include "plan/schedule/milp_program.h"

#include <algorithm>
#include <cmath>

#include "ir/graph.h"
#include "plan/schedule/modules.h"

namespace cleave::milp_detail {
namespace {

// sign * the task's duration on its chosen device, as terms over its assignment columns.
std::vector<std::pair<int, double>> duration_terms(const Program& program, const TaskGraph& graph,
                                                   int task, double sign) {
  std::vector<std::pair<int, double>> terms;
  for (std::size_t device = 0; device < program.x[task].size(); ++device) {
    if (program.x[task][device] >= 0) {
      terms.push_back(
          {program.x[task][device], sign * program.scaled(graph.tasks[task].time[device])});
    }
  }
  return terms;
}

}  // namespace

SliceGroups make_slice_groups(const TaskGraph& graph) {
  SliceGroups groups;
  groups.group_of_task = slice_groups(graph, &groups.count);
  groups.members.assign(groups.count, {});
  for (std::size_t task = 0; task < graph.tasks.size(); ++task)
    groups.members[groups.group_of_task[task]].push_back(static_cast<int>(task));
  return groups;
}

std::optional<Program> add_columns(const Problem& problem, const HeadsAndTails& bounds,
                                   double horizon, double lower, double big_m) {
  const TaskGraph& graph = *problem.graph;
  Program program;
  program.scale = horizon / big_m;
  program.big_m = big_m;
  program.x.assign(problem.tasks, std::vector<int>(problem.devices, -1));
  program.start.resize(problem.tasks);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      // A device too slow to finish the task within the horizon cannot be in an optimum.
      if (!bounds.head.empty() &&
          bounds.head[task] + graph.tasks[task].time[device] + bounds.tail[task] >
              horizon * (1 + 1e-9)) {
        continue;
      }
      program.x[task][device] = program.builder.add_column(0, 1, 0, true);
    }
    if (std::all_of(program.x[task].begin(), program.x[task].end(),
                    [](int column) { return column < 0; })) {
      return std::nullopt;
    }
    const double head =
        bounds.head.empty() ? 0.0 : std::min(program.scaled(bounds.head[task]), big_m);
    program.start[task] = program.builder.add_column(head, big_m, 0, false);
  }
  program.makespan =
      program.builder.add_column(std::min(program.scaled(lower), big_m), big_m, 1.0, false);
  return program;
}

void add_assignment_rows(Program& program, const Problem& problem) {
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    std::vector<std::pair<int, double>> terms;
    std::vector<std::pair<int, double>> ready_terms{{program.start[task], 1.0}};
    bool any_ready = false;
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (program.x[task][device] < 0) continue;
      terms.push_back({program.x[task][device], 1.0});
      if (problem.ready[task][device] > 0) {
        ready_terms.push_back(
            {program.x[task][device], -program.scaled(problem.ready[task][device])});
        any_ready = true;
      }
    }
    program.builder.add_row(terms, 1.0, 1.0);
    if (any_ready) program.builder.add_row(ready_terms, 0.0, COIN_DBL_MAX);
  }
}

void add_makespan_rows(Program& program, const Problem& problem, const HeadsAndTails& bounds) {
  const TaskGraph& graph = *problem.graph;
  // For every task with the work that must follow it (for tasks with successors the rows are
  // implied in integer solutions, but they tighten the relaxation).
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    auto terms = duration_terms(program, graph, static_cast<int>(task), -1.0);
    terms.push_back({program.makespan, 1.0});
    terms.push_back({program.start[task], -1.0});
    program.builder.add_row(terms, bounds.tail.empty() ? 0.0 : program.scaled(bounds.tail[task]),
                            COIN_DBL_MAX);
  }
  // Each device is busy at most C (tasks on one device do not overlap; strengthens the
  // relaxation). Ready times cannot be subtracted: a device may end up unused.
  for (std::size_t device = 0; device < problem.devices; ++device) {
    std::vector<std::pair<int, double>> terms{{program.makespan, -1.0}};
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      if (program.x[task][device] >= 0)
        terms.push_back({program.x[task][device], program.scaled(graph.tasks[task].time[device])});
    }
    if (terms.size() > 1) program.builder.add_row(terms, -COIN_DBL_MAX, 0.0);
  }
}

void add_precedence_rows(Program& program, const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  const auto& x = program.x;
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    auto base = duration_terms(program, graph, producer, -1.0);
    base.push_back({program.start[consumer], 1.0});
    base.push_back({program.start[producer], -1.0});
    program.builder.add_row(base, 0.0, COIN_DBL_MAX);
    for (std::size_t from = 0; from < problem.devices; ++from) {
      if (x[producer][from] < 0) continue;
      for (std::size_t to = 0; to < problem.devices; ++to) {
        if (to == from || x[consumer][to] < 0) continue;
        const double transfer = graph.edge_time(edge, from, to);
        if (!std::isfinite(transfer)) {
          program.builder.add_row({{x[producer][from], 1.0}, {x[consumer][to], 1.0}}, -COIN_DBL_MAX,
                                  1.0);
          continue;
        }
        if (transfer <= 0) continue;
        const double cost = program.scaled(transfer);
        auto terms = base;
        terms.push_back({x[producer][from], -cost});
        terms.push_back({x[consumer][to], -cost});
        program.builder.add_row(terms, -cost, COIN_DBL_MAX);
      }
    }
  }
}

void add_order_rows(Program& program, const Problem& problem, const HeadsAndTails& bounds) {
  const TaskGraph& graph = *problem.graph;
  const auto& x = program.x;
  const auto& start = program.start;
  const auto head_of = [&](std::size_t task) {
    return bounds.head.empty() ? 0.0 : program.scaled(bounds.head[task]);
  };
  const auto latest_start = [&](std::size_t task) {
    if (bounds.tail.empty()) return program.big_m;
    return std::max(0.0, program.big_m - program.scaled(bounds.tail[task] + bounds.fastest[task]));
  };
  const Reachability reachability(graph);
  for (std::size_t a = 0; a < problem.tasks; ++a) {
    for (std::size_t b = a + 1; b < problem.tasks; ++b) {
      const int first = static_cast<int>(a);
      const int second = static_cast<int>(b);
      if (reachability.ordered(first, second)) {
        ++program.ordered_pairs;
        continue;
      }
      std::vector<std::size_t> shared;
      for (std::size_t device = 0; device < problem.devices; ++device) {
        if (x[a][device] < 0 || x[b][device] < 0) continue;
        if (graph.tasks[a].time[device] <= 0 && graph.tasks[b].time[device] <= 0) continue;
        shared.push_back(device);
      }
      if (shared.empty()) continue;
      ++program.disjunctive_pairs;
      const int before = program.builder.add_column(0, 1, 0, true);
      program.order_columns.push_back({{first, second}, before});
      for (std::size_t device : shared) {
        // before = 1: a ends before b starts; before = 0: b ends before a starts. Each M is
        // the most its row's left side can be in any schedule within the horizon, whatever
        // the devices (a starts by the horizon minus its fastest time and tail, b after its
        // head), so the rows relax no further than they must.
        const double time_a = program.scaled(graph.tasks[a].time[device]);
        const double time_b = program.scaled(graph.tasks[b].time[device]);
        const double a_then_b = std::max(0.0, latest_start(a) + time_a - head_of(b));
        const double b_then_a = std::max(0.0, latest_start(b) + time_b - head_of(a));
        program.builder.add_row({{start[a], 1.0},
                                 {start[b], -1.0},
                                 {before, a_then_b},
                                 {x[a][device], a_then_b},
                                 {x[b][device], a_then_b}},
                                -COIN_DBL_MAX, 3 * a_then_b - time_a);
        program.builder.add_row({{start[b], 1.0},
                                 {start[a], -1.0},
                                 {before, -b_then_a},
                                 {x[a][device], b_then_a},
                                 {x[b][device], b_then_a}},
                                -COIN_DBL_MAX, 2 * b_then_a - time_b);
      }
    }
  }
}

void add_memory_rows(Program& program, const Problem& problem) {
  const auto& x = program.x;
  for (std::size_t device = 0; device < problem.devices; ++device) {
    if (!std::isfinite(problem.memory_left[device])) continue;
    double demand = 0;
    std::vector<bool> key_seen(problem.key_bytes.size(), false);
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      const int key = problem.memory_key[task];
      if (x[task][device] >= 0 && !key_seen[key]) {
        key_seen[key] = true;
        demand += problem.key_bytes[key];
      }
    }
    if (demand <= problem.memory_left[device]) continue;  // cannot bind
    std::vector<std::vector<int>> members(problem.key_bytes.size());
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      if (x[task][device] >= 0) members[problem.memory_key[task]].push_back(static_cast<int>(task));
    }
    std::vector<std::pair<int, double>> memory_terms;
    // Rows in megabytes keep coefficients near one.
    constexpr double kUnit = 1e6;
    for (std::size_t key = 0; key < members.size(); ++key) {
      if (members[key].empty() || problem.key_bytes[key] <= 0) continue;
      const double bytes = problem.key_bytes[key] / kUnit;
      if (members[key].size() == 1) {
        memory_terms.push_back({x[members[key][0]][device], bytes});
        continue;
      }
      const int resident = program.builder.add_column(0, 1, 0, false);
      program.residency[{static_cast<int>(key), device}] = resident;
      for (int task : members[key]) {
        program.builder.add_row({{resident, 1.0}, {x[task][device], -1.0}}, 0.0, COIN_DBL_MAX);
      }
      memory_terms.push_back({resident, bytes});
    }
    program.builder.add_row(memory_terms, -COIN_DBL_MAX, problem.memory_left[device] / kUnit);
  }
}

void add_share_rows(Program& program, const Problem& problem, const SliceGroups& groups) {
  const TaskGraph& graph = *problem.graph;
  for (int group = 0; group < groups.count; ++group) {
    if (groups.members[group].size() < 2) continue;
    double total = 0;
    for (int task : groups.members[group]) total += task_items(graph.tasks[task]);
    for (std::size_t device = 0; device < problem.devices; ++device) {
      const auto& sizes = graph.machine.devices[device].batch_sizes;
      if (sizes.empty()) continue;
      std::vector<std::pair<int, double>> share_terms;
      std::vector<std::pair<int, double>> choice_terms;
      for (int task : groups.members[group]) {
        if (program.x[task][device] >= 0)
          share_terms.push_back({program.x[task][device], task_items(graph.tasks[task])});
      }
      if (share_terms.empty()) continue;
      for (int64_t size : sizes) {
        if (size <= 0 || static_cast<double>(size) > total) continue;
        const int chosen = program.builder.add_column(0, 1, 0, true);
        program.share_columns[{group, device, size}] = chosen;
        share_terms.push_back({chosen, -static_cast<double>(size)});
        choice_terms.push_back({chosen, 1.0});
      }
      program.builder.add_row(share_terms, 0.0, 0.0);
      if (!choice_terms.empty()) program.builder.add_row(choice_terms, -COIN_DBL_MAX, 1.0);
    }
  }
}

void add_symmetry_rows(Program& program, const Problem& problem,
                       const std::vector<std::vector<int>>& classes, SymmetryBreaking symmetry) {
  const TaskGraph& graph = *problem.graph;
  for (const auto& members : classes) {
    for (std::size_t k = 0; k + 1 < members.size(); ++k) {
      std::vector<std::pair<int, double>> terms;
      for (std::size_t task = 0; task < problem.tasks; ++task) {
        const int here = program.x[task][members[k]];
        const int next = program.x[task][members[k + 1]];
        if (here >= 0)
          terms.push_back({here, symmetry_metric(symmetry, graph.tasks[task], members[k])});
        if (next >= 0)
          terms.push_back({next, -symmetry_metric(symmetry, graph.tasks[task], members[k + 1])});
      }
      program.builder.add_row(terms, 0.0, COIN_DBL_MAX);
    }
  }
}

std::vector<std::pair<std::string, double>> mip_start(const Program& program,
                                                      const Problem& problem, const Schedule& warm,
                                                      const SliceGroups& groups) {
  const TaskGraph& graph = *problem.graph;
  std::vector<std::pair<std::string, double>> values;
  std::vector<double> finish(problem.tasks);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    finish[task] = warm.start[task] + graph.tasks[task].time[warm.device[task]];
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (program.x[task][device] >= 0) {
        values.push_back({ProgramBuilder::solver_name(program.x[task][device]),
                          warm.device[task] == static_cast<int>(device) ? 1.0 : 0.0});
      }
    }
    values.push_back(
        {ProgramBuilder::solver_name(program.start[task]), program.scaled(warm.start[task])});
  }
  values.push_back({ProgramBuilder::solver_name(program.makespan), program.scaled(warm.makespan)});
  for (const auto& [pair, column] : program.order_columns) {
    const auto [a, b] = pair;
    // The warm start appends to devices, so on a shared device start order is the order.
    const bool a_first = warm.start[a] < warm.start[b] ||
                         (warm.start[a] == warm.start[b] &&
                          (finish[a] < finish[b] ||
                           (finish[a] == finish[b] &&
                            problem.topological_position[a] < problem.topological_position[b])));
    values.push_back({ProgramBuilder::solver_name(column), a_first ? 1.0 : 0.0});
  }
  for (const auto& [key_device, column] : program.residency) {
    bool resident = false;
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      resident = resident || (problem.memory_key[task] == key_device.first &&
                              warm.device[task] == static_cast<int>(key_device.second));
    }
    values.push_back({ProgramBuilder::solver_name(column), resident ? 1.0 : 0.0});
  }
  if (!program.share_columns.empty()) {
    std::vector<std::vector<double>> share(groups.count, std::vector<double>(problem.devices, 0.0));
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      share[groups.group_of_task[task]][warm.device[task]] += task_items(graph.tasks[task]);
    }
    for (const auto& [key, column] : program.share_columns) {
      const auto [group, device, size] = key;
      values.push_back({ProgramBuilder::solver_name(column),
                        share[group][device] == static_cast<double>(size) ? 1.0 : 0.0});
    }
  }
  return values;
}

}  // namespace cleave::milp_detail
