// ONNX shape inference for the importer, optionally isolated in a child process.
#pragma once

#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>

namespace cleave {

/// Runs ONNX shape inference on a copy of `model` in this process. The copy's declared shapes
/// (value_info, graph outputs' shapes) are dropped first, so the result holds only what
/// inference computed. Returns the inferred main graph, or nothing when inference throws.
/// ONNX 1.12's inference crashes on some hostile models (for example a Conv whose input rank
/// disagrees with its weight's), so use this only on trusted input. The result lives in
/// `arena`.
const onnx::GraphProto* infer_shapes_in_process(const onnx::ModelProto& model,
                                                google::protobuf::Arena& arena);

/// Runs ONNX shape inference in a forked child process and returns what the importer reads of
/// the inferred main graph: its value_info and outputs (the types), and per node only the op
/// type and attribute names, with the bodies of graph attributes in the same form (no inputs,
/// outputs, initializers or tensor data). It is allocated in `arena`. Returns null when
/// inference throws, crashes, or runs longer than `timeout_seconds`, so that a model that
/// breaks ONNX's own code cannot crash or hang cleave.
const onnx::GraphProto* infer_shapes_isolated(const onnx::ModelProto& model, double timeout_seconds,
                                              google::protobuf::Arena& arena);

}  // namespace cleave
