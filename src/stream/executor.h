// Runs a stream program on worker threads: bounded channels, software-pipelined filters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/tensor.h"
#include "stream/placement.h"
#include "stream/schedule.h"
#include "stream/stream_ir.h"

namespace cleave {

/// How a program is planned (plan_stream, stream/stream_planner.h: workers, placement,
/// method, firing and hand-off costs) and executed (trace, capacities, items, outputs).
struct StreamRunOptions {
  int workers = 1;
  /// Worker of each node of the flattened graph; empty: the planner places them by `method`.
  std::vector<int> placement;
  PlacementMethod method = PlacementMethod::kBalanced;
  /// Per node: seconds of one firing to place by (from a cost table or FLOPs); empty: each
  /// model filter's firing is measured before the run (measure_node_costs).
  std::vector<double> firing_seconds;
  /// Hand-off costs the placement charges per item crossing workers (PlacementCosts).
  double handoff_seconds = PlacementCosts{}.handoff_seconds;
  double handoff_seconds_per_byte = PlacementCosts{}.handoff_seconds_per_byte;
  /// Record every firing's worker, start and end (StreamRunResult::firings).
  bool trace = false;
  /// Channel capacity = this × the schedule's buffer size (at least 1); more slack lets
  /// pipeline stages run further apart.
  int64_t capacity_factor = 2;
  /// Let channels carry items of different types (programs converted from graphs, whose
  /// joiners interleave different values); model filters then check sizes as they run.
  bool mixed_items = false;
  /// Keep the output items (else only count them, so their buffers can be reused at once:
  /// what a benchmark of a long stream wants).
  bool keep_outputs = true;
};

struct StreamRunResult {
  std::vector<Tensor> outputs;  ///< Every item the program pushed, in order (keep_outputs).
  int64_t output_count = 0;     ///< How many items the program pushed.
  double seconds = 0;           ///< Wall time of the run (after preparation).
  double items_per_second = 0;  ///< Input items consumed per second.
  /// Per steady-state iteration: from its last input item entering the program to its last
  /// output item leaving it.
  std::vector<double> iteration_latency;
  std::vector<double> worker_busy;  ///< Per worker: share of `seconds` spent in work functions.
  /// Per worker, load-independent evidence of where its time went: CPU seconds its thread
  /// used (work, scans and hand-offs), wall seconds it slept waiting for a ready node, how
  /// often it slept, and how often the OS took its core away (involuntary switches).
  std::vector<double> worker_cpu_seconds;
  std::vector<double> worker_wait_seconds;
  std::vector<int64_t> worker_waits;
  std::vector<int64_t> worker_preempted;
  std::vector<int> placement;     ///< Per node: the worker that ran it.
  std::vector<double> node_cost;  ///< Per node: seconds per steady-state iteration placed by.
  double predicted_items_per_second = 0;  ///< The placement's simulated steady state.
  StreamPlacement plan;                   ///< Placement, loads, bound and prediction.
  struct Firing {
    int node = 0;
    int worker = 0;
    double start = 0;  ///< Seconds since the run started.
    double end = 0;
  };
  std::vector<Firing> firings;  ///< With StreamRunOptions::trace, in order of ending.
};

/// Per node of `graph`: seconds one steady-state iteration of it takes, measured by firing
/// model filters on zero inputs (the least thread CPU time of 3 firings, after one that
/// prepares their kernels); other nodes only move pointers and cost nearly nothing.
std::vector<double> measure_node_costs(const StreamGraph& graph, const StreamSchedule& schedule);

/// Bytes of one item per channel where its type is known (0 elsewhere), for hand-off costs.
std::vector<int64_t> channel_item_bytes(const std::vector<std::optional<ItemType>>& items);

/// The item type on every channel of `graph`, given the program input's item type; Error
/// naming the stream when a filter's model or op disagrees with what reaches it. With
/// `mixed_items`, a joiner of different types gives a channel of no one type (nullopt) instead.
std::vector<std::optional<ItemType>> infer_channel_items(const StreamGraph& graph,
                                                         const std::optional<ItemType>& input,
                                                         const std::string& origin,
                                                         bool mixed_items = false);

/// What planning and executing a program share: its flattened graph, static schedule and the
/// item type on each channel (nullopt: mixed items).
struct StreamSetup {
  StreamGraph graph;
  StreamSchedule schedule;
  std::vector<std::optional<ItemType>> channel_items;
};

/// Flattens and schedules `program` and types its channels by the first input item (none
/// with `mixed_items`). Error naming the program when there is no item, when the schedule
/// needs unbounded input, or when items or channels disagree in type.
StreamSetup prepare_stream(const StreamProgram& program, const std::vector<Tensor>& inputs,
                           bool mixed_items);

/// A placement chosen before the run: each node's worker, with the loads and the prediction
/// it was chosen by, and the steady-state seconds per node it was placed by.
struct StreamPlan {
  int workers = 1;
  StreamPlacement placement;
  std::vector<double> node_cost;
  /// Per node: the executor its model filter runs on, kept across runs so that kernels are
  /// prepared once (an executor that stands behind ExecutorInterface); empty or null: one is
  /// made for the run.
  std::vector<std::shared_ptr<Executor>> executors;
};

/// Feeds `inputs` (one tensor per item) through the program on the plan's workers and
/// collects what comes out. Filters fire as soon as their window is full and their output
/// has room, each on the worker the plan gives it, so stages and branches run at once on
/// successive items. Reads `trace`, `capacity_factor` and `keep_outputs` of `options`.
StreamRunResult execute_stream(const StreamProgram& program, const StreamSetup& setup,
                               const std::vector<Tensor>& inputs, const StreamPlan& plan,
                               const StreamRunOptions& options = {});

}  // namespace cleave
