// A run's graph outputs into its --output-dir, whole or not at all, and their report entries.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"
#include "support/atomic_output.h"

namespace cleave {

/// The report's entry of each graph output (name, type, and the file when written). With a
/// folder, writes output i of `outputs` (graph order) as NAME.npy into its staging, then
/// commits it: `cleave run` and `mpirun cleave run` / `run-split` (rank 0) alike. Throws Error
/// naming the folder when two outputs would be written as one file.
nlohmann::json write_run_outputs(const Graph& graph, const std::vector<Tensor>& outputs,
                                 AtomicFolder* folder);

}  // namespace cleave
