// Shape inference in a child process: ONNX's inference code is not hardened against hostile
// models, and a crash or endless loop there must not take the importing process with it.
#include "onnx/shape_inference.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "support/isolated.h"

namespace cleave {

namespace {

// Inference merges what it computes into the declared value_info and output shapes and keeps
// a wrong declaration when the two conflict; without them, what comes back is computed alone,
// and the importer compares it with the declarations. The outputs of other domains' nodes keep
// theirs: ONNX has no schema to compute them from, and without them inference stops there
// (the com.microsoft.QGemm QDQ fusion writes, whose shape the frontend completes itself).
void forget_declared_shapes(onnx::GraphProto* graph) {
  std::set<std::string, std::less<>> undeducible;
  for (const auto& node : graph->node()) {
    if (node.domain().empty() || node.domain() == "ai.onnx") continue;
    undeducible.insert(node.output().begin(), node.output().end());
  }
  auto* infos = graph->mutable_value_info();
  infos->erase(std::remove_if(infos->begin(), infos->end(),
                              [&](const onnx::ValueInfoProto& info) {
                                return !undeducible.contains(info.name());
                              }),
               infos->end());
  for (auto& output : *graph->mutable_output()) {
    if (output.type().has_tensor_type()) {
      output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
}

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// A length-delimited field: `field` of wire type 2, then `bytes`.
void append_field(std::string& out, int field, std::string_view bytes) {
  append_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  append_varint(out, bytes.size());
  out.append(bytes);
}

void append_message(std::string& out, int field, const google::protobuf::MessageLite& message) {
  append_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  const std::size_t size = message.ByteSizeLong();
  append_varint(out, size);
  const std::size_t at = out.size();
  out.resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

// The part of an inferred graph that the importer reads, in GraphProto's wire format (field
// numbers of onnx.proto). Serializing the whole inferred model and parsing it again in the
// parent repeated the parse of every node's names; this sends a few bytes per node.
void append_types(std::string& out, const onnx::GraphProto& graph) {
  std::string node_bytes;
  std::string attribute_bytes;
  std::string body_bytes;
  for (const onnx::NodeProto& node : graph.node()) {
    node_bytes.clear();
    append_field(node_bytes, onnx::NodeProto::kOpTypeFieldNumber, node.op_type());
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      attribute_bytes.clear();
      append_field(attribute_bytes, onnx::AttributeProto::kNameFieldNumber, attribute.name());
      if (attribute.has_g()) {
        body_bytes.clear();
        append_types(body_bytes, attribute.g());
        append_field(attribute_bytes, onnx::AttributeProto::kGFieldNumber, body_bytes);
      }
      for (const onnx::GraphProto& body : attribute.graphs()) {
        body_bytes.clear();
        append_types(body_bytes, body);
        append_field(attribute_bytes, onnx::AttributeProto::kGraphsFieldNumber, body_bytes);
      }
      append_field(node_bytes, onnx::NodeProto::kAttributeFieldNumber, attribute_bytes);
    }
    append_field(out, onnx::GraphProto::kNodeFieldNumber, node_bytes);
  }
  for (const auto& info : graph.value_info()) {
    append_message(out, onnx::GraphProto::kValueInfoFieldNumber, info);
  }
  for (const auto& info : graph.output()) {
    append_message(out, onnx::GraphProto::kOutputFieldNumber, info);
  }
}

// The child's work: inference on the model, and the part of its result the importer reads;
// nothing when inference refuses the model (quietly: the importer reports what it finds).
std::vector<char> infer_and_send_types(const onnx::ModelProto& model, pid_t parent) {
  try {
    // In a forked child the model is the child's own copy of the parent's and is never freed
    // (the child exits after this): inference may change it in place, and a copy of a
    // 200k-node model was a tenth of its import. Where no child could be forked, the work runs
    // in the parent, on a copy.
    std::unique_ptr<onnx::ModelProto> copy;
    if (::getpid() == parent) copy = std::make_unique<onnx::ModelProto>(model);
    onnx::ModelProto& inferred = copy ? *copy : const_cast<onnx::ModelProto&>(model);
    forget_declared_shapes(inferred.mutable_graph());
    onnx::shape_inference::InferShapes(inferred);
    std::string bytes;
    append_types(bytes, inferred.graph());
    return std::vector<char>(bytes.begin(), bytes.end());
  } catch (...) {
  }
  return {};
}

}  // namespace

const onnx::GraphProto* infer_shapes_in_process(const onnx::ModelProto& model,
                                                google::protobuf::Arena& arena) {
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  *inferred = model;
  forget_declared_shapes(inferred->mutable_graph());
  try {
    onnx::shape_inference::InferShapes(*inferred);
  } catch (const std::exception&) {
    return nullptr;
  }
  return &inferred->graph();
}

const onnx::GraphProto* infer_shapes_isolated(const onnx::ModelProto& model, double timeout_seconds,
                                              google::protobuf::Arena& arena) {
  // Build the schema registry before forking, so the child does not start with its
  // initialization half done by another thread.
  onnx::OpSchemaRegistry::Instance();
  const pid_t parent = ::getpid();
  std::vector<ChildOutcome> outcomes =
      run_in_children({[&model, parent] { return infer_and_send_types(model, parent); }},
                      timeout_seconds, "shape inference");
  const std::optional<std::vector<char>>& bytes = outcomes.front().bytes;
  if (!bytes || bytes->size() > INT32_MAX) return nullptr;
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::GraphProto>(&arena);
  if (!inferred->ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) return nullptr;
  return inferred;
}

}  // namespace cleave
