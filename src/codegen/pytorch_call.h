// Shared by the two halves of the PyTorch op table (internal to src/codegen).
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/pytorch_ops.h"

namespace cleave::pytorch_detail {

// One node being written: its inputs' and outputs' Python names, shapes and constants.
struct Call {
  const Graph& graph;
  NodeId id;
  const Node& node;
  const PythonName& name;

  std::string where() const {
    return fmt::format("node {}", graph.describe(id));  // describe() names the op.
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("{}: no PyTorch mapping: {}", where(), why));
  }
  bool has(std::size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  std::string in(std::size_t i) const {
    if (!has(i)) fail(fmt::format("input {} is missing", i));
    return name(node.inputs[i]);
  }
  std::string out(std::size_t i = 0) const {
    if (i >= node.outputs.size() || node.outputs[i] == kNoValue) return "_";
    return name(node.outputs[i]);
  }
  const Value& input_value(std::size_t i) const { return graph.value(node.inputs.at(i)); }
  std::vector<int64_t> shape_in(std::size_t i) const {
    if (!has(i) || !input_value(i).shape.is_static())
      fail(fmt::format("input {} has no static shape", i));
    return input_value(i).shape.sizes();
  }
  int64_t elements_in(std::size_t i) const {
    shape_in(i);  // Refuses a shape that is not static.
    return input_value(i).shape.element_count();
  }
  std::vector<int64_t> shape_out(std::size_t i = 0) const {
    if (i >= node.outputs.size() || node.outputs[i] == kNoValue ||
        !graph.value(node.outputs[i]).shape.is_static()) {
      fail(fmt::format("output {} has no static shape", i));
    }
    return graph.value(node.outputs[i]).shape.sizes();
  }
  // The integer contents of a constant input, or nullopt.
  std::optional<std::vector<int64_t>> const_ints(std::size_t i) const {
    if (!has(i)) return std::nullopt;
    const Value& v = input_value(i);
    if (!v.initializer || !v.initializer->bytes) return std::nullopt;
    std::vector<int64_t> values;
    if (v.initializer->dtype == DataType::kInt64) {
      for (int64_t x : v.initializer->as<int64_t>()) values.push_back(x);
    } else if (v.initializer->dtype == DataType::kInt32) {
      for (int32_t x : v.initializer->as<int32_t>()) values.push_back(x);
    } else {
      return std::nullopt;
    }
    return values;
  }
  std::vector<int64_t> required_ints(std::size_t i, const char* what) const {
    auto values = const_ints(i);
    if (!values) fail(fmt::format("{} (input {}) must be a constant integer tensor", what, i));
    return *values;
  }
  std::optional<double> const_scalar(std::size_t i) const {
    if (!has(i)) return std::nullopt;
    const Value& v = input_value(i);
    if (!v.initializer || !v.initializer->bytes || v.initializer->element_count() != 1)
      return std::nullopt;
    switch (v.initializer->dtype) {
      case DataType::kFloat:
        return v.initializer->as<float>()[0];
      case DataType::kDouble:
        return v.initializer->as<double>()[0];
      case DataType::kInt64:
        return static_cast<double>(v.initializer->as<int64_t>()[0]);
      case DataType::kInt32:
        return v.initializer->as<int32_t>()[0];
      default:
        return std::nullopt;
    }
  }
  int64_t axis(const char* key, int64_t fallback, std::size_t rank) const {
    int64_t a = node.int_attribute(key, fallback);
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(std::max<std::size_t>(rank, 1)))
      fail(fmt::format("{} {} is out of range for rank {}", key, node.int_attribute(key, fallback),
                       rank));
    return a;
  }
};

using Writer = std::function<std::vector<std::string>(const Call&)>;

bool opset_at_least(const Call& c, int64_t version);
std::string py_float(double x);
std::string py_tuple(const std::vector<int64_t>& items);
std::string py_list(const std::vector<int64_t>& items);
std::string torch_dtype(DataType dtype);
std::string unary_line(const Call& c, const std::string& expression);
std::string join_inputs(const Call& c, const char* op);

// Begin and end pads per spatial axis of a convolution or pooling node, auto_pad resolved from
// the static shapes of input 0 and output 0.
std::pair<std::vector<int64_t>, std::vector<int64_t>> spatial_pads(
    const Call& c, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations);
// F.pad's argument order: last axis first, (begin, end) pairs.
std::string torch_pad_list(const std::vector<int64_t>& begin, const std::vector<int64_t>& end);
std::vector<int64_t> or_default(std::vector<int64_t> values, std::size_t size, int64_t fill);

// Convolutions, pooling, normalisation, matrix products, softmax, shape and indexing ops
// (pytorch_layer_ops.cc); the element-wise ops are in pytorch_ops.cc.
void add_layer_writers(std::map<std::string, Writer>& table);
// Resize and Upsample onto F.interpolate (pytorch_resize_ops.cc).
void add_resize_writers(std::map<std::string, Writer>& table);
// The int8 ops (pytorch_quantized_ops.cc), keyed "com.microsoft.QGemm" outside the standard
// domain.
void add_quantized_writers(std::map<std::string, Writer>& table);
// Ops whose results follow the data: TopK, NonZero, NonMaxSuppression, GatherND,
// ScatterElements, Range, Mod, RoiAlign, GridSample; and, wrapping the table's Reshape,
// Squeeze, Unsqueeze, Flatten, Expand, Shape, ConstantOfShape, Gather, Split and reductions,
// forms reading shapes at run time for values shaped by the data (pytorch_dynamic_ops.cc).
// Call after add_layer_writers.
void add_dynamic_writers(std::map<std::string, Writer>& table);
// If as a Python if/else over its branches' nodes, Loop as a while loop and Scan as a for loop
// over their bodies' nodes, and Constant (pytorch_control_ops.cc).
void add_control_writers(std::map<std::string, Writer>& table);
// RNN, GRU and LSTM as loops over the sequence, with clip, sequence_lens, ONNX's activations
// and input_forget (pytorch_rnn_ops.cc).
void add_rnn_writers(std::map<std::string, Writer>& table);

}  // namespace cleave::pytorch_detail
