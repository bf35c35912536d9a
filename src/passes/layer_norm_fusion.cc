// Layer normalization spelled out in elementwise ops fused into one LayerNormalization node.
#include "passes/layer_norm_fusion.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

namespace cleave {

namespace {

// The first axis of a keepdims ReduceMean over the trailing axes of its rank-`rank` input;
// nullopt for any other reduction. Axes come from the attribute (up to opset 17) or from a
// constant input (opset 18).
std::optional<int64_t> trailing_reduction_start(const Graph& graph, const Node& reduce,
                                                int64_t rank) {
  if (reduce.int_attribute("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (reduce.attribute("axes")) {
    axes = reduce.ints_attribute("axes");
  } else if (reduce.inputs.size() > 1 && reduce.inputs[1] != kNoValue) {
    if (!is_constant(graph, reduce.inputs[1])) return std::nullopt;
    const TensorData& data = *graph.value(reduce.inputs[1]).initializer;
    if (data.dtype != DataType::kInt64) return std::nullopt;
    auto values = data.as<int64_t>();
    axes.assign(values.begin(), values.end());
  }
  if (axes.empty()) return std::nullopt;  // All axes, or none: not a layer normalization.
  for (int64_t& axis : axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  if (axes.back() != rank - 1 || axes.back() - axes.front() + 1 != std::ssize(axes)) {
    return std::nullopt;
  }
  return axes.front();
}

// Whether `parameter` is a float constant that broadcasts over the last `normalized_rank` dims
// of `shape` without widening it, as LayerNormalization's scale and bias must.
bool is_normalization_parameter(const Graph& graph, ValueId parameter, const Shape& shape,
                                int64_t normalized_rank) {
  if (parameter == kNoValue || !is_constant(graph, parameter)) return false;
  const TensorData& data = *graph.value(parameter).initializer;
  if (data.dtype != DataType::kFloat || !data.has_data()) return false;
  auto rank = std::ssize(data.dims);
  if (rank > normalized_rank) return false;
  for (int64_t i = 0; i < rank; ++i) {
    const Dim& target = shape.dims[shape.dims.size() - static_cast<std::size_t>(rank - i)];
    if (data.dims[i] != 1 && (!target.is_known() || data.dims[i] != target.size)) return false;
  }
  return true;
}

// Fuses the chain starting at ReduceMean `mean_id`; true when it did.
bool fuse_at(Graph& graph, NodeId mean_id, const std::vector<bool>& read_by_bodies) {
  if (!is_single_output_op(graph, mean_id, "ReduceMean")) return false;
  const Node& mean = graph.node(mean_id);
  const ValueId x = mean.inputs[0];
  if (x == kNoValue || graph.value(x).dtype != DataType::kFloat) return false;
  const Shape shape = graph.value(x).shape;  // A copy: adding the scale below may move values.
  if (!shape.rank_known) return false;
  const auto rank = static_cast<int64_t>(shape.rank());
  const std::optional<int64_t> axis = trailing_reduction_start(graph, mean, rank);
  if (!axis) return false;

  const NodeId sub = only_reader(graph, mean.outputs[0], read_by_bodies);
  if (!is_single_output_op(graph, sub, "Sub") || graph.node(sub).inputs.size() != 2 ||
      graph.node(sub).inputs[0] != x || graph.node(sub).inputs[1] != mean.outputs[0]) {
    return false;
  }
  const ValueId centered = graph.node(sub).outputs[0];
  if (!is_removable(graph, centered, read_by_bodies)) return false;
  std::vector<NodeId> readers = graph.consumers(centered);
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  if (readers.size() != 2) return false;

  // One reader squares the centered value, the other divides it by the deviation.
  NodeId square = -1, div = -1;
  for (NodeId reader : readers) {
    const Node& node = graph.node(reader);
    bool is_pow = is_single_output_op(graph, reader, "Pow") && node.inputs.size() == 2 &&
                  node.inputs[0] == centered &&
                  constant_float_scalar(graph, node.inputs[1]) == 2.0f;
    bool is_self_product = is_single_output_op(graph, reader, "Mul") && node.inputs.size() == 2 &&
                           node.inputs[0] == centered && node.inputs[1] == centered;
    if (is_pow || is_self_product) {
      square = reader;
    } else if (is_single_output_op(graph, reader, "Div") && node.inputs.size() == 2 &&
               node.inputs[0] == centered && node.inputs[1] != centered) {
      div = reader;
    }
  }
  if (square < 0 || div < 0) return false;

  const NodeId variance = only_reader(graph, graph.node(square).outputs[0], read_by_bodies);
  if (!is_single_output_op(graph, variance, "ReduceMean") ||
      graph.node(variance).inputs[0] != graph.node(square).outputs[0] ||
      trailing_reduction_start(graph, graph.node(variance), rank) != axis) {
    return false;
  }
  const ValueId variance_value = graph.node(variance).outputs[0];
  const NodeId add_epsilon = only_reader(graph, variance_value, read_by_bodies);
  if (!is_single_output_op(graph, add_epsilon, "Add")) return false;
  const std::optional<float> epsilon =
      constant_float_scalar(graph, other_input(graph.node(add_epsilon), variance_value));
  if (!epsilon || *epsilon < 0.0f) return false;
  const NodeId sqrt = only_reader(graph, graph.node(add_epsilon).outputs[0], read_by_bodies);
  if (!is_single_output_op(graph, sqrt, "Sqrt")) return false;
  const ValueId deviation = graph.node(sqrt).outputs[0];
  if (only_reader(graph, deviation, read_by_bodies) != div ||
      graph.node(div).inputs[1] != deviation) {
    return false;
  }

  std::vector<NodeId> chain = {mean_id, sub, square, variance, add_epsilon, sqrt, div};
  const int64_t normalized_rank = rank - *axis;
  ValueId scale = kNoValue, bias = kNoValue;
  NodeId last = div;
  const NodeId mul = only_reader(graph, graph.node(div).outputs[0], read_by_bodies);
  if (is_single_output_op(graph, mul, "Mul")) {
    ValueId candidate = other_input(graph.node(mul), graph.node(div).outputs[0]);
    if (is_normalization_parameter(graph, candidate, shape, normalized_rank)) {
      scale = candidate;
      chain.push_back(mul);
      last = mul;
      const NodeId add = only_reader(graph, graph.node(mul).outputs[0], read_by_bodies);
      if (is_single_output_op(graph, add, "Add")) {
        candidate = other_input(graph.node(add), graph.node(mul).outputs[0]);
        if (is_normalization_parameter(graph, candidate, shape, normalized_rank)) {
          bias = candidate;
          chain.push_back(add);
          last = add;
        }
      }
    }
  }

  const ValueId output = graph.node(last).outputs[0];
  const std::string name = graph.node(mean_id).name;
  for (NodeId id : chain) graph.remove_node(id);
  if (scale == kNoValue) {
    std::vector<int64_t> dims;
    for (int64_t i = *axis; i < rank; ++i) {
      const Dim& dim = shape.dims[static_cast<std::size_t>(i)];
      dims.push_back(dim.is_known() ? dim.size : 1);
    }
    // An unknown normalized dim gets a scale of 1 element, which broadcasts the same.
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    scale = graph.add_initializer(
        unique_value_name(graph, name.empty() ? "layer_norm_scale" : name + "_scale"),
        TensorData::from(DataType::kFloat, dims,
                         std::vector<float>(static_cast<std::size_t>(count), 1.0f)));
  }
  std::vector<ValueId> inputs = {x, scale};
  if (bias != kNoValue) inputs.push_back(bias);
  graph.add_node("LayerNormalization", std::move(inputs), {output},
                 {{"axis", Attribute::of_int(*axis)}, {"epsilon", Attribute::of_float(*epsilon)}},
                 name);
  return true;
}

}  // namespace

PassResult fuse_layer_norms(Graph& graph) {
  PassResult result{"LayerNormalization fusion", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    if (graph.node(id).removed) continue;
    if (fuse_at(graph, id, read_by_bodies)) result.add("layer normalizations fused");
  }
  return result;
}

}  // namespace cleave
