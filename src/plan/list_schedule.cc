// Ranks, memory bookkeeping and the append-order evaluator shared by the list-scheduling planners.
#include "plan/list_schedule.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "ir/graph.h"

namespace cleave {

double mean_task_time(const Task& task) {
  double sum = 0;
  int count = 0;
  for (double time : task.time) {
    if (std::isfinite(time)) {
      sum += time;
      ++count;
    }
  }
  return count > 0 ? sum / count : 0.0;
}

namespace {

// Over the ordered pairs of distinct linked devices, the sums of latency and of 1/bandwidth:
// an edge's mean time is then (latency + bytes * inverse_bandwidth) / pairs, one pass over
// the pairs for all edges instead of one per edge (which made HEFT crawl at 1,000 devices).
struct LinkSums {
  double latency = 0;
  double inverse_bandwidth = 0;
  std::size_t pairs = 0;

  double endpoint_seconds_per_byte = 0;  // Machine::endpoint_seconds, linear in the bytes
  double send_seconds = 0;               // Machine::send_seconds, per message

  explicit LinkSums(const Machine& machine)
      : endpoint_seconds_per_byte(machine.endpoint_seconds(1.0)),
        send_seconds(machine.shared_memory ? 0.0 : machine.send_seconds) {
    const std::size_t devices = machine.size();
    for (std::size_t from = 0; from < devices; ++from) {
      for (std::size_t to = 0; to < devices; ++to) {
        const double bandwidth = from == to ? 0.0 : machine.bandwidth.at(from).at(to);
        if (!(bandwidth > 0)) continue;
        latency += machine.latency.empty() ? 0.0 : machine.latency.at(from).at(to);
        inverse_bandwidth += 1.0 / bandwidth;
        ++pairs;
      }
    }
  }
  // With priced ends, a message also costs its sender's and its reader's copies, and the
  // sender's cost per message.
  double mean_time(double bytes) const {
    if (pairs == 0) return 0.0;
    return (latency + bytes * inverse_bandwidth) / static_cast<double>(pairs) +
           2 * bytes * endpoint_seconds_per_byte + send_seconds;
  }
};

}  // namespace

double mean_edge_time(const TaskGraph& graph, std::size_t edge) {
  return LinkSums(graph.machine).mean_time(graph.bytes_on_edge(edge));
}

std::vector<double> upward_rank(const TaskGraph& graph) {
  const std::vector<int> order = graph.topological_order();
  const auto out_edges = graph.out_edges();
  const LinkSums links(graph.machine);
  std::vector<double> rank(graph.tasks.size(), 0.0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int task = *it;
    double tail = 0;
    for (int edge : out_edges[task]) {
      tail = std::max(tail,
                      links.mean_time(graph.bytes_on_edge(edge)) + rank[graph.edges[edge].second]);
    }
    rank[task] = mean_task_time(graph.tasks[task]) + tail;
  }
  return rank;
}

std::vector<int> upward_rank_order(const TaskGraph& graph) {
  const std::vector<int> topological = graph.topological_order();
  std::vector<int> position(graph.tasks.size());
  for (std::size_t i = 0; i < topological.size(); ++i)
    position[topological[i]] = static_cast<int>(i);
  std::vector<double> rank = upward_rank(graph);
  // Ranks equal on paper can differ in the last bits (sums taken in another order): compare
  // them at 1e-12 of the largest rank. Flooring is monotone, so producers still rank no lower.
  const double largest = rank.empty() ? 0.0 : *std::max_element(rank.begin(), rank.end());
  if (largest > 0 && std::isfinite(largest)) {
    for (double& value : rank) value = std::floor(value / (largest * 1e-12) + 0.5);
  }
  std::vector<int> order = topological;
  // A producer's rank is never below its consumer's (non-negative costs), so sorting by rank
  // with topological ties keeps every edge forward.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (rank[a] != rank[b]) return rank[a] > rank[b];
    return position[a] < position[b];
  });
  return order;
}

int fastest_device(const Task& task) {
  int best = 0;
  for (std::size_t device = 1; device < task.time.size(); ++device) {
    if (task.time[device] < task.time[best]) best = static_cast<int>(device);
  }
  return best;
}

std::vector<int> movable_tasks(const TaskGraph& graph) {
  std::vector<int> result;
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    int places = 0;
    for (double time : graph.tasks[task].time) places += std::isfinite(time) ? 1 : 0;
    if (places > 1) result.push_back(static_cast<int>(task));
  }
  return result;
}

MemoryTracker::MemoryTracker(const TaskGraph& graph) : graph_(&graph) {
  std::map<int32_t, int> key_of_group;
  key_of_task_.resize(graph.tasks.size());
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const Task& info = graph.tasks[task];
    int key;
    if (info.weight_group >= 0) {
      const auto [it, added] = key_of_group.emplace(info.weight_group, key_bytes_.size());
      if (added) key_bytes_.push_back(0.0);
      key = it->second;
    } else {
      key = static_cast<int>(key_bytes_.size());
      key_bytes_.push_back(0.0);
    }
    key_of_task_[task] = key;
    key_bytes_[key] = std::max(key_bytes_[key], info.weight_bytes);
  }
  key_count_ = key_bytes_.size();
  holders_.assign(graph.machine.size() * key_count_, 0);
  used_.assign(graph.machine.size(), 0.0);
  for (const Device& device : graph.machine.devices) capacity_.push_back(device.memory_bytes);
}

MemoryTracker::MemoryTracker(const TaskGraph& graph, std::vector<double> capacity)
    : MemoryTracker(graph) {
  capacity_ = std::move(capacity);
}

double MemoryTracker::added_bytes(int task, int device) const {
  const int key = key_of_task_[task];
  return holders_[device * key_count_ + key] > 0 ? 0.0 : key_bytes_[key];
}

bool MemoryTracker::fits(int task, int device) const {
  return used_[device] + added_bytes(task, device) <= capacity_[device];
}

bool MemoryTracker::fits_move(int task, int from, int to) const {
  return from == to || fits(task, to);
}

void MemoryTracker::add(int task, int device) {
  const int key = key_of_task_[task];
  used_[device] += added_bytes(task, device);
  ++holders_[device * key_count_ + key];
}

void MemoryTracker::remove(int task, int device) {
  const int key = key_of_task_[task];
  if (--holders_[device * key_count_ + key] == 0) used_[device] -= key_bytes_[key];
}

std::vector<int> fastest_feasible_assignment(const TaskGraph& graph,
                                             const std::vector<int>& priority,
                                             const std::string& planner) {
  MemoryTracker memory(graph);
  std::vector<int> worker_of_task(graph.tasks.size(), -1);
  const std::size_t devices = graph.machine.size();
  const auto in_edges = graph.in_edges();
  for (int task : priority) {
    const Task& info = graph.tasks[task];
    int best = -1;
    bool memory_blocked = false;
    for (std::size_t device = 0; device < devices; ++device) {
      const int candidate = static_cast<int>(device);
      if (!std::isfinite(info.time[device])) continue;
      // Producers are already placed (priority is topological); their data must reach here.
      bool reachable = true;
      for (int edge : in_edges[task]) {
        const int producer_worker = worker_of_task[graph.edges[edge].first];
        reachable = reachable && std::isfinite(graph.edge_time(edge, producer_worker, candidate));
      }
      if (!reachable) continue;
      if (!memory.fits(task, candidate)) {
        memory_blocked = true;
        continue;
      }
      if (best < 0 || info.time[device] < info.time[best]) best = candidate;
    }
    if (best < 0) {
      throw Error(fmt::format(
          "{}: task \"{}\" ({} weight bytes) fits on no device: {}", planner, info.name,
          info.weight_bytes,
          memory_blocked
              ? "memory is full or too small everywhere it can run and receive its inputs"
              : "no device it can run on has links from all its producers' devices"));
    }
    memory.add(task, best);
    worker_of_task[task] = best;
  }
  return worker_of_task;
}

AppendScheduler::AppendScheduler(const TaskGraph& graph, std::vector<int> priority)
    : graph_(&graph),
      priority_(std::move(priority)),
      in_edges_(graph.in_edges()),
      finish_(graph.tasks.size(), 0.0),
      worker_free_(graph.machine.size(), 0.0) {
  if (graph.machine.prices_message_ends() || graph.machine.queues_on_one_link())
    clock_.emplace(graph);
}

double AppendScheduler::makespan(const std::vector<int>& worker_of_task) const {
  if (clock_) {
    // Priced message ends or one shared link: a task's sends, a reader's copies and a message's
    // turn on the link depend on where all the others run, so the assignment is judged by the
    // simulator's own clock.
    order_.assign(graph_->machine.size(), {});
    for (int task : priority_) {
      const int worker = worker_of_task[task];
      if (!std::isfinite(graph_->tasks[task].time[worker]))
        return std::numeric_limits<double>::infinity();
      order_[worker].push_back(task);
    }
    return clock_->simulate(order_).makespan;
  }
  std::fill(worker_free_.begin(), worker_free_.end(), 0.0);
  double makespan = 0;
  // The same arithmetic, in the same order, as simulate() without busy times and dispatch
  // overheads: the results match exactly there.
  for (int task : priority_) {
    const int worker = worker_of_task[task];
    double start = std::max(worker_free_[worker], graph_->input_arrival(task, worker));
    double reads = 0;
    for (int edge : in_edges_[task]) {
      const int producer = graph_->edges[edge].first;
      const int from = worker_of_task[producer];
      if (from == worker) {
        start = std::max(start, finish_[producer]);
        continue;
      }
      const double bytes = graph_->bytes_on_edge(edge);
      start =
          std::max(start, finish_[producer] + graph_->machine.arrival_delay(from, worker, bytes));
      reads += graph_->machine.read_time(from, worker, bytes);
    }
    const double finish = start + graph_->tasks[task].time[worker] + reads;
    finish_[task] = finish;
    worker_free_[worker] = finish;
    makespan = std::max(makespan, finish);
  }
  for (const OutputGather& gather : graph_->output_gathers(worker_of_task))
    makespan = std::max(makespan, finish_[gather.task] + gather.seconds);
  return makespan;
}

Plan AppendScheduler::to_plan(const std::vector<int>& worker_of_task,
                              const std::string& strategy) const {
  Plan plan;
  plan.strategy = strategy;
  plan.tasks.resize(graph_->tasks.size());
  plan.order.assign(graph_->machine.size(), {});
  for (std::size_t task = 0; task < graph_->tasks.size(); ++task) {
    plan.tasks[task].task = static_cast<int>(task);
    plan.tasks[task].worker = worker_of_task[task];
  }
  for (int task : priority_) plan.order[worker_of_task[task]].push_back(task);
  finish_plan(plan, *graph_, makespan(worker_of_task));
  return plan;
}

void finish_plan(Plan& plan, const TaskGraph& graph, double planner_makespan) {
  validate_plan(plan, graph);
  apply_simulation(plan, simulate(plan, graph));
  plan.notes["planner_makespan"] = planner_makespan;
}

}  // namespace cleave
