// The DiviML program's columns and rows, one function per condition, and the MIP start.
#include "plan/schedule/milp_program.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ir/graph.h"
#include "plan/schedule/modules.h"

namespace cleave::milp_detail {
namespace {

// sign * a Concat's copies of its inputs from other devices into its output.
std::vector<std::pair<int, double>> concat_terms(const Program& program, const Problem& problem,
                                                 int task, double sign) {
  std::vector<std::pair<int, double>> terms;
  if (program.cut.empty()) return terms;
  const TaskGraph& graph = *problem.graph;
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    if (graph.edges[edge].second == task && problem.prices.concat[edge] > 0)
      terms.push_back({program.cut[edge], sign * program.scaled(problem.prices.concat[edge])});
  }
  return terms;
}

// sign * the task's computing on its chosen device (a Concat's copies of remote inputs
// included), as terms over its assignment and cut columns.
std::vector<std::pair<int, double>> compute_terms(const Program& program, const Problem& problem,
                                                  int task, double sign) {
  const TaskGraph& graph = *problem.graph;
  std::vector<std::pair<int, double>> terms;
  for (std::size_t device = 0; device < program.x[task].size(); ++device) {
    if (program.x[task][device] >= 0) {
      terms.push_back(
          {program.x[task][device], sign * program.scaled(graph.tasks[task].time[device])});
    }
  }
  const auto copies = concat_terms(program, problem, task, sign);
  terms.insert(terms.end(), copies.begin(), copies.end());
  return terms;
}

// The sends after the task: one copy per device that reads it, its gathered outputs' copies
// off device 0.
std::vector<std::pair<int, double>> send_terms(const Program& program, const Problem& problem,
                                               int task, double sign) {
  std::vector<std::pair<int, double>> terms;
  if (program.sends.empty()) return terms;
  for (std::size_t device = 0; device < problem.devices; ++device) {
    if (program.sends[task][device] >= 0) {
      terms.push_back(
          {program.sends[task][device], sign * program.scaled(problem.prices.send[task])});
    }
    if (device != 0 && program.x[task][device] >= 0 && problem.prices.gather_send[task] > 0) {
      terms.push_back(
          {program.x[task][device], sign * program.scaled(problem.prices.gather_send[task])});
    }
  }
  return terms;
}

// sign * the task's whole time on its chosen device: computing, then sending.
std::vector<std::pair<int, double>> duration_terms(const Program& program, const Problem& problem,
                                                   int task, double sign) {
  auto terms = compute_terms(program, problem, task, sign);
  const auto sends = send_terms(program, problem, task, sign);
  terms.insert(terms.end(), sends.begin(), sends.end());
  return terms;
}

// sign * the task's copies of the messages it receives.
std::vector<std::pair<int, double>> receive_terms(const Program& program, const Problem& problem,
                                                  int task, double sign) {
  std::vector<std::pair<int, double>> terms;
  if (program.cut.empty()) return terms;
  const TaskGraph& graph = *problem.graph;
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    if (graph.edges[edge].second == task)
      terms.push_back({program.cut[edge], sign * program.scaled(problem.prices.receive[edge])});
  }
  return terms;
}

// The most the send, receive and Concat copies can add to a task's terms.
double most_copies(const Problem& problem, int task) {
  const TaskGraph& graph = *problem.graph;
  double most = problem.prices.send[task] * static_cast<double>(problem.devices) +
                problem.prices.gather_send[task];
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    if (graph.edges[edge].second == task)
      most += problem.prices.receive[edge] + problem.prices.concat[edge];
  }
  return most;
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
  if (problem.prices.priced) {
    // Continuous: the rows force them to 0 or 1 once the assignment is integral.
    program.sends.assign(problem.tasks, std::vector<int>(problem.devices, -1));
    for (const auto& [producer, consumer] : graph.edges) {
      if (problem.prices.send[producer] <= 0) continue;
      for (std::size_t device = 0; device < problem.devices; ++device) {
        int& column = program.sends[producer][device];
        if (program.x[consumer][device] >= 0 && column < 0)
          column = program.builder.add_column(0, 1, 0, false);
      }
    }
    program.cut.assign(graph.edges.size(), -1);
    for (std::size_t edge = 0; edge < graph.edges.size(); ++edge)
      program.cut[edge] = program.builder.add_column(0, 1, 0, false);
  }
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
    auto terms = duration_terms(program, problem, static_cast<int>(task), -1.0);
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
      if (program.x[task][device] >= 0) {
        const double gather = device != 0 ? problem.prices.gather_send[task] : 0.0;
        terms.push_back(
            {program.x[task][device], program.scaled(graph.tasks[task].time[device] + gather)});
      }
    }
    if (terms.size() > 1) program.builder.add_row(terms, -COIN_DBL_MAX, 0.0);
  }
  // Device 0 has a model output made elsewhere once it is sent and has crossed the link.
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const double bytes = problem.prices.gather_bytes[task];
    if (bytes <= 0) continue;
    const auto whole = duration_terms(program, problem, static_cast<int>(task), -1.0);
    const auto computing = compute_terms(program, problem, static_cast<int>(task), -1.0);
    for (std::size_t device = 1; device < problem.devices; ++device) {
      const int x = program.x[task][device];
      if (x < 0) continue;
      const double latency = graph.machine.latency.empty() ? 0.0 : graph.machine.latency[device][0];
      const double wire = graph.machine.transfer_time(device, 0, bytes);
      if (!std::isfinite(wire)) {
        program.builder.add_row({{x, 1.0}}, 0.0, 0.0);
        continue;
      }
      for (const auto& [terms_of, seconds] : {std::pair{&computing, wire}, {&whole, latency}}) {
        if (seconds <= 0 || (terms_of == &whole && !problem.prices.priced)) continue;
        auto terms = *terms_of;
        terms.push_back({program.makespan, 1.0});
        terms.push_back({program.start[task], -1.0});
        terms.push_back({x, -program.scaled(seconds)});
        program.builder.add_row(terms, 0.0, COIN_DBL_MAX);
      }
    }
  }
}

void add_precedence_rows(Program& program, const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  const auto& x = program.x;
  const auto with_starts = [&](std::vector<std::pair<int, double>> terms, int producer,
                               int consumer) {
    terms.push_back({program.start[consumer], 1.0});
    terms.push_back({program.start[producer], -1.0});
    return terms;
  };
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    // The reader starts after its producer's whole time (computing and sending) ...
    const auto base =
        with_starts(duration_terms(program, problem, producer, -1.0), producer, consumer);
    program.builder.add_row(base, 0.0, COIN_DBL_MAX);
    // ... and on another device once the message has crossed: the link's time from the end of
    // the producer's computing, and with priced ends the latency after its sends.
    const auto computed =
        with_starts(compute_terms(program, problem, producer, -1.0), producer, consumer);
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
        const double latency =
            graph.machine.latency.empty() ? 0.0 : graph.machine.latency[from][to];
        for (const auto& [terms_of, seconds] : {std::pair{&computed, transfer}, {&base, latency}}) {
          if (seconds <= 0 || (terms_of == &base && !problem.prices.priced)) continue;
          const double cost = program.scaled(seconds);
          auto terms = *terms_of;
          terms.push_back({x[producer][from], -cost});
          terms.push_back({x[consumer][to], -cost});
          program.builder.add_row(terms, -cost, COIN_DBL_MAX);
        }
      }
    }
    if (!problem.prices.priced) continue;
    // The producer sends to each device a reader runs on but it does not; the reader copies the
    // message.
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (x[consumer][device] < 0) continue;
      std::vector<std::pair<int, double>> differ{{x[consumer][device], -1.0}};
      if (x[producer][device] >= 0) differ.push_back({x[producer][device], 1.0});
      if (program.sends[producer][device] >= 0) {
        auto terms = differ;
        terms.push_back({program.sends[producer][device], 1.0});
        program.builder.add_row(terms, 0.0, COIN_DBL_MAX);
      }
      differ.push_back({program.cut[edge], 1.0});
      program.builder.add_row(differ, 0.0, COIN_DBL_MAX);
    }
  }
  if (!problem.prices.priced) return;
  // A task's first moment: after copying what it receives (the device's previous task adds its
  // end in the order rows).
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    auto terms = receive_terms(program, problem, static_cast<int>(task), -1.0);
    if (terms.empty()) continue;
    terms.push_back({program.start[task], 1.0});
    program.builder.add_row(terms, 0.0, COIN_DBL_MAX);
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
        // With priced ends the first one's copies (its sends, a Concat's inputs) and the
        // second's receives lie between them too.
        const double copies =
            program.scaled(most_copies(problem, first) + most_copies(problem, second));
        const double a_then_b = std::max(0.0, latest_start(a) + time_a - head_of(b)) + copies;
        const double b_then_a = std::max(0.0, latest_start(b) + time_b - head_of(a)) + copies;
        std::vector<std::pair<int, double>> a_first{{start[a], 1.0},
                                                    {start[b], -1.0},
                                                    {before, a_then_b},
                                                    {x[a][device], a_then_b},
                                                    {x[b][device], a_then_b}};
        std::vector<std::pair<int, double>> b_first{{start[b], 1.0},
                                                    {start[a], -1.0},
                                                    {before, -b_then_a},
                                                    {x[a][device], b_then_a},
                                                    {x[b][device], b_then_a}};
        for (const auto& [terms, earlier, later] :
             {std::tuple{&a_first, first, second}, std::tuple{&b_first, second, first}}) {
          for (const auto& part : {concat_terms(program, problem, earlier, 1.0),
                                   send_terms(program, problem, earlier, 1.0),
                                   receive_terms(program, problem, later, 1.0)}) {
            terms->insert(terms->end(), part.begin(), part.end());
          }
        }
        program.builder.add_row(a_first, -COIN_DBL_MAX, 3 * a_then_b - time_a);
        program.builder.add_row(b_first, -COIN_DBL_MAX, 2 * b_then_a - time_b);
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
  for (std::size_t edge = 0; edge < program.cut.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    const bool apart = warm.device[producer] != warm.device[consumer];
    values.push_back({ProgramBuilder::solver_name(program.cut[edge]), apart ? 1.0 : 0.0});
  }
  if (!program.sends.empty()) {
    std::vector<std::vector<bool>> sent(problem.tasks, std::vector<bool>(problem.devices, false));
    for (const auto& [producer, consumer] : graph.edges) {
      if (warm.device[producer] != warm.device[consumer])
        sent[producer][warm.device[consumer]] = true;
    }
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      for (std::size_t device = 0; device < problem.devices; ++device) {
        if (program.sends[task][device] >= 0) {
          values.push_back({ProgramBuilder::solver_name(program.sends[task][device]),
                            sent[task][device] ? 1.0 : 0.0});
        }
      }
    }
  }
  if (!program.medium.empty()) {
    std::vector<std::vector<bool>> sent(problem.tasks, std::vector<bool>(problem.devices, false));
    bool any = false;
    for (const auto& [producer, consumer] : graph.edges) {
      if (warm.device[producer] == warm.device[consumer]) continue;
      sent[producer][warm.device[consumer]] = true;
      any = true;
    }
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      for (std::size_t device = 0; device < problem.devices; ++device) {
        const int column = program.medium[task][device];
        if (column >= 0)
          values.push_back({ProgramBuilder::solver_name(column), sent[task][device] ? 1.0 : 0.0});
      }
    }
    if (program.medium_any >= 0)
      values.push_back({ProgramBuilder::solver_name(program.medium_any), any ? 1.0 : 0.0});
  }
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
