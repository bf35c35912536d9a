// What makes a split, as text: rank 0 sends it, every rank builds the same partitioned graph.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ir/graph.h"
#include "spatial/split_model.h"

namespace cleave {

/// The split's options as JSON: its machines, dim, speeds and per-layer dims and shares (what
/// the search chose), whether tiles fuse, and the cost model that decides which do (with the
/// machine's message ends, message_ends, where the search priced them). Every
/// number is kept exactly (doubles round-trip; infinities as "inf"), so that split_model of the
/// same graph with split_recipe_from_json's options builds the same partitioned graph.
nlohmann::json split_recipe_json(const SplitModelOptions& options);

/// The options back from split_recipe_json's text, checked against `graph` (every layer named
/// is a node of it, each layer's shares one per machine). `origin` names the text in errors,
/// which also name the field and the expectation. The options build figures only
/// (figures_only: the partitioned graph, no naive phase nor manifest) and priced by FLOPs.
SplitModelOptions split_recipe_from_json(const nlohmann::json& recipe, const Graph& graph,
                                         const std::string& origin);

}  // namespace cleave
