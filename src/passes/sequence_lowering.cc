// Sequence lowering: sequences followed from where they are made to where they are read.
#include "passes/sequence_lowering.h"

#include <fmt/core.h>

#include <map>
#include <optional>

namespace cleave {

namespace {

class SequenceLowering {
 public:
  explicit SequenceLowering(Graph& graph) : g_(graph) {
    const auto it = g_.opset_imports.find("");
    opset_ = it == g_.opset_imports.end() ? 17 : it->second;
  }

  int run() {
    int lowered = 0;
    for (NodeId id : g_.topological_order()) {
      const Node& node = g_.node(id);
      if (!node.domain.empty() && node.domain != "ai.onnx") continue;
      if (follow(id)) continue;
      if (lower_reader(id)) ++lowered;
    }
    return lowered;
  }

 private:
  // The one integer of a constant scalar or one-element input; nullopt otherwise.
  std::optional<int64_t> constant_int(ValueId value) const {
    if (value == kNoValue || !is_constant(g_, value)) return std::nullopt;
    const TensorData& data = *g_.value(value).initializer;
    if (data.element_count() != 1) return std::nullopt;
    if (data.dtype == DataType::kInt64) return data.as<int64_t>()[0];
    if (data.dtype == DataType::kInt32) return data.as<int32_t>()[0];
    return std::nullopt;
  }

  ValueId input(const Node& node, std::size_t i) const {
    return i < node.inputs.size() ? node.inputs[i] : kNoValue;
  }

  // A position input (default `fallback`), negative counting from the end; nullopt when it is
  // not a constant or falls outside [0, limit].
  std::optional<int64_t> position(ValueId value, int64_t size, int64_t fallback,
                                  int64_t limit) const {
    std::optional<int64_t> p = value == kNoValue ? fallback : constant_int(value);
    if (!p) return std::nullopt;
    if (*p < 0) *p += size;
    if (*p < 0 || *p > limit) return std::nullopt;
    return p;
  }

  std::string fresh(const std::string& base) const {
    std::string name = base;
    for (int k = 1; g_.find_value(name); ++k) name = fmt::format("{}_{}", base, k);
    return name;
  }

  // Axes as the opset wants them: an int64 input from opset 13, else an attribute.
  NodeId add_with_axes(const std::string& op, ValueId data, int64_t axis, const std::string& at) {
    if (opset_ >= 13) {
      const ValueId axes = g_.add_initializer(
          fresh(at + "_axes"), TensorData::from<int64_t>(DataType::kInt64, {1}, {axis}));
      return g_.add_op(op, {data, axes}, 1, {}, fresh(at));
    }
    return g_.add_op(op, {data}, 1, {{"axes", Attribute::of_ints({axis})}}, fresh(at));
  }

  // Makers and changers of sequences: records what each sequence holds.
  bool follow(NodeId id) {
    const Node& node = g_.node(id);
    if (node.outputs.empty()) return false;
    const ValueId out = node.outputs[0];
    const std::string& op = node.op_type;
    if (op == "SequenceEmpty") {
      held_[out] = {};
    } else if (op == "SequenceConstruct") {
      held_[out] = node.inputs;
    } else if (op == "SequenceInsert" || op == "SequenceErase") {
      auto found = held_.find(input(node, 0));
      if (found == held_.end()) return true;
      std::vector<ValueId> items = found->second;
      const auto size = static_cast<int64_t>(items.size());
      if (op == "SequenceInsert") {
        const std::optional<int64_t> p = position(input(node, 2), size, size, size);
        if (!p) return true;
        items.insert(items.begin() + *p, input(node, 1));
      } else {
        const std::optional<int64_t> p = position(input(node, 1), size, size - 1, size - 1);
        if (!p) return true;
        items.erase(items.begin() + *p);
      }
      held_[out] = std::move(items);
    } else if (op == "SplitToSequence") {
      split_to_sequence(id);
    } else {
      return false;
    }
    return true;
  }

  void split_to_sequence(NodeId id) {
    const Node node = g_.node(id);
    const ValueId data = node.inputs[0];
    const ValueId split = input(node, 1);
    const Shape& shape = g_.value(data).shape;
    if (!shape.rank_known || shape.rank() == 0) return;
    const auto rank = static_cast<int64_t>(shape.rank());
    int64_t axis = node.int_attribute("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return;
    const int64_t length = shape.dims[axis].size;
    std::vector<int64_t> sizes;
    if (split == kNoValue) {
      if (length < 0) return;
      sizes.assign(length, 1);
    } else if (!is_constant(g_, split)) {
      // Only the count is known: enough for SequenceLength.
      const Shape& split_shape = g_.value(split).shape;
      if (split_shape.rank_known && split_shape.rank() == 1 && split_shape.dims[0].is_known())
        counts_[node.outputs[0]] = split_shape.dims[0].size;
      return;
    } else if (g_.value(split).initializer->dims.empty()) {
      const std::optional<int64_t> each = constant_int(split);
      if (!each || *each <= 0 || length < 0) return;
      for (int64_t done = 0; done < length; done += *each)
        sizes.push_back(std::min(*each, length - done));
    } else {
      const TensorData& data_split = *g_.value(split).initializer;
      if (data_split.dtype != DataType::kInt64) return;
      for (int64_t s : data_split.as<int64_t>()) sizes.push_back(s);
    }
    if (sizes.empty()) return;
    const bool squeeze = split == kNoValue && node.int_attribute("keepdims", 1) == 0;
    std::vector<std::pair<std::string, Attribute>> attributes{{"axis", Attribute::of_int(axis)}};
    std::vector<ValueId> inputs{data};
    if (opset_ >= 13) {
      inputs.push_back(
          g_.add_initializer(fresh(node.name + "_split"),
                             TensorData::from<int64_t>(
                                 DataType::kInt64, {static_cast<int64_t>(sizes.size())}, sizes)));
    } else {
      attributes.emplace_back("split", Attribute::of_ints(sizes));
    }
    const NodeId pieces = g_.add_op("Split", inputs, static_cast<int>(sizes.size()),
                                    std::move(attributes), fresh(node.name + "_pieces"));
    std::vector<ValueId> items = g_.node(pieces).outputs;
    if (squeeze) {
      for (ValueId& item : items)
        item = g_.node(add_with_axes("Squeeze", item, axis, node.name + "_squeeze")).outputs[0];
    }
    held_[node.outputs[0]] = std::move(items);
  }

  // Readers of sequences: replaced by the tensor operation they amount to.
  bool lower_reader(NodeId id) {
    const Node node = g_.node(id);
    if (node.outputs.empty() || node.inputs.empty()) return false;
    const ValueId out = node.outputs[0];
    auto found = held_.find(node.inputs[0]);
    if (node.op_type == "SequenceLength") {
      int64_t count = -1;
      if (found != held_.end()) count = static_cast<int64_t>(found->second.size());
      if (auto known = counts_.find(node.inputs[0]); known != counts_.end()) count = known->second;
      if (count < 0) return false;
      g_.remove_node(id);
      g_.add_node("Constant", {}, {out},
                  {{"value", Attribute::of_tensor(
                                 TensorData::from<int64_t>(DataType::kInt64, {}, {count}))}},
                  node.name);
      return true;
    }
    if (found == held_.end()) return false;
    const std::vector<ValueId>& items = found->second;
    const auto size = static_cast<int64_t>(items.size());
    if (node.op_type == "SequenceAt") {
      const std::optional<int64_t> p = position(input(node, 1), size, -1, size - 1);
      if (!p || input(node, 1) == kNoValue) return false;
      g_.remove_node(id);
      g_.add_node("Identity", {items[*p]}, {out}, {}, node.name);
      return true;
    }
    if (node.op_type == "ConcatFromSequence" && !items.empty()) {
      const int64_t axis = node.int_attribute("axis", 0);
      std::vector<ValueId> parts = items;
      if (node.int_attribute("new_axis", 0) != 0) {
        for (ValueId& part : parts)
          part =
              g_.node(add_with_axes("Unsqueeze", part, axis, node.name + "_unsqueeze")).outputs[0];
      }
      g_.remove_node(id);
      g_.add_node("Concat", parts, {out}, {{"axis", Attribute::of_int(axis)}}, node.name);
      return true;
    }
    return false;
  }

  Graph& g_;
  int64_t opset_ = 17;
  std::map<ValueId, std::vector<ValueId>> held_;  // Sequence -> its elements, in order.
  std::map<ValueId, int64_t> counts_;             // Sequence -> its length, elements unknown.
};

}  // namespace

PassResult lower_sequences(Graph& graph) {
  PassResult result{"sequence lowering", {}, {}};
  result.add("sequence readers lowered", SequenceLowering(graph).run());
  return result;
}

}  // namespace cleave
