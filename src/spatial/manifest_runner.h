// Runs a split manifest in one process: sub-models in order, transfers as region copies.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"
#include "spatial/manifest.h"

namespace cleave {

/// Gives the graph of a run step's sub-model (by its file name).
using SubmodelLoader = std::function<Graph(const std::string& model)>;

/// Loads sub-models from the files of a split folder.
SubmodelLoader folder_loader(const std::string& folder);

/// Executes every machine's steps of `manifest` with cleave's executor, round-robin over the
/// machines, each send's region copied into a mailbox its receive takes it from. `inputs` are
/// the model's inputs by name (every machine that reads one gets it whole). Returns machine 0's
/// tensors named as the model's outputs. Throws Error when a step reads a tensor its machine
/// does not have, a received region has the wrong shape, or the machines wait on each other.
std::map<std::string, Tensor> run_manifest(const SplitManifest& manifest,
                                           const SubmodelLoader& load,
                                           const std::map<std::string, Tensor>& inputs);

}  // namespace cleave
