// ONNX shape inference for the importer, optionally isolated in a child process.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>

namespace cleave {

/// Runs ONNX shape inference on a copy of `model` in this process. The copy's declared shapes
/// (value_info, graph outputs' shapes) are dropped first, so the result holds only what
/// inference computed. Returns the inferred model,
/// or nothing when inference throws. ONNX 1.12's inference crashes on some hostile models (for
/// example a Conv whose input rank disagrees with its weight's), so use this only on trusted
/// input.
std::optional<onnx::ModelProto> infer_shapes_in_process(const onnx::ModelProto& model);

/// Runs ONNX shape inference in a forked child process and returns the inferred model with its
/// tensor data removed (types and structure only). Returns nothing when inference throws,
/// crashes, or runs longer than `timeout_seconds`, so that a model that breaks ONNX's own code
/// cannot crash or hang cleave.
std::optional<onnx::ModelProto> infer_shapes_isolated(const onnx::ModelProto& model,
                                                      double timeout_seconds);

}  // namespace cleave
