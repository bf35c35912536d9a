// Writing a split folder: stand-alone per-machine ONNX sub-models, the manifest, the whole rewrite.
#pragma once

#include <string>

#include "spatial/split_model.h"

namespace cleave {

/// Writes `dir` whole or not at all (built in a temporary sibling folder, then renamed over any
/// previous one): manifest.json (with `model` and `fingerprint` as given), one ONNX sub-model
/// per run step (each with only the weights it reads; extract_submodel checks them), and
/// partitioned.onnx with plan.json (`cleave run DIR/partitioned.onnx --no-optimize --plan
/// DIR/plan.json` runs it on one worker thread per machine). Throws Error naming the file on
/// failure, leaving nothing behind.
void write_split_folder(const SplitResult& result, const std::string& dir, const std::string& model,
                        const std::string& fingerprint);

}  // namespace cleave
