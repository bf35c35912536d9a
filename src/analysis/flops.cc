// Per-node FLOP, parameter and activation byte counts for the common ONNX operators.
#include "analysis/flops.h"

#include <algorithm>
#include <string_view>

namespace cleave {

namespace {

bool is_one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

// The static shape of a node's input or output slot, or nullptr.
const Shape* static_shape(const Graph& graph, const std::vector<ValueId>& values,
                          std::size_t slot) {
  if (slot >= values.size() || values[slot] == kNoValue) return nullptr;
  const Shape& shape = graph.value(values[slot]).shape;
  return shape.rank_known && shape.is_static() ? &shape : nullptr;
}

bool has_input(const Node& node, std::size_t slot) {
  return slot < node.inputs.size() && node.inputs[slot] != kNoValue;
}

// Counts are accumulated in 128 bits, with every factor capped just above INT64_MAX, so absurd
// shapes give "unknown" instead of overflowing.
using Wide = unsigned __int128;
constexpr Wide kTooLarge = Wide{1} << 63;

std::optional<int64_t> narrow(Wide count) {
  if (count > static_cast<Wide>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(count);
}

Wide product_from(const Shape& shape, std::size_t first) {
  Wide product = 1;
  for (std::size_t i = first; i < shape.rank(); ++i) {
    product *= static_cast<Wide>(shape.dims[i].size);
    if (product > static_cast<Wide>(INT64_MAX)) return kTooLarge;
  }
  return product;
}

Wide elements(const Shape& shape) {
  return product_from(shape, 0);
}

std::optional<int64_t> conv_flops(const Graph& graph, const Node& node, bool transposed) {
  const Shape* x = static_shape(graph, node.inputs, 0);
  const Shape* w = static_shape(graph, node.inputs, 1);
  const Shape* y = static_shape(graph, node.outputs, 0);
  if (!x || !w || !y || w->rank() < 2) return std::nullopt;
  // Each output (Conv) or input (ConvTranspose) element meets prod(W.dims[1:]) weights.
  const Wide per_element = product_from(*w, 1);
  const Wide driving = transposed ? elements(*x) : elements(*y);
  Wide flops = 2 * driving * per_element;
  if (has_input(node, 2)) flops += elements(*y);
  return narrow(flops);
}

std::optional<int64_t> gemm_flops(const Graph& graph, const Node& node) {
  const Shape* a = static_shape(graph, node.inputs, 0);
  const Shape* y = static_shape(graph, node.outputs, 0);
  if (!a || !y || a->rank() != 2 || y->rank() != 2) return std::nullopt;
  const int64_t k = node.int_attribute("transA", 0) ? a->dims[0].size : a->dims[1].size;
  Wide flops = 2 * elements(*y) * static_cast<Wide>(k);
  if (has_input(node, 2)) flops += elements(*y);
  return narrow(flops);
}

std::optional<int64_t> matmul_flops(const Graph& graph, const Node& node) {
  const Shape* a = static_shape(graph, node.inputs, 0);
  const Shape* y = static_shape(graph, node.outputs, 0);
  if (!a || !y || a->rank() == 0) return std::nullopt;
  return narrow(2 * elements(*y) * static_cast<Wide>(a->dims.back().size));
}

std::optional<int64_t> windowed_pool_flops(const Graph& graph, const Node& node) {
  const Shape* y = static_shape(graph, node.outputs, 0);
  const std::vector<int64_t> kernel = node.ints_attribute("kernel_shape");
  if (!y || kernel.empty()) return std::nullopt;
  Wide flops = elements(*y);
  for (int64_t k : kernel) {
    if (k < 0 || k > INT32_MAX) return std::nullopt;
    flops *= static_cast<Wide>(k);
    if (flops > static_cast<Wide>(INT64_MAX)) return std::nullopt;
  }
  return narrow(flops);
}

}  // namespace

std::optional<int64_t> node_flops(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  const std::string_view op = node.op_type;
  if (!node.domain.empty() && node.domain != "ai.onnx") return std::nullopt;
  if (op == "Conv") return conv_flops(graph, node, false);
  if (op == "ConvTranspose") return conv_flops(graph, node, true);
  if (op == "Gemm") return gemm_flops(graph, node);
  if (op == "MatMul") return matmul_flops(graph, node);
  if (is_one_of(op, {"MaxPool", "AveragePool", "LpPool"})) return windowed_pool_flops(graph, node);

  const Shape* x = static_shape(graph, node.inputs, 0);
  const Shape* y = static_shape(graph, node.outputs, 0);
  if (is_one_of(op, {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) ||
      op.starts_with("Reduce")) {
    if (!x) return std::nullopt;
    return narrow(elements(*x));
  }
  if (is_one_of(op, {"Concat",       "Reshape",
                     "Flatten",      "Transpose",
                     "Squeeze",      "Unsqueeze",
                     "Identity",     "Dropout",
                     "Gather",       "GatherElements",
                     "GatherND",     "Slice",
                     "Split",        "Pad",
                     "Shape",        "Size",
                     "Constant",     "ConstantOfShape",
                     "Cast",         "CastLike",
                     "Expand",       "Tile",
                     "DepthToSpace", "SpaceToDepth",
                     "ScatterND",    "ScatterElements",
                     "Range"})) {
    return 0;
  }
  if (!y) return std::nullopt;
  const Wide out = elements(*y);
  if (op == "BatchNormalization") return narrow(2 * out);
  if (is_one_of(op, {"LayerNormalization", "InstanceNormalization", "GroupNormalization"})) {
    return narrow(5 * out);
  }
  if (is_one_of(op, {"Softmax", "LogSoftmax"})) return narrow(3 * out);
  if (op == "LRN") {
    return narrow(
        out * static_cast<Wide>(std::clamp<int64_t>(node.int_attribute("size", 1), 0, INT32_MAX)));
  }
  if (is_one_of(op, {"Sum", "Mean", "Max", "Min"})) {
    return narrow(static_cast<Wide>(std::max<std::size_t>(node.inputs.size(), 2) - 1) * out);
  }
  if (is_one_of(op, {"Add",
                     "Sub",
                     "Mul",
                     "Div",
                     "Pow",
                     "Mod",
                     "PRelu",
                     "Where",
                     "Equal",
                     "Less",
                     "LessOrEqual",
                     "Greater",
                     "GreaterOrEqual",
                     "And",
                     "Or",
                     "Xor",
                     "Not",
                     "Relu",
                     "LeakyRelu",
                     "Elu",
                     "Selu",
                     "Celu",
                     "Sigmoid",
                     "HardSigmoid",
                     "HardSwish",
                     "Tanh",
                     "Softplus",
                     "Softsign",
                     "Gelu",
                     "Mish",
                     "Erf",
                     "Exp",
                     "Log",
                     "Sqrt",
                     "Reciprocal",
                     "Neg",
                     "Abs",
                     "Sign",
                     "Ceil",
                     "Floor",
                     "Round",
                     "Clip",
                     "Sin",
                     "Cos",
                     "Tan",
                     "IsNaN",
                     "IsInf",
                     "ThresholdedRelu",
                     "Shrink",
                     "Resize",
                     "Upsample"})) {
    return narrow(out);
  }
  return std::nullopt;
}

int64_t node_parameter_bytes(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::vector<ValueId> seen;
  int64_t bytes = 0;
  for (ValueId input : node.inputs) {
    if (input == kNoValue || std::find(seen.begin(), seen.end(), input) != seen.end()) continue;
    seen.push_back(input);
    const Value& value = graph.value(input);
    if (!value.initializer) continue;
    const Wide count = product_from(Shape::of(value.initializer->dims), 0);
    bytes += static_cast<int64_t>(std::min<Wide>(count * element_size(value.initializer->dtype),
                                                 static_cast<Wide>(INT64_MAX)));
  }
  return bytes;
}

std::optional<int64_t> node_output_bytes(const Graph& graph, NodeId id) {
  int64_t bytes = 0;
  for (ValueId output : graph.node(id).outputs) {
    const Value& value = graph.value(output);
    if (!value.shape.rank_known || !value.shape.is_static() || element_size(value.dtype) == 0) {
      return std::nullopt;
    }
    const auto value_bytes = narrow(elements(value.shape) * element_size(value.dtype));
    if (!value_bytes) return std::nullopt;
    bytes += *value_bytes;
  }
  return bytes;
}

}  // namespace cleave
