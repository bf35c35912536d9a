// The split `cleave split` keeps: each split dim tried, the seconds search checked against the
// terms one, machines' memory respected; and the report of the split kept.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_table.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "spatial/search.h"
#include "spatial/split_model.h"

namespace cleave {

/// Every dim tried and the split kept.
struct SplitChoice {
  std::optional<SplitResult> best;  ///< Empty when no split fits the machines' memory.
  /// The split options `best` was made with (its dim and the searched layers' shares, which
  /// the search's options do not keep: the terms search's may be kept over the chain's).
  SplitOptions best_split;
  std::vector<std::pair<std::string, double>> tried;  ///< Per dim: its predicted seconds.
  std::vector<std::string> over_memory;  ///< Per dim tried: why it does not fit, or empty.
  nlohmann::json searches = nlohmann::json::array();  ///< Per dim: seconds search vs terms.
  int splits_built = 0;  ///< Partitioned graphs built (split_model calls), each the search's cost.
};

/// Splits `graph` along each of `dims` (with `search`, layers searched by `objective`, `costs`
/// when given) and keeps the fastest predicted split whose weights fit `machine` (may be null).
/// `options.split.dim` is left at the last dim tried.
SplitChoice choose_split(const Graph& graph, SplitModelOptions& options,
                         const std::vector<SplitDim>& dims, bool search, SearchObjective objective,
                         const CostTable* costs, const Machine* machine);

/// The text `cleave split` prints about the split kept (ending with "wrote OUTPUT").
std::string split_choice_text(const SplitChoice& choice, const std::string& output);

}  // namespace cleave
