// Helpers for the ONNX tests: temporary folders and small models built with the protobuf API.
#pragma once

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave::testing {

/// The message of the cleave::Error that `action` throws, or "<no error>".
template <typename Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cleave-onnx-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void write_model(const onnx::ModelProto& model, const std::string& path) {
  write_bytes(path, model.SerializeAsString());
}

/// An empty model: IR version 8, standard opset 17.
inline onnx::ModelProto make_model(int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("cleave-test");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

inline void set_tensor_type(onnx::ValueInfoProto* info, const std::string& name, int elem_type,
                            std::initializer_list<int64_t> dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (int64_t dim : dims) shape->add_dim()->set_dim_value(dim);
}

inline void add_input(onnx::GraphProto* graph, const std::string& name,
                      std::initializer_list<int64_t> dims, int elem_type = 1) {
  set_tensor_type(graph->add_input(), name, elem_type, dims);
}

inline void add_output(onnx::GraphProto* graph, const std::string& name,
                       std::initializer_list<int64_t> dims, int elem_type = 1) {
  set_tensor_type(graph->add_output(), name, elem_type, dims);
}

inline onnx::NodeProto* add_node(onnx::GraphProto* graph, const std::string& op,
                                 std::vector<std::string> inputs, std::vector<std::string> outputs,
                                 const std::string& name = {}) {
  auto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (auto& input : inputs) node->add_input(input);
  for (auto& output : outputs) node->add_output(output);
  return node;
}

inline onnx::TensorProto* add_float_initializer(onnx::GraphProto* graph, const std::string& name,
                                                std::initializer_list<int64_t> dims) {
  auto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t dim : dims) {
    tensor->add_dims(dim);
    count *= dim;
  }
  for (int64_t i = 0; i < count; ++i) tensor->add_float_data(static_cast<float>(i));
  return tensor;
}

inline void add_ints_attribute(onnx::NodeProto* node, const std::string& name,
                               std::initializer_list<int64_t> values) {
  auto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute->add_ints(value);
}

/// The checks of onnx.checker.check_model(full_check=True): the checker, then strict shape
/// inference with type checking. Returns the first error, or nothing when the model passes.
inline std::optional<std::string> full_check_error(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto copy = model;
    onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*strict_mode=*/1);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace cleave::testing
