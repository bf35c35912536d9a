// The automatic partition search (thesis §3.5): procedural partitions, objective, lossless pruning.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/naive_partition.h"
#include "spatial/shape_map.h"

namespace cleave {

struct SplitModelOptions;
struct CostTable;

/// What the layer search minimises: the weighted terms of Eqs. 3.7-3.12, or seconds from a
/// cost table and the machines' links (search_seconds.h).
enum class SearchObjective { kTerms, kSeconds };

/// The partitions of one layer's output along one direction: per machine an interval whose size
/// lies within `threshold_percent` of its speed share (Eqs. 3.13-3.16), the first starting at
/// 0, each next one starting after the previous start and no later than its end (a later start
/// would leave a gap; an earlier one overlaps: redundant work), the last ending at `length`.
struct SearchSpace {
  int64_t length = 0;
  std::vector<double> speeds;  ///< One per machine.
  double threshold_percent = 10;
  bool overlap = false;        ///< Allow intervals to overlap (the thesis's overlapped option).
  int64_t other_elements = 1;  ///< Elements per index of the direction (the other dims).
};

/// Weights of Eqs. 3.8-3.11 and the layer facts they need.
struct SearchWeights {
  double operations = 1;
  double data = 1;
  double overlap = 1;
  double harmonic = 1;
  /// Halo indices one machine reads from a neighbour per boundary (k_eff - stride, >= 0):
  /// the dependency size of Eq. 3.9 is this times other_elements per inner boundary.
  int64_t halo = 0;
};

struct SearchResult {
  std::vector<Interval> best;  ///< Per machine.
  double value = 0;            ///< Eq. 3.12 for this layer.
  double log10_total = 0;      ///< log10 of the number of partitions in the space.
  int64_t evaluated = 0;       ///< Partitions whose objective was computed.
  double seconds = 0;
};

/// Eq. 3.13-3.16: per machine, the sizes its interval may have.
std::vector<std::vector<int64_t>> possible_sizes(const SearchSpace& space);
/// Eqs. 3.7-3.12 for one partition of the layer.
double partition_objective(const SearchSpace& space, const SearchWeights& weights,
                           const std::vector<Interval>& partition);
/// Walks the partition tree (Algorithms 1-2: by machine, grouped by start index). With
/// `prune`, the subtree below each (machine, start index) is summarised once, as the thesis's
/// Algorithms 3-5 share it, by a right-to-left dynamic programme: the least boundary cost and
/// least maximum work of any completion from there. With the prefix's own terms and a balanced
/// remainder (which bounds the harmonic term) that gives an exact lower bound on every partition
/// below; subtrees are visited in order of it and cut as soon as it reaches the best found, so
/// the pruning is lossless. Without `prune`, evaluates every partition (the exhaustive search).
SearchResult search_partition(const SearchSpace& space, const SearchWeights& weights, bool prune);

/// log10 of the partitions in the space, counted per (machine, start) without enumerating.
double log10_partition_count(const SearchSpace& space);

/// Per convolution of the graph that the default split can cut, the shares the search picks
/// for it (`threshold_percent` 10), merged over `layers` (explicit entries win); the nodes
/// that follow it (share_followers) take the same shares. kTerms searches each layer alone
/// (Eqs. 3.7-3.12, as the thesis does); kSeconds searches chains of layers together
/// (chained_seconds_configs in search_chain.h), a layer's seconds from `costs` (its 1-thread
/// time on a machine of speed 1), else from its FLOPs at options.cost's rate, and transfers
/// from options.cost's links.
std::map<std::string, LayerConfig> searched_layer_configs(
    const Graph& graph, const SplitModelOptions& options,
    const std::map<std::string, LayerConfig>& layers, double threshold_percent = 10,
    SearchObjective objective = SearchObjective::kTerms, const CostTable* costs = nullptr);

}  // namespace cleave
