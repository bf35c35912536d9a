// A split folder loaded for timing on this host's cores: its partitioned graph and its Plan.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// What `cleave bench MODEL --split DIR` runs beside the whole model: DIR/partitioned.onnx as
/// `cleave run --no-optimize` loads it (the graph plan.json was made for) and DIR/plan.json,
/// each split machine one worker.
struct BenchedSplit {
  Graph graph;
  ModelPlan plan;
  int machines = 0;
};

/// Reads a split folder written by `cleave split` of `model`. Throws Error naming the folder
/// or file when one is missing, is not a split of `model` (the manifest's fingerprint), or
/// its plan does not fit the partitioned graph. `cores_on_this_host`: as read_model_plan's
/// (false where the workers run unpinned, e.g. more machines than this host has cores).
BenchedSplit load_benched_split(const std::string& dir, const std::string& model,
                                const std::vector<std::string>& shapes,
                                bool cores_on_this_host = true);

/// Largest |a - b| over the outputs, matched by position; +inf when shapes differ.
double max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

}  // namespace cleave
