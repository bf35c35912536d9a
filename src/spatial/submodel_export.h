// Writing a split folder: stand-alone per-machine ONNX sub-models, the manifest, the whole rewrite.
#pragma once

#include <string>

#include "spatial/split_model.h"
#include "support/atomic_output.h"

namespace cleave {

/// Stages a split folder's files in `out` (the caller commits it, so the folder appears whole
/// or not at all): manifest.json (with `model` and `fingerprint` as given), one ONNX sub-model
/// per run step (each with only the weights it reads; extract_submodel checks them), and
/// partitioned.onnx with plan.json (`cleave run DIR/partitioned.onnx --no-optimize --plan
/// DIR/plan.json` runs it on one worker thread per machine). Throws Error naming the file on
/// failure.
void write_split_folder(const SplitResult& result, AtomicFolder& out, const std::string& model,
                        const std::string& fingerprint);

/// The partitioned graph as ONNX at `onnx_path` and its plan (split_plan: one worker per
/// machine, for the graph as `--no-optimize` loads the file back) at `plan_path`: what a split
/// runs from, on threads or ranks. Throws Error naming the file on failure.
void write_partitioned_graph(const PartitionedGraph& split, const std::string& onnx_path,
                             const std::string& plan_path);

}  // namespace cleave
