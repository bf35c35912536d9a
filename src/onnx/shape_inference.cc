// Shape inference in a child process: ONNX's inference code is not hardened against hostile
// models, and a crash or endless loop there must not take the importing process with it.
#include "onnx/shape_inference.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/isolated.h"

namespace cleave {

namespace {

// Tensor payloads are what makes models big; the parent already has them.
void strip_tensor_data(onnx::GraphProto* graph) {
  graph->clear_initializer();
  graph->clear_sparse_initializer();
  for (auto& node : *graph->mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      attribute.clear_t();
      attribute.clear_tensors();
      attribute.clear_sparse_tensor();
      attribute.clear_sparse_tensors();
      if (attribute.has_g()) strip_tensor_data(attribute.mutable_g());
      for (auto& body : *attribute.mutable_graphs()) strip_tensor_data(&body);
    }
  }
}

// Inference merges what it computes into the declared value_info and output shapes and keeps
// a wrong declaration when the two conflict; without them, what comes back is computed alone,
// and the importer compares it with the declarations.
void forget_declared_shapes(onnx::GraphProto* graph) {
  graph->clear_value_info();
  for (auto& output : *graph->mutable_output()) {
    if (output.type().has_tensor_type()) {
      output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
}

// The child's work: the inferred model without tensor data, serialized; nothing when
// inference refuses the model (quietly: the importer reports what it finds itself).
std::vector<char> infer_and_serialize(const onnx::ModelProto& model) {
  try {
    // Never freed: the child exits after this, and destroying a large model message by
    // message took a tenth of a 200k-node import.
    onnx::ModelProto& inferred = *new onnx::ModelProto(model);
    forget_declared_shapes(inferred.mutable_graph());
    onnx::shape_inference::InferShapes(inferred);
    strip_tensor_data(inferred.mutable_graph());
    std::vector<char> bytes(inferred.ByteSizeLong());
    if (bytes.size() <= INT32_MAX &&
        inferred.SerializeToArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return bytes;
    }
  } catch (...) {
  }
  return {};
}

}  // namespace

onnx::ModelProto* infer_shapes_in_process(const onnx::ModelProto& model,
                                          google::protobuf::Arena& arena) {
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  *inferred = model;
  forget_declared_shapes(inferred->mutable_graph());
  try {
    onnx::shape_inference::InferShapes(*inferred);
  } catch (const std::exception&) {
    return nullptr;
  }
  return inferred;
}

onnx::ModelProto* infer_shapes_isolated(const onnx::ModelProto& model, double timeout_seconds,
                                        google::protobuf::Arena& arena) {
  // Build the schema registry before forking, so the child does not start with its
  // initialization half done by another thread.
  onnx::OpSchemaRegistry::Instance();
  std::vector<ChildOutcome> outcomes = run_in_children(
      {[&model] { return infer_and_serialize(model); }}, timeout_seconds, "shape inference");
  const std::optional<std::vector<char>>& bytes = outcomes.front().bytes;
  if (!bytes || bytes->size() > INT32_MAX) return nullptr;
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (!inferred->ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) return nullptr;
  return inferred;
}

}  // namespace cleave
