// The shared link's lower bound on the makespan, as MILP rows and for one assignment.
#include "plan/schedule/milp_medium.h"

#include <algorithm>
#include <cmath>

namespace cleave::milp_detail {

MediumBound medium_bound(const Problem& problem, const HeadsAndTails& bounds) {
  MediumBound bound;
  const TaskGraph& graph = *problem.graph;
  const Machine& machine = graph.machine;
  if (!machine.queues_on_one_link() || bounds.head.empty() || graph.edges.empty()) return bound;
  // Per device its fastest link in; over every link the slowest (whose burst saves the most) and
  // the least latency.
  std::vector<double> fastest_in(problem.devices, 0.0);
  double slowest = kInfinity, latency = kInfinity;
  for (std::size_t from = 0; from < problem.devices; ++from) {
    for (std::size_t to = 0; to < problem.devices; ++to) {
      const double bandwidth = machine.bandwidth.at(from).at(to);
      if (from == to || !(bandwidth > 0)) continue;
      fastest_in[to] = std::max(fastest_in[to], bandwidth);
      slowest = std::min(slowest, bandwidth);
      latency = std::min(latency, machine.latency.empty() ? 0.0 : machine.latency[from][to]);
    }
  }
  if (!std::isfinite(slowest)) return bound;  // no links: nothing crosses
  std::vector<double> smallest(problem.tasks, kInfinity);
  double first = kInfinity, after = kInfinity;
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    smallest[producer] = std::min(smallest[producer], graph.bytes_on_edge(edge));
    first = std::min(first, bounds.head[producer] + bounds.fastest[producer]);
    after = std::min(after, bounds.fastest[consumer] + bounds.tail[consumer]);
  }
  bound.seconds.assign(problem.tasks, std::vector<double>(problem.devices, 0.0));
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    if (!std::isfinite(smallest[task])) continue;
    for (std::size_t device = 0; device < problem.devices; ++device)
      if (fastest_in[device] > 0) bound.seconds[task][device] = smallest[task] / fastest_in[device];
  }
  bound.base = first + after;
  bound.once = latency - machine.link_burst_bytes / slowest;
  return bound;
}

double medium_makespan(const Problem& problem, const MediumBound& bound,
                       const std::vector<int>& device) {
  if (bound.seconds.empty()) return 0;
  const TaskGraph& graph = *problem.graph;
  std::vector<std::vector<bool>> sent(problem.tasks, std::vector<bool>(problem.devices, false));
  double seconds = 0;
  bool any = false;
  for (const auto& [producer, consumer] : graph.edges) {
    const int to = device[consumer];
    if (to == device[producer] || sent[producer][to]) continue;
    sent[producer][to] = true;
    any = true;
    seconds += bound.seconds[producer][to];
  }
  return any ? bound.base + bound.once + seconds : 0.0;
}

void add_medium_rows(Program& program, const Problem& problem, const MediumBound& bound) {
  if (bound.seconds.empty()) return;
  const TaskGraph& graph = *problem.graph;
  const auto& x = program.x;
  program.medium.assign(problem.tasks, std::vector<int>(problem.devices, -1));
  std::vector<int> columns;
  for (const auto& [producer, consumer] : graph.edges) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (x[consumer][device] < 0) continue;
      int& column = program.medium[producer][device];
      if (column < 0) {
        column = program.builder.add_column(0, 1, 0, false);
        columns.push_back(column);
      }
      std::vector<std::pair<int, double>> terms{{column, 1.0}, {x[consumer][device], -1.0}};
      if (x[producer][device] >= 0) terms.push_back({x[producer][device], 1.0});
      program.builder.add_row(terms, 0.0, COIN_DBL_MAX);
    }
  }
  if (columns.empty()) return;
  program.medium_any = program.builder.add_column(0, 1, 0, false);
  for (int column : columns)
    program.builder.add_row({{program.medium_any, 1.0}, {column, -1.0}}, 0.0, COIN_DBL_MAX);
  std::vector<std::pair<int, double>> terms{{program.makespan, 1.0},
                                            {program.medium_any, -program.scaled(bound.once)}};
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      const int column = program.medium[task][device];
      if (column >= 0 && bound.seconds[task][device] > 0)
        terms.push_back({column, -program.scaled(bound.seconds[task][device])});
    }
  }
  program.builder.add_row(terms, program.scaled(bound.base), COIN_DBL_MAX);
}

}  // namespace cleave::milp_detail
