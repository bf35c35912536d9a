// The reference timeline of a plan: every planner's prediction is checked against this.
#include "plan/simulator.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

namespace cleave {

bool computes_on_several_workers(const Plan& plan) {
  const auto computing = std::count_if(plan.order.begin(), plan.order.end(),
                                       [](const std::vector<int>& list) { return !list.empty(); });
  return computing >= 2;
}

bool prices_beside_busy(const Plan& plan, const TaskGraph& graph) {
  const bool has_busy_times = std::any_of(graph.tasks.begin(), graph.tasks.end(),
                                          [](const Task& task) { return !task.busy_time.empty(); });
  return has_busy_times && computes_on_several_workers(plan);
}

Simulation simulate(const Plan& plan, const TaskGraph& graph) {
  const std::vector<int> order = execution_order(plan, graph);
  const std::size_t task_count = graph.tasks.size();
  const std::size_t worker_count = graph.machine.size();
  const auto in_edges = graph.in_edges();
  std::vector<int> previous_on_worker(task_count, -1);
  for (const auto& list : plan.order) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_worker[list[i]] = list[i - 1];
  }
  Simulation result;
  result.beside_busy = prices_beside_busy(plan, graph);
  // A one-worker plan runs as its profile did; several workers pay the executor's dispatch.
  const bool several = computes_on_several_workers(plan);
  const double task_seconds = several ? graph.machine.task_seconds : 0.0;
  result.start.assign(task_count, 0.0);
  result.finish.assign(task_count, 0.0);
  result.busy.assign(worker_count, 0.0);
  result.idle.assign(worker_count, 0.0);
  // One message per model input, sample and receiving device, however many tasks read it there.
  std::set<std::tuple<std::string, int64_t, int>> handed_out;
  for (int task : order) {
    const int worker = plan.tasks[task].worker;
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
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      const int producer_worker = plan.tasks[producer].worker;
      if (producer_worker == worker) {
        start = std::max(start, result.finish[producer]);
        continue;
      }
      const double bytes = graph.bytes_on_edge(edge);
      start = std::max(start, result.finish[producer] +
                                  graph.machine.arrival_delay(producer_worker, worker, bytes));
      reads += graph.machine.read_time(producer_worker, worker, bytes);
      result.transfer_bytes += bytes;
      ++result.transfer_count;
    }
    const Task& info = graph.tasks[task];
    const double duration = (result.beside_busy && !info.busy_time.empty() ? info.busy_time[worker]
                                                                           : info.time[worker]) +
                            task_seconds + reads;
    result.start[task] = start;
    result.finish[task] = start + duration;
    result.busy[worker] += duration;
    result.makespan = std::max(result.makespan, result.finish[task]);
  }
  std::vector<int> worker_of_task(task_count, 0);
  for (int task : order) worker_of_task[task] = plan.tasks[task].worker;
  for (const OutputGather& gather : graph.output_gathers(worker_of_task)) {
    result.makespan = std::max(result.makespan, result.finish[gather.task] + gather.seconds);
    result.transfer_bytes += gather.bytes;
    ++result.transfer_count;
  }
  if (several) result.makespan += graph.machine.run_seconds;
  for (std::size_t worker = 0; worker < worker_count; ++worker) {
    result.idle[worker] = result.makespan - result.busy[worker];
  }
  return result;
}

void apply_simulation(Plan& plan, const Simulation& simulation) {
  for (std::size_t task = 0; task < plan.tasks.size(); ++task) {
    plan.tasks[task].start = simulation.start.at(task);
    plan.tasks[task].finish = simulation.finish.at(task);
  }
  plan.makespan = simulation.makespan;
}

}  // namespace cleave
