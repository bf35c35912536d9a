// Writes a cleave Graph as an ONNX model: the inverse of the importer.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace cleave {

/// Converts a graph to a model with the graph's IR version and opset imports. Nodes are written
/// in a topological order (control-flow bodies' outer-scope reads included); values with any
/// type information get a value_info entry. The forms cleave's passes fuse (activations, sums
/// and biases in Conv, BatchNormalization and MatMul attributes) are written as the standard
/// nodes they stand for (write_standard_form), so every model written is standard ONNX. Throws
/// Error on a cycle.
onnx::ModelProto to_onnx(const Graph& graph);

/// What to_onnx may leave out of the model it writes.
struct ExportOptions {
  /// Set: each initializer of the main graph with more elements than this, or without bytes
  /// (an unread weight), is written as a graph input of its type and dims instead, after the
  /// graph's own inputs. For ONNX's shape inference, which reads no weight's values: a copy
  /// of the graph to drop them held a second copy of every node for nothing.
  std::optional<int64_t> weights_as_inputs_above;
};

/// to_onnx with `options`.
onnx::ModelProto to_onnx(const Graph& graph, const ExportOptions& options);

/// Writes to_onnx(graph) to `path` atomically (see write_model_file).
void export_onnx(const Graph& graph, const std::string& path);

/// Serializes a model to `path` through a temporary file and a rename, so an error never leaves
/// a partial file. Models of 2 GiB and more (protobuf's limit) are refused with an Error.
void write_model_file(const onnx::ModelProto& model, const std::string& path);

}  // namespace cleave
