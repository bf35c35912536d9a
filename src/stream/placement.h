// Placement of a stream program's actors on workers by steady-state cost, and its simulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stream/schedule.h"

namespace cleave {

/// What the placement and the simulator charge for the work of one steady-state iteration.
struct PlacementCosts {
  /// Per node of the flattened graph: seconds of one firing.
  std::vector<double> firing_seconds;
  /// Per item moved between two workers: the consumer waits for the producer's core to hand
  /// it over (a wake-up and the item's cache lines), `handoff_seconds` plus
  /// `handoff_seconds_per_byte` × the item's bytes.
  double handoff_seconds = 5e-6;
  double handoff_seconds_per_byte = 1e-10;
  /// Per channel: bytes of one item (0 where not known: only the fixed part is charged).
  std::vector<int64_t> item_bytes;
};

enum class PlacementMethod {
  kBalanced,    ///< Best simulated of the candidates below after moves and swaps (default).
  kGreedy,      ///< Longest steady-state cost first onto the least loaded worker, no hand-offs.
  kContiguous,  ///< Runs of consecutive actors (topological order) with the lowest bottleneck.
};
std::string_view placement_method_name(PlacementMethod method);
/// "balanced", "greedy" or "contiguous"; throws Error naming the value otherwise.
PlacementMethod parse_placement_method(std::string_view name);

struct StreamPlacement {
  PlacementMethod method = PlacementMethod::kBalanced;
  std::vector<int> worker;             ///< Per node.
  std::vector<double> node_seconds;    ///< Per node: repetitions × firing seconds.
  std::vector<double> worker_seconds;  ///< Per worker: its nodes' and hand-offs' seconds.
  double handoff_seconds = 0;          ///< Of one iteration, over every worker.
  /// Input items per second the most loaded worker allows (input_per_iteration / its load).
  double bound_items_per_second = 0;
  /// Input items per second in the simulated steady state (simulate_stream).
  double predicted_items_per_second = 0;
};

/// Longest steady-state cost first onto the least loaded worker (kGreedy; no hand-offs).
std::vector<int> place_longest_first(const std::vector<double>& node_seconds, int workers);

/// Seconds per iteration each worker spends when `worker` places the nodes (work and
/// hand-offs into its nodes; the program input counts as worker 0's, which feeds it).
std::vector<double> worker_loads(const StreamGraph& graph, const StreamSchedule& schedule,
                                 const PlacementCosts& costs, const std::vector<int>& worker,
                                 int workers);

/// Simulates the executor's firing rule (a node fires when its windows are full and its
/// outputs have room in channels of `capacity_factor` × the schedule's buffers; each worker
/// takes its nodes round robin in topological order) on an endless input, and returns the
/// steady state's input items per second.
double simulate_stream(const StreamGraph& graph, const StreamSchedule& schedule,
                       const PlacementCosts& costs, const std::vector<int>& worker, int workers,
                       int64_t capacity_factor = 2);

/// Places the nodes on `workers` by `method` and predicts the placement's throughput with
/// simulate_stream. Throws Error when a cost is negative or not finite, or sizes disagree.
StreamPlacement place_stream_nodes(const StreamGraph& graph, const StreamSchedule& schedule,
                                   const PlacementCosts& costs, int workers,
                                   PlacementMethod method = PlacementMethod::kBalanced,
                                   int64_t capacity_factor = 2);

/// The prediction and loads of a placement given by the caller (method is left as is).
StreamPlacement evaluate_placement(const StreamGraph& graph, const StreamSchedule& schedule,
                                   const PlacementCosts& costs, const std::vector<int>& worker,
                                   int workers, int64_t capacity_factor = 2);

}  // namespace cleave
