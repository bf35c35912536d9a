// Loading a model to plan it: from its weights' sizes, unless a graph pass needs their bytes.
#pragma once

#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"

namespace cleave {

/// A model as a plan made from sizes (analytical or static costs) reads it.
struct PlanningModel {
  /// The graph load_model gives, except that no weight of 4 KiB or more holds bytes.
  Graph graph;
  /// graph_fingerprint of the graph load_model gives, with every weight's bytes: what a plan
  /// file records and `cleave run --plan` compares.
  std::string fingerprint;
  /// Whether the model was loaded whole (the passes still needed more weights' bytes after a
  /// few rounds): the weights were read, hashed, then let go.
  bool loaded_whole = false;
  /// The weights of 4 KiB or more a pass needed the bytes of, which were read (by name).
  std::vector<std::string> weights_read = {};
  /// The weights a pass rewrote from weights left in the file (a Conv's dead taps cut, one
  /// folded with a BatchNormalization), held as sizes only: their bytes were made from the
  /// file's only to be hashed, one weight at a time (by name).
  std::vector<std::string> weights_rewritten_when_hashed = {};
};

/// Loads `path` as load_model(path, options) does, leaving every weight of 4 KiB or more in
/// its file unless a graph pass needs its bytes (unread_weight_needs): the passes run again
/// with those read, until none needs more. A pass that rewrites such weights (DeferredWeights)
/// leaves the result sizes only, and the fingerprint makes its bytes one weight at a time.
/// The others' bytes are read only to be hashed, a piece at a time, so the weights are never
/// all in memory. After a few rounds it loads the model whole, hashes it and lets the bytes
/// go. `options.weights_unread` and `options.unread_external` are ignored. Errors as
/// load_model's.
PlanningModel load_for_planning(const std::string& path, const LoadOptions& options);

}  // namespace cleave
