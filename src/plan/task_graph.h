// The scheduling problem every planner solves: tasks with per-device times, edges with bytes.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"  // cleave::Error, thrown by every reader and planner
#include "machine/machine.h"

namespace cleave {

/// A model input a task reads, or a model output it produces, where the workers are MPI ranks:
/// rank 0 holds the model's inputs and outputs, so such a value on another device is a message
/// (sent before a run, or gathered after it; distributed/mpi_routes.h).
struct ModelValue {
  std::string name;  ///< The value's name: the tasks of one sample reading it share one message.
  double bytes = 0;
  bool operator==(const ModelValue&) const = default;
};

/// One schedulable unit: a graph node, or a node applied to a slice of the batch.
struct Task {
  std::string name;
  std::vector<double> time;  ///< Seconds on each device of the machine, by device index
                             ///< (+inf: cannot run there).
  /// Seconds on each device while the other workers compute at the same time (a profile's
  /// busy-neighbour times, cost_table.h); empty when unknown: `time` then holds throughout.
  /// The simulator uses these for plans in which two or more workers compute.
  std::vector<double> busy_time;
  double output_bytes = 0;  ///< Bytes sent along each outgoing edge to another device.
  double weight_bytes = 0;  ///< Resident bytes on the device it is mapped to.
  int32_t node = -1;        ///< Graph NodeId it comes from, -1 when none.
  int64_t batch_begin = 0;  ///< Batch slice [begin, end) for batched plans.
  int64_t batch_end = 1;
  /// Tasks with the same non-negative group share one copy of their weights on a device (the
  /// slices of one node in a batched graph); -1: its weights are its own.
  int32_t weight_group = -1;
  /// Model inputs this task reads and model outputs it produces that travel from and to device
  /// 0 (task_graph_for on ranks); empty where the workers share memory (threads).
  std::vector<ModelValue> model_inputs;
  std::vector<ModelValue> model_outputs;
  /// A Concat: where message ends are priced (Machine::endpoint_bandwidth), each input from
  /// another worker is copied into its output, at the end's rate, while inputs made on its own
  /// worker are produced in place there (runtime/task_concat_placement.h) and cost nothing.
  /// False for a Concat whose inputs from other ranks are received in place too
  /// (concat_inputs_received_in_place, runtime/concat_placement.h).
  bool copies_remote_inputs = false;
};

/// A model output device 0 receives from another device after a run (TaskGraph::output_gathers).
struct OutputGather {
  int task = -1;       ///< The task whose copy of the output is sent.
  double bytes = 0;    ///< The output's bytes.
  double seconds = 0;  ///< From that task's finish until the output is on device 0.
};

/// A DAG of tasks over a machine. Edges are (producer, consumer) task indices.
struct TaskGraph {
  Machine machine;
  std::vector<Task> tasks;
  std::vector<std::pair<int, int>> edges;
  /// Optional bytes per edge, parallel to `edges`; empty (or a negative entry) means the
  /// producer's output_bytes. Lets a graph carry per-edge costs (textbook examples, values
  /// of different sizes leaving one node).
  std::vector<double> edge_bytes;

  /// Bytes that edge `edge` moves when its ends are on different devices.
  double bytes_on_edge(std::size_t edge) const;
  /// Seconds edge `edge` costs when its producer runs on `from` and its consumer on `to`
  /// (0 on one device, +inf without a link).
  double edge_time(std::size_t edge, std::size_t from, std::size_t to) const;
  /// Seconds from a run's start until every model input task `task` reads has reached
  /// `worker` from device 0, where they are all sent at the start (latency + bytes /
  /// bandwidth each; 0 on device 0 or without model inputs; +inf without a link).
  double input_arrival(std::size_t task, std::size_t worker) const;
  /// The model outputs device 0 gathers under `worker_of_task`: per output name and sample
  /// (batch_begin), none when a task producing it runs on device 0, else one from the first
  /// task that produces it, as the MPI executor does.
  std::vector<OutputGather> output_gathers(const std::vector<int>& worker_of_task) const;
  std::vector<std::vector<int>> successors() const;
  std::vector<std::vector<int>> predecessors() const;
  /// Per task, the indices into `edges` of its incoming / outgoing edges.
  std::vector<std::vector<int>> in_edges() const;
  std::vector<std::vector<int>> out_edges() const;
  /// Kahn order, ties broken by the smaller task index. Throws Error on a cycle, naming the
  /// tasks on it.
  std::vector<int> topological_order() const;
  std::size_t device_count() const { return machine.size(); }
  /// Throws Error unless every task has one finite, non-negative time per device (or +inf),
  /// edges name existing tasks, and the graph is acyclic. `origin` prefixes messages.
  void check(const std::string& origin) const;
};

/// Reads the task-graph JSON of docs/formats.md (devices, bandwidth, tasks, edges).
TaskGraph read_task_graph(const std::string& path);
TaskGraph task_graph_from_json(const nlohmann::json& json, const std::string& origin);
nlohmann::json task_graph_to_json(const TaskGraph& graph);
/// Writes the task graph atomically (temporary file in the same folder, then rename).
void write_task_graph(const TaskGraph& graph, const std::string& path);

/// Expands a per-sample graph into a batched one: every task becomes one task per slice of
/// `slice_sizes` (which must sum to `batch`), named "<task>@<begin>:<end>", with times scaled
/// linearly by the slice size, output bytes scaled likewise, weight bytes unchanged and shared
/// by the slices through weight_group (memory checks count them once per device), and an edge
/// between the matching slices of every edge.
TaskGraph batch_task_graph(const TaskGraph& per_sample, int64_t batch,
                           const std::vector<int64_t>& slice_sizes);
/// The paper's split of a batch B into parts a device may take: sizes that sum to B, using
/// B/4 steps (four slices of B/4 when B is divisible by 4, otherwise one slice of B).
std::vector<int64_t> default_slice_sizes(int64_t batch);

}  // namespace cleave
