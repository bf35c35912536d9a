// The partition search's objective in seconds: compute from a cost table, halos over links.
#pragma once

#include <cstdint>
#include <vector>

#include "spatial/optimizer.h"
#include "spatial/search.h"

namespace cleave {

/// What one layer's partition costs in seconds: each machine computes its rows, sends each
/// neighbour the halo rows it lacks (their sending end, SplitCostModel::send_seconds) and
/// receives the halo rows it lacks from each neighbour over their link (messages to one machine
/// queue on its link); the layer takes as long as its slowest machine. A shared link's queue
/// is not in this per-layer optimum (its terms would no longer split by boundary): the chain
/// search prices each candidate with it (chain_layer_seconds). Beside the weighted terms of
/// Eqs. 3.7-3.12 this prices compute and transfers in one unit, so a slow link or a slow machine
/// moves rows where the terms, which count elements, cannot see the difference.
struct SecondsModel {
  std::vector<double> seconds_per_index;  ///< Per machine: one index of the direction.
  double bytes_per_index = 0;             ///< One index of the direction (all other dims).
  int64_t halo = 0;                       ///< Indices each side of a boundary reads from the other.
  SplitCostModel links;                   ///< transfer_seconds(from, to, bytes) per machine pair.
};

/// The model's seconds for one partition (intervals per machine, in order).
double partition_seconds(const SearchSpace& space, const SecondsModel& model,
                         const std::vector<Interval>& partition);

/// The partition of `space` with the fewest seconds. The objective is a maximum over machines
/// whose terms depend only on a machine's interval and the halo it lacks at each boundary, so
/// the subtree below (machine, start index, halo missing on its left) is the same for every
/// prefix that reaches it: solved once each, right to left (the sharing of the thesis's
/// Algorithms 3-5, here exact). `evaluated` counts the (state, interval) pairs priced.
SearchResult search_partition_seconds(const SearchSpace& space, const SecondsModel& model);

}  // namespace cleave
