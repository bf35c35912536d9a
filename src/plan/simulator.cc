// The reference timeline of a plan: every planner's prediction is checked against this.
#include "plan/simulator.h"

#include <algorithm>
#include <limits>
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

OrdersClock::OrdersClock(const TaskGraph& graph)
    : graph_(&graph),
      in_edges_(graph.in_edges()),
      out_edges_(graph.out_edges()),
      priced_ends_(graph.machine.prices_message_ends()),
      busy_times_(has_busy_times(graph)),
      shared_link_(graph.machine.queues_on_one_link()),
      medium_(graph.machine.link_burst_bytes) {}

// The medium's queue (SharedMedium): the clock meets senders in an order that keeps the data
// edges, not in time, so a message met later can still take an earlier gap that is long enough.
double OrdersClock::cross_medium(std::size_t from, std::size_t to, double ready,
                                 double bytes) const {
  return medium_.cross(ready, bytes, graph_->machine.bandwidth.at(from).at(to));
}

// One message per reading worker, as send_seconds prices them.
void OrdersClock::send_over_medium(int task, int worker, double ready) const {
  for (int edge : out_edges_[task]) {
    const int reader_worker = worker_of_task_[graph_->edges[edge].second];
    if (reader_worker == worker || reader_worker < 0) continue;
    double& bytes = medium_bytes_[reader_worker];
    bytes = std::max(bytes, graph_->bytes_on_edge(edge));
  }
  const std::size_t worker_count = medium_bytes_.size();
  for (std::size_t reader = 0; reader < worker_count; ++reader) {
    double& bytes = medium_bytes_[reader];
    if (bytes < 0) continue;
    crossed_[static_cast<std::size_t>(task) * worker_count + reader] =
        cross_medium(static_cast<std::size_t>(worker), reader, ready, bytes);
    bytes = -1;
  }
}

// When a task starting no earlier than `start` on `worker` has taken `messages_`. The reader
// takes them in the order they come, each copied at its end: one it waits for is copied as it
// comes, one that came while the reader was busy costs the reader its copy when it gets to it
// (docs/results/distributed.md, 2026-11-30 04:35). A wait costs the reader its polls' wake-ups
// once the message is there (Machine::wake_seconds; 2026-11-30 10:41). `received_` holds, per
// (producer, worker), when that worker had the message, so that a second reader there pays
// nothing more.
double OrdersClock::take_messages(int worker, double start) const {
  pending_.clear();
  for (const Message& message : messages_) {
    if (received_stamp_[message.slot] == stamp_) {
      start = std::max(start, received_[message.slot]);
    } else {
      pending_.emplace_back(message.there, message.bytes);
    }
  }
  std::sort(pending_.begin(), pending_.end());
  for (const auto& [there, bytes] : pending_)
    start = graph_->machine.message_taken(static_cast<std::size_t>(worker), start, there, bytes);
  for (const Message& message : messages_) {
    if (received_stamp_[message.slot] != stamp_) {
      received_stamp_[message.slot] = stamp_;
      received_[message.slot] = start;
    }
  }
  return start;
}

// Device 0 copies every model input it hands out before its own first task (the MPI executor's
// publish_inputs), and a task whose model output is gathered copies it after the task, as it
// does the values it sends to other tasks.
void OrdersClock::hand_outs() const {
  const TaskGraph& graph = *graph_;
  const std::size_t task_count = graph.tasks.size();
  hand_outs_.clear();
  hand_out_seconds_ = 0;
  std::size_t listed = 0;
  for (std::size_t task = 0; task < task_count; ++task) {
    const int worker = worker_of_task_[task];
    if (worker < 0) continue;
    ++listed;
    if (worker == 0) continue;
    for (const ModelValue& input : graph.tasks[task].model_inputs) {
      const int64_t sample = graph.tasks[task].batch_begin;
      const auto same = std::find_if(hand_outs_.begin(), hand_outs_.end(), [&](const HandOut& h) {
        return h.worker == worker && h.sample == sample && h.name == input.name;
      });
      if (same == hand_outs_.end()) {
        hand_outs_.push_back({input.name, sample, worker, input.bytes});
        hand_out_seconds_ += graph.machine.sender_seconds(0, input.bytes);
      }
    }
  }
  // On a shared link the hand-outs cross the medium first, all sent at the start.
  if (shared_link_) {
    for (HandOut& hand_out : hand_outs_)
      hand_out.crossed =
          cross_medium(0, static_cast<std::size_t>(hand_out.worker), 0.0, hand_out.bytes);
  }
  received_stamp_.resize(task_count * graph.machine.size() + hand_outs_.size(), 0);
  received_.resize(received_stamp_.size(), 0.0);
  gathers_.clear();
  gather_sends_.assign(task_count, 0.0);
  if (listed != task_count) return;  // a planner's schedule so far: gathered at the end
  gathers_ = graph.output_gathers(worker_of_task_);
  for (const OutputGather& gather : gathers_)
    gather_sends_[gather.task] += graph.machine.sender_seconds(
        static_cast<std::size_t>(worker_of_task_[gather.task]), gather.bytes);
}

// When device 0 has every gathered model output: it takes them after its own last task, as
// messages from other tasks (take_messages), each leaving its sender as those do.
double OrdersClock::gather_end(const std::vector<double>& finish, double makespan) const {
  const TaskGraph& graph = *graph_;
  const Machine& machine = graph.machine;
  double end = hand_out_seconds_;
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    if (worker_of_task_[task] == 0) end = std::max(end, finish[task]);
  }
  pending_.clear();
  for (const OutputGather& gather : gathers_) {
    const auto from = static_cast<std::size_t>(worker_of_task_[gather.task]);
    const double latency = machine.latency.empty() ? 0.0 : machine.latency[from][0];
    const double sent = finish[gather.task];
    const double computed = sent - sends_[gather.task];
    const double carried = shared_link_ ? cross_medium(from, 0, computed, gather.bytes) + latency
                                        : computed + machine.transfer_time(from, 0, gather.bytes);
    pending_.emplace_back(std::max(sent + latency, carried), gather.bytes);
  }
  std::sort(pending_.begin(), pending_.end());
  for (const auto& [there, bytes] : pending_)
    end = std::max(end + machine.copy_seconds(0, bytes), there);
  return std::max(makespan, end);
}

// The seconds a task's worker spends sending its outputs after computing them: one message per
// reading worker (the hand-off's channel), the largest value it reads, each its copy and the
// per-message cost (Machine::sender_seconds). Readers not placed yet
// (worker -1: a planner's schedule so far) are sent nothing.
double OrdersClock::send_seconds(int task, int worker) const {
  for (int edge : out_edges_[task]) {
    const int reader_worker = worker_of_task_[graph_->edges[edge].second];
    if (reader_worker == worker || reader_worker < 0) continue;
    double& bytes = to_worker_[reader_worker];
    bytes = std::max(bytes, graph_->bytes_on_edge(edge));
  }
  double seconds = 0;
  for (double& bytes : to_worker_) {
    if (bytes > 0)
      seconds += graph_->machine.sender_seconds(static_cast<std::size_t>(worker), bytes);
    bytes = 0;
  }
  return seconds;
}

// The tasks of `order` in an order that keeps both the data edges between them and each
// worker's order (Kahn's algorithm). Throws Error when the orders deadlock.
void OrdersClock::sequence_of(const std::vector<std::vector<int>>& order) const {
  const std::size_t task_count = graph_->tasks.size();
  waiting_.assign(task_count, 0);
  next_on_worker_.assign(task_count, -1);
  sequence_.clear();
  std::size_t listed = 0;
  for (const auto& list : order) {
    listed += list.size();
    for (std::size_t i = 1; i < list.size(); ++i) {
      next_on_worker_[list[i - 1]] = list[i];
      ++waiting_[list[i]];
    }
  }
  for (const auto& list : order) {
    for (int task : list) waiting_[task] += static_cast<int>(in_edges_[task].size());
  }
  for (const auto& list : order)
    if (!list.empty() && waiting_[list.front()] == 0) sequence_.push_back(list.front());
  for (std::size_t i = 0; i < sequence_.size(); ++i) {
    const int task = sequence_[i];
    const auto release = [&](int next) {
      if (--waiting_[next] == 0) sequence_.push_back(next);
    };
    for (int edge : out_edges_[task]) {
      const int reader = graph_->edges[edge].second;
      if (worker_of_task_[reader] >= 0) release(reader);
    }
    if (next_on_worker_[task] >= 0) release(next_on_worker_[task]);
  }
  if (sequence_.size() != listed)
    throw Error("simulator: the worker orders deadlock (they contradict the dependences)");
}

void OrdersClock::workers_of(const std::vector<std::vector<int>>& order) const {
  const TaskGraph& graph = *graph_;
  const std::size_t task_count = graph.tasks.size();
  const std::size_t worker_count = graph.machine.size();
  worker_of_task_.assign(task_count, -1);
  for (std::size_t worker = 0; worker < worker_count; ++worker) {
    for (int task : order[worker]) {
      if (task < 0 || static_cast<std::size_t>(task) >= task_count || worker_of_task_[task] >= 0) {
        throw Error(fmt::format("simulator: worker {}'s order lists task #{} {}", worker, task,
                                task >= 0 && static_cast<std::size_t>(task) < task_count
                                    ? "a second time"
                                    : "that does not exist"));
      }
      worker_of_task_[task] = static_cast<int>(worker);
    }
  }
  // Planners place producers first: a listed task whose producer is not would read nothing.
  for (std::size_t task = 0; task < task_count; ++task) {
    if (worker_of_task_[task] < 0) continue;
    for (int edge : in_edges_[task]) {
      const int producer = graph.edges[edge].first;
      if (worker_of_task_[producer] < 0) {
        throw Error(fmt::format("simulator: task \"{}\" is listed but its producer \"{}\" is not",
                                graph.tasks[task].name, graph.tasks[producer].name));
      }
    }
  }
}

// The model inputs `task` reads on `worker` as messages from device 0, all sent at the start:
// each leaves once device 0 has copied every hand-out, or as the link carries it.
void OrdersClock::hand_out_messages(int task, int worker) const {
  if (worker == 0) return;
  const TaskGraph& graph = *graph_;
  const std::size_t first_slot = graph.tasks.size() * graph.machine.size();
  const double latency = graph.machine.latency.empty() ? 0.0 : graph.machine.latency[0][worker];
  for (const ModelValue& input : graph.tasks[task].model_inputs) {
    const int64_t sample = graph.tasks[task].batch_begin;
    const auto found = std::find_if(hand_outs_.begin(), hand_outs_.end(), [&](const HandOut& h) {
      return h.worker == worker && h.sample == sample && h.name == input.name;
    });
    const std::size_t slot = first_slot + static_cast<std::size_t>(found - hand_outs_.begin());
    if (std::any_of(messages_.begin(), messages_.end(),
                    [&](const Message& m) { return m.slot == slot; })) {
      continue;
    }
    const double carried = shared_link_ ? found->crossed + latency
                                        : graph.machine.transfer_time(0, worker, found->bytes);
    const double there = std::max(hand_out_seconds_ + latency, carried);
    messages_.push_back({-1, slot, there, found->bytes});
  }
}

double OrdersClock::message_there(int producer, int worker, double bytes, double finish) const {
  const Machine& machine = graph_->machine;
  const auto from = static_cast<std::size_t>(worker_of_task_[producer]);
  const auto to = static_cast<std::size_t>(worker);
  const double latency = machine.latency.empty() ? 0.0 : machine.latency[from][to];
  const double crossed =
      shared_link_ ? crossed_[static_cast<std::size_t>(producer) * machine.size() + to] : 0.0;
  if (!priced_ends_) {
    return shared_link_ ? crossed + latency : finish + machine.arrival_delay(from, to, bytes);
  }
  // Sent after the producer computed: it leaves the sender as fast as the sender copies it (its
  // finish) or as the link carries it, whichever is later.
  const double computed = finish - sends_[producer];
  const double carried =
      shared_link_ ? crossed + latency : computed + machine.transfer_time(from, to, bytes);
  return std::max(finish + latency, carried);
}

Simulation OrdersClock::simulate(const std::vector<std::vector<int>>& order) const {
  const TaskGraph& graph = *graph_;
  const std::size_t task_count = graph.tasks.size();
  const std::size_t worker_count = graph.machine.size();
  if (order.size() != worker_count) {
    throw Error(fmt::format("simulator: {} worker orders for a machine of {} workers", order.size(),
                            worker_count));
  }
  workers_of(order);
  sequence_of(order);
  previous_on_worker_.assign(task_count, -1);
  for (const auto& list : order) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_worker_[list[i]] = list[i - 1];
  }
  const bool several = several_compute(order);
  Simulation result;
  result.beside_busy = busy_times_ && several;
  // A one-worker plan runs as its profile did; several workers pay the executor's dispatch.
  const double task_seconds = several ? graph.machine.task_seconds : 0.0;
  result.start.assign(task_count, 0.0);
  result.finish.assign(task_count, 0.0);
  result.busy.assign(worker_count, 0.0);
  result.idle.assign(worker_count, 0.0);
  // One message per model input, sample and receiving device, however many tasks read it there.
  std::set<std::tuple<std::string, int64_t, int>> handed_out;
  if (shared_link_) {
    medium_.clear();
    crossed_.assign(task_count * worker_count, 0.0);
    medium_bytes_.assign(worker_count, -1.0);
  }
  // With priced message ends (Machine::endpoint_bandwidth): per task, the seconds its worker
  // spends sending (send_seconds); per (producer, reading worker), when it had the message.
  if (priced_ends_) {
    sends_.assign(task_count, 0.0);
    to_worker_.assign(worker_count, 0.0);
    received_stamp_.resize(task_count * worker_count, 0);
    received_.resize(task_count * worker_count, 0.0);
    hand_outs();
    ++stamp_;
  }
  for (int task : sequence_) {
    const int worker = worker_of_task_[task];
    double start = previous_on_worker_[task] >= 0 ? result.finish[previous_on_worker_[task]] : 0.0;
    messages_.clear();  // From other workers (priced ends).
    if (priced_ends_) {
      if (worker == 0) start = std::max(start, hand_out_seconds_);
      hand_out_messages(task, worker);
    } else {
      start = std::max(start, graph.input_arrival(task, worker));
    }
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
    for (int edge : in_edges_[task]) {
      const int producer = graph.edges[edge].first;
      const int producer_worker = worker_of_task_[producer];
      if (producer_worker == worker) {
        start = std::max(start, result.finish[producer]);
        continue;
      }
      const double bytes = graph.bytes_on_edge(edge);
      result.transfer_bytes += bytes;
      ++result.transfer_count;
      const double there = message_there(producer, worker, bytes, result.finish[producer]);
      if (priced_ends_) {
        const auto same = std::find_if(messages_.begin(), messages_.end(),
                                       [&](const Message& m) { return m.producer == producer; });
        if (same == messages_.end()) {
          messages_.push_back(
              {producer, static_cast<std::size_t>(producer) * worker_count + worker, there, bytes});
        } else {
          same->bytes = std::max(same->bytes, bytes);
        }
        // A Concat copies a value received from another rank into its output: only its own
        // rank's inputs are made in place (task_concat_placement.h).
        if (graph.tasks[task].copies_remote_inputs)
          reads += graph.machine.copy_seconds(static_cast<std::size_t>(worker), bytes);
        continue;
      }
      start = std::max(start, there);
      reads += graph.machine.read_time(producer_worker, worker, bytes);
    }
    if (priced_ends_) start = take_messages(worker, start);
    const Task& info = graph.tasks[task];
    const double duration = (result.beside_busy && !info.busy_time.empty() ? info.busy_time[worker]
                                                                           : info.time[worker]) +
                            task_seconds + reads;
    const double sends =
        priced_ends_ ? (sends_[task] = send_seconds(task, worker) + gather_sends_[task]) : 0.0;
    result.start[task] = start;
    result.finish[task] = start + duration + sends;
    if (shared_link_) send_over_medium(task, worker, start + duration);
    result.busy[worker] += duration + sends;
    result.makespan = std::max(result.makespan, result.finish[task]);
  }
  // The model outputs are gathered once every task is placed.
  if (sequence_.size() == task_count) {
    for (const OutputGather& gather : graph.output_gathers(worker_of_task_)) {
      if (!priced_ends_)
        result.makespan = std::max(result.makespan, result.finish[gather.task] + gather.seconds);
      result.transfer_bytes += gather.bytes;
      ++result.transfer_count;
    }
    if (priced_ends_) result.makespan = gather_end(result.finish, result.makespan);
  }
  if (several) result.makespan += graph.machine.run_seconds;
  for (std::size_t worker = 0; worker < worker_count; ++worker) {
    result.idle[worker] = result.makespan - result.busy[worker];
  }
  return result;
}

Simulation simulate(const Plan& plan, const TaskGraph& graph) {
  execution_order(plan, graph);  // names a misplaced task or a deadlock, task by task
  return OrdersClock(graph).simulate(plan.order);
}

Simulation simulate_orders(const std::vector<std::vector<int>>& order, const TaskGraph& graph) {
  return OrdersClock(graph).simulate(order);
}

void apply_simulation(Plan& plan, const Simulation& simulation) {
  for (std::size_t task = 0; task < plan.tasks.size(); ++task) {
    plan.tasks[task].start = simulation.start.at(task);
    plan.tasks[task].finish = simulation.finish.at(task);
  }
  plan.makespan = simulation.makespan;
}

}  // namespace cleave
