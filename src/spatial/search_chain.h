// The seconds objective across chains of layers: one DP over layers x candidate partitions.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/naive_partition.h"
#include "spatial/optimizer.h"
#include "spatial/search.h"
#include "spatial/search_seconds.h"

namespace cleave {

/// One layer's search: its space along the split axis and both objectives' models for it.
struct LayerSearch {
  NodeId node = -1;
  int axis = 0;
  SearchSpace space;
  SearchWeights weights;  ///< The terms objective (Eqs. 3.7-3.12) in seconds per element.
  SecondsModel seconds;   ///< The single-layer seconds objective.
};

/// The search of node `id` (a convolution the default split `base` cuts along one axis, not
/// named in `layers`, at least two indices per machine), or nullopt. A layer's seconds come
/// from `costs` (its 1-thread time on a machine of speed 1), else from its FLOPs at
/// options.cost's rate; transfers from options.cost's links.
std::optional<LayerSearch> layer_search(const Graph& graph, const SplitModelOptions& options,
                                        const Partition& base, NodeId id,
                                        const std::map<std::string, LayerConfig>& layers,
                                        double threshold_percent, const CostTable* costs);

/// One layer of a chain: the partitions its output may take and what they cost. A layer reads
/// the previous layer's output (through the activations and pools between them), so when the
/// two are partitioned differently each machine receives the rows it reads and does not hold:
/// the halo, and the re-distribution when shares change between layers.
struct ChainLayer {
  std::vector<std::vector<Interval>> candidates;  ///< Partitions of its output, per machine.
  std::vector<double> seconds_per_index;          ///< Per machine: one index of its output.
  /// The rows of the previous layer's output that this layer's rows `rows` read; unset when
  /// nothing before it is partitioned (a graph input every machine holds).
  std::function<Interval(const Interval&)> reads;
  double bytes_per_previous_index = 0;  ///< One index of the previous layer's output.
  /// Per machine: computing one index of the previous layer's output again. When set (the
  /// split fuses tiles), a machine recomputes missing rows instead of receiving them where
  /// that is quicker, as the optimizer's fused tiles do.
  std::vector<double> recompute_seconds_per_previous_index;
  /// For the first layer only: how its input is partitioned (its producer's default split), or
  /// empty when every machine holds the whole input.
  std::vector<Interval> input_partition;
};

/// Seconds of `layer` partitioned as `current` when the layer before it took `previous`
/// (nullptr: the layer's own input_partition): per machine, its rows' compute plus the
/// exchange of the rows each machine reads and does not hold, from their owners
/// (SplitCostModel::exchange_seconds: the senders' ends, a shared link's queue, or messages to
/// one machine queued on its link) or, with recompute_seconds_per_previous_index, computing
/// them again where that is quicker than receiving them; the slowest machine's.
double chain_layer_seconds(const ChainLayer& layer, const SplitCostModel& links,
                           const std::vector<Interval>* previous,
                           const std::vector<Interval>& current);

/// The chain's seconds for one choice per layer: the sum of its layers' (they run one after
/// another, each waiting for its inputs).
double chain_seconds(const std::vector<ChainLayer>& chain, const SplitCostModel& links,
                     const std::vector<std::vector<Interval>>& choice);

struct ChainResult {
  std::vector<std::vector<Interval>> best;  ///< Per layer: its partition.
  double value = std::numeric_limits<double>::infinity();
  int64_t evaluated = 0;  ///< (layer, candidate, predecessor) triples priced.
};

/// The choice of one candidate per layer with the fewest chain seconds. A layer's cost depends
/// only on its own and its predecessor's partitions, so a DP over layers with the candidate as
/// state is exact over the candidate sets: O(sum of |C_k| x |C_k-1|) pricings.
ChainResult search_chain_seconds(const std::vector<ChainLayer>& chain, const SplitCostModel& links);

/// Every partition of the space (the rules of search_partition's tree) when there are at most
/// `limit`; otherwise empty.
std::vector<std::vector<Interval>> enumerate_partitions(const SearchSpace& space,
                                                        std::size_t limit);

/// The nodes after `conv` that should take its shares: while its output (then theirs) has one
/// reader, that reader is not a Conv, is split along the same axes and reads one non-constant
/// input (activations, batch norms, pools, pads). Giving them the conv's shares keeps a
/// machine's rows of the conv and of its activation the same, so nothing moves between them.
std::vector<NodeId> share_followers(const Graph& graph, const Partition& partition, NodeId conv);

/// Per convolution that the default split cuts along one axis (as searched_layer_configs picks
/// them), shares chosen by the chain DP under the seconds objective, the followers of each
/// taking its shares. Layers are chained where one reads the previous one's output through its
/// followers. Candidates per layer: every partition of its space when it has at most
/// kEnumeratedPartitions, otherwise the speed-share split, the single-layer seconds optimum,
/// the terms optimum and the other layers' candidates rescaled to its length (up to
/// kEnumeratedPartitions). Where every layer of a chain is enumerated the result is the chain's
/// exact optimum over its spaces; elsewhere it is exact over those candidates, so never worse
/// under this model than the terms objective's per-layer choice or the speed shares.
inline constexpr std::size_t kEnumeratedPartitions = 200;
std::map<std::string, LayerConfig> chained_seconds_configs(
    const Graph& graph, const SplitModelOptions& options,
    const std::map<std::string, LayerConfig>& layers, double threshold_percent,
    const CostTable* costs);

}  // namespace cleave
