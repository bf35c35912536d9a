// Writing a split folder: stand-alone per-machine ONNX sub-models, the manifest, the whole rewrite.
#pragma once

#include <string>
#include <vector>

#include "frontend/load.h"
#include "spatial/split_model.h"
#include "support/atomic_output.h"

namespace cleave {

/// Stages a split folder's files in `out` (the caller commits it, so the folder appears whole
/// or not at all): manifest.json (with `model` and `fingerprint` as given), one ONNX sub-model
/// per run step (each with only the weights it reads; extract_submodel checks them), and
/// partitioned.onnx with plan.json (`mpirun cleave run-split DIR` runs them on ranks, `cleave
/// bench --split DIR` on one worker thread per machine). Throws Error naming the file on
/// failure.
void write_split_folder(const SplitResult& result, AtomicFolder& out, const std::string& model,
                        const std::string& fingerprint);

/// How a split's partitioned.onnx is loaded wherever it runs (run-split, `bench --split`, the
/// plan written beside it): no graph pass but the runtime fusions, which put back the fused
/// nodes the split was searched on (to_onnx writes them as standard ONNX), so that the tasks
/// run are the partitioned graph's nodes. `shapes`: as `--shape`.
LoadOptions partitioned_load_options(const std::vector<std::string>& shapes = {});

/// The partitioned graph as ONNX at `onnx_path` and its plan (split_plan: one worker per
/// machine, for the graph as partitioned_load_options loads the file back) at `plan_path`:
/// what a split runs from, on threads or ranks. Throws Error naming the file on failure.
void write_partitioned_graph(const PartitionedGraph& split, const std::string& onnx_path,
                             const std::string& plan_path);

}  // namespace cleave
