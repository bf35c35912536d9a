// The spatial split recipe: partition, optimise, rewrite, manifest, report — read top to bottom.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "ir/graph.h"
#include "spatial/manifest.h"
#include "spatial/naive_partition.h"
#include "spatial/optimizer.h"
#include "spatial/partitioned_graph.h"
#include "spatial/shape_map.h"

namespace cleave {

/// What a split moves and computes, from its partitioned graph.
struct SplitStats {
  int64_t transfer_bytes = 0;
  int64_t transfers = 0;
  int sync_points = 0;             ///< Layers that wait for data from another machine.
  int64_t redundant_elements = 0;  ///< Output elements computed on more than one machine.
  double redundant_flops = 0;
  std::vector<int64_t> weight_bytes;           ///< Per machine: the weights its slices read.
  std::vector<int64_t> peak_activation_bytes;  ///< Per machine, by liveness in graph order.
  int join_cases[4] = {0, 0, 0, 0};            ///< Per JoinCase.
  double predicted_seconds = 0;  ///< List-schedule of the partitioned graph on the cost model.
};

struct GatherNote {
  std::string node;
  std::string op;
  std::string reason;
};

struct SplitReport {
  SplitStats naive;      ///< Thesis naive phase: whole tensors gathered after every layer.
  SplitStats optimized;  ///< Missing rows only, fused tiles where the cost model says so.
  std::vector<GatherNote> gathers;  ///< Nodes computed whole on machine 0, and why.
  int fused_tensors = 0;
  int64_t whole_model_peak_bytes = 0;  ///< One machine: weights + activations.
  double whole_model_seconds = 0;      ///< The unsplit model on machine 0 of the cost model.
  std::vector<std::string> log;        ///< What each step of split_model changed.
};

struct SplitResult {
  Partition partition;
  Regions regions;
  ShapeMap shape_map;
  PartitionedGraph partitioned;
  SplitManifest manifest;
  SplitReport report;
};

struct SplitModelOptions {
  SplitOptions split;
  SplitCostModel cost;
  bool fuse = true;                             ///< Let the cost model fuse layers per tile.
  std::function<void(const std::string&)> log;  ///< Each step's one-line summary, when set.
  /// Only the optimised split's figures (auto's candidate row): the naive phase's graph and
  /// the manifest, which cost as much again, are not built (report.naive stays empty).
  bool figures_only = false;
  /// Per node of the unsplit graph, its seconds (auto's cost table): the split's list schedule
  /// prices each piece by its share of that node's seconds, so that the spatial row is
  /// predicted on the same costs as the other families. Null: FLOPs at `cost`'s rate.
  const CostTable* costs = nullptr;
};

/// Splits `graph` (static shapes needed to split a node; others are gathered): the naive
/// partition, the optimizer's held regions, the partitioned graph and its manifest, with the
/// naive partition's figures beside the optimised one's.
SplitResult split_model(const Graph& graph, const SplitModelOptions& options);

/// The statistics of a partitioned graph of `graph`.
SplitStats split_stats(const Graph& graph, const Partition& partition, const Regions& regions,
                       const PartitionedGraph& split, const SplitCostModel& cost,
                       const CostTable* costs = nullptr);
/// Corrects a profile of a split's partitioned graph (`table`, by NodeId of split.graph) for the
/// order it was timed in: one process runs every machine's piece of a layer one after another,
/// so each piece after the layer's first finds the layer's weights in cache, where its own rank
/// reads them as the first piece did (googlenet on 2 ranks: the second pieces profiled 19-38%
/// cheaper per output element than the first, and ran as fast as the first on the ranks;
/// docs/results/distributed.md). Each later piece of a node that reads weights then takes at
/// least the first piece's seconds per output element, at every thread count and beside busy
/// cores; a piece is never priced below its own profile.
void price_pieces_as_their_ranks_run_them(const PartitionedGraph& split, CostTable& table);

/// The cost table of a split's partitioned graph on the unsplit graph's terms, as split_stats
/// prices it: a piece of a model node takes its share (by output elements) of that node's
/// seconds in `costs`, at every thread count the table has; a copy (Slice, Concat) its bytes
/// read and written at `cost.copy_bytes_per_second` where set; a node `costs` lacks, or a copy
/// without that rate, its FLOPs at `cost`'s rate. So the split's Plan is simulated on the costs
/// the other families of auto's table are.
CostTable split_cost_table(const Graph& graph, const PartitionedGraph& split,
                           const SplitCostModel& cost, const CostTable* costs);
/// Per value, per machine, the held region (the ShapeMap of a split).
ShapeMap shape_map_of(const Graph& graph, const Regions& regions, int machines);
/// The --json report.
nlohmann::json split_report_json(const SplitResult& result);

}  // namespace cleave
