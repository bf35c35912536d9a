// The reference timeline of a plan: every planner's prediction is checked against this.
#include "plan/simulator.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>

namespace cleave {

namespace {

bool several_compute(const std::vector<std::vector<int>>& order) {
  const auto computing = std::count_if(order.begin(), order.end(),
                                       [](const std::vector<int>& list) { return !list.empty(); });
  return computing >= 2;
}

bool has_busy_times(const TaskGraph& graph) {
  return std::any_of(graph.tasks.begin(), graph.tasks.end(),
                     [](const Task& task) { return !task.busy_time.empty(); });
}

}  // namespace

bool computes_on_several_workers(const Plan& plan) {
  return several_compute(plan.order);
}

bool prices_beside_busy(const Plan& plan, const TaskGraph& graph) {
  return has_busy_times(graph) && several_compute(plan.order);
}

namespace {

// Messages to a task's worker from producers on other workers: per producer, when the message
// can be there and its bytes.
using Messages = std::map<int, std::pair<double, double>>;

// When a task starting no earlier than `start` on `worker` has taken its messages. The reader
// takes them in the order they come, each copied at its end: one it waits for is copied as it
// comes, one that came while the reader was busy costs the reader its copy when it gets to it
// (docs/results/distributed.md, 2026-11-30 04:35). `received` holds, per (producer, worker), when
// that worker had the message, so that a second reader there pays nothing more.
double take_messages(const Machine& machine, const Messages& messages, int worker, double start,
                     std::map<std::pair<int, int>, double>& received) {
  std::vector<std::pair<double, double>> pending;
  for (const auto& [producer, message] : messages) {
    const auto found = received.find({producer, worker});
    if (found != received.end()) {
      start = std::max(start, found->second);
    } else {
      pending.push_back(message);
    }
  }
  std::sort(pending.begin(), pending.end());
  for (const auto& [there, bytes] : pending)
    start = std::max(start + machine.endpoint_seconds(bytes), there);
  for (const auto& [producer, message] : messages) received.try_emplace({producer, worker}, start);
  return start;
}

// The seconds a task's worker spends sending its outputs after computing them: one message per
// reading worker (the hand-off's channel), the largest value it reads. Readers not placed yet
// (worker -1: a planner's schedule so far) are sent nothing.
double send_seconds(const TaskGraph& graph, const std::vector<int>& worker_of_task,
                    const std::vector<int>& out_edges, int worker) {
  std::map<int, double> to_worker;
  for (int edge : out_edges) {
    const int reader_worker = worker_of_task[graph.edges[edge].second];
    if (reader_worker == worker || reader_worker < 0) continue;
    double& bytes = to_worker[reader_worker];
    bytes = std::max(bytes, graph.bytes_on_edge(edge));
  }
  double seconds = 0;
  for (const auto& [reader_worker, bytes] : to_worker)
    seconds += graph.machine.endpoint_seconds(bytes);
  return seconds;
}

// The tasks listed in `order` in an order that respects both the data edges between them and
// each worker's order (Kahn's algorithm). Throws Error when the orders deadlock; a complete
// plan's deadlock is named task by task by execution_order.
std::vector<int> listed_sequence(const std::vector<std::vector<int>>& order,
                                 const TaskGraph& graph) {
  const std::size_t task_count = graph.tasks.size();
  std::vector<bool> listed(task_count, false);
  std::size_t listed_count = 0;
  for (const auto& list : order) {
    for (int task : list) {
      listed.at(task) = true;
      ++listed_count;
    }
  }
  std::vector<std::vector<int>> successors(task_count);
  std::vector<int> waiting(task_count, 0);
  for (const auto& [from, to] : graph.edges) {
    if (!listed[from] || !listed[to]) continue;
    successors[from].push_back(to);
    ++waiting[to];
  }
  for (const auto& list : order) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      successors[list[i - 1]].push_back(list[i]);
      ++waiting[list[i]];
    }
  }
  std::vector<int> sequence;
  sequence.reserve(listed_count);
  for (std::size_t task = 0; task < task_count; ++task)
    if (listed[task] && waiting[task] == 0) sequence.push_back(static_cast<int>(task));
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    for (int next : successors[sequence[i]])
      if (--waiting[next] == 0) sequence.push_back(next);
  }
  if (sequence.size() != listed_count)
    throw Error("simulator: the worker orders deadlock (they contradict the dependences)");
  return sequence;
}

// simulate()'s clock over the tasks of `order` taken in `sequence` (a topological order of
// them that keeps each worker's order); tasks listed nowhere have worker -1 and are left out.
Simulation run_clock(const std::vector<std::vector<int>>& order,
                     const std::vector<int>& worker_of_task, const std::vector<int>& sequence,
                     const TaskGraph& graph) {
  const std::size_t task_count = graph.tasks.size();
  const std::size_t worker_count = graph.machine.size();
  const auto in_edges = graph.in_edges();
  std::vector<int> previous_on_worker(task_count, -1);
  for (const auto& list : order) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_worker[list[i]] = list[i - 1];
  }
  const bool several = several_compute(order);
  Simulation result;
  result.beside_busy = has_busy_times(graph) && several;
  // A one-worker plan runs as its profile did; several workers pay the executor's dispatch.
  const double task_seconds = several ? graph.machine.task_seconds : 0.0;
  result.start.assign(task_count, 0.0);
  result.finish.assign(task_count, 0.0);
  result.busy.assign(worker_count, 0.0);
  result.idle.assign(worker_count, 0.0);
  // One message per model input, sample and receiving device, however many tasks read it there.
  std::set<std::tuple<std::string, int64_t, int>> handed_out;
  // With priced message ends (Machine::endpoint_bandwidth): per task, the seconds its worker
  // spends sending (send_seconds); per (producer, reading worker), when it had the message.
  const bool priced_ends = graph.machine.endpoint_seconds(1.0) > 0;
  const auto out_edges = priced_ends ? graph.out_edges() : std::vector<std::vector<int>>();
  std::vector<double> sends(task_count, 0.0);
  std::map<std::pair<int, int>, double> received;
  for (int task : sequence) {
    const int worker = worker_of_task[task];
    double start = previous_on_worker[task] >= 0 ? result.finish[previous_on_worker[task]] : 0.0;
    start = std::max(start, graph.input_arrival(task, worker));
    for (const ModelValue& input : graph.tasks[task].model_inputs) {
      if (worker != 0 &&
          handed_out.emplace(input.name, graph.tasks[task].batch_begin, worker).second) {
        result.transfer_bytes += input.bytes;
        ++result.transfer_count;
      }
    }
    // On shared memory the reader pulls a value's lines from the producer's cache while its
    // task runs: the latency delays the start, the bytes lengthen the task.
    double reads = 0;
    Messages messages;  // From other workers (priced ends).
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      const int producer_worker = worker_of_task[producer];
      if (producer_worker == worker) {
        start = std::max(start, result.finish[producer]);
        continue;
      }
      const double bytes = graph.bytes_on_edge(edge);
      result.transfer_bytes += bytes;
      ++result.transfer_count;
      if (priced_ends) {
        // Sent after the producer computed: it leaves the sender as fast as the sender copies
        // it (its finish) or as the link carries it, whichever is later.
        const double computed = result.finish[producer] - sends[producer];
        const double wire = graph.machine.transfer_time(producer_worker, worker, bytes);
        const double latency =
            graph.machine.latency.empty() ? 0.0 : graph.machine.latency[producer_worker][worker];
        const double there = std::max(result.finish[producer] + latency, computed + wire);
        auto [found, fresh] = messages.try_emplace(producer, there, bytes);
        if (!fresh) found->second.second = std::max(found->second.second, bytes);
        // A Concat copies a value received from another rank into its output: only its own
        // rank's inputs are made in place (task_concat_placement.h).
        if (graph.tasks[task].copies_remote_inputs) reads += graph.machine.endpoint_seconds(bytes);
        continue;
      }
      start = std::max(start, result.finish[producer] +
                                  graph.machine.arrival_delay(producer_worker, worker, bytes));
      reads += graph.machine.read_time(producer_worker, worker, bytes);
    }
    if (priced_ends) start = take_messages(graph.machine, messages, worker, start, received);
    const Task& info = graph.tasks[task];
    const double duration = (result.beside_busy && !info.busy_time.empty() ? info.busy_time[worker]
                                                                           : info.time[worker]) +
                            task_seconds + reads;
    if (priced_ends) sends[task] = send_seconds(graph, worker_of_task, out_edges[task], worker);
    result.start[task] = start;
    result.finish[task] = start + duration + sends[task];
    result.busy[worker] += duration + sends[task];
    result.makespan = std::max(result.makespan, result.finish[task]);
  }
  // The model outputs are gathered once every task is placed.
  if (sequence.size() == task_count) {
    for (const OutputGather& gather : graph.output_gathers(worker_of_task)) {
      result.makespan = std::max(result.makespan, result.finish[gather.task] + gather.seconds);
      result.transfer_bytes += gather.bytes;
      ++result.transfer_count;
    }
  }
  if (several) result.makespan += graph.machine.run_seconds;
  for (std::size_t worker = 0; worker < worker_count; ++worker) {
    result.idle[worker] = result.makespan - result.busy[worker];
  }
  return result;
}

}  // namespace

Simulation simulate(const Plan& plan, const TaskGraph& graph) {
  const std::vector<int> sequence = execution_order(plan, graph);
  std::vector<int> worker_of_task(graph.tasks.size(), 0);
  for (int task : sequence) worker_of_task[task] = plan.tasks[task].worker;
  return run_clock(plan.order, worker_of_task, sequence, graph);
}

Simulation simulate_orders(const std::vector<std::vector<int>>& order, const TaskGraph& graph) {
  if (order.size() != graph.machine.size()) {
    throw Error(fmt::format("simulator: {} worker orders for a machine of {} workers", order.size(),
                            graph.machine.size()));
  }
  std::vector<int> worker_of_task(graph.tasks.size(), -1);
  for (std::size_t worker = 0; worker < order.size(); ++worker) {
    for (int task : order[worker]) {
      if (task < 0 || static_cast<std::size_t>(task) >= graph.tasks.size() ||
          worker_of_task[task] >= 0) {
        throw Error(fmt::format("simulator: worker {}'s order lists task #{} {}", worker, task,
                                task >= 0 && static_cast<std::size_t>(task) < graph.tasks.size()
                                    ? "a second time"
                                    : "that does not exist"));
      }
      worker_of_task[task] = static_cast<int>(worker);
    }
  }
  // Planners place producers first: a listed task whose producer is not would read nothing.
  for (const auto& [from, to] : graph.edges) {
    if (worker_of_task[to] >= 0 && worker_of_task[from] < 0) {
      throw Error(fmt::format("simulator: task \"{}\" is listed but its producer \"{}\" is not",
                              graph.tasks[to].name, graph.tasks[from].name));
    }
  }
  const std::vector<int> sequence = listed_sequence(order, graph);
  return run_clock(order, worker_of_task, sequence, graph);
}

void apply_simulation(Plan& plan, const Simulation& simulation) {
  for (std::size_t task = 0; task < plan.tasks.size(); ++task) {
    plan.tasks[task].start = simulation.start.at(task);
    plan.tasks[task].finish = simulation.finish.at(task);
  }
  plan.makespan = simulation.makespan;
}

}  // namespace cleave
