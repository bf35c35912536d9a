// In-place Concat: which Concat inputs can be produced directly inside the Concat's output.
#include "runtime/concat_placement.h"

#include <fmt/core.h>

#include <cstdlib>
#include <string_view>

#include "runtime/kernels/dnnl_util.h"
#include "support/error.h"

namespace cleave {

namespace {

// A value written inside `parent`'s buffer at `offset` along `axis` (`byte_offset` bytes in).
struct Placed {
  ValueId parent = kNoValue;
  int axis = 0;
  int64_t offset = 0;
  std::size_t byte_offset = 0;
};

// A Concat input (the node's input `index`) and where its bytes go in the Concat's output.
struct Part {
  ValueId value = kNoValue;
  std::size_t index = 0;
  int64_t offset = 0;
  std::size_t byte_offset = 0;
};

dnnl::memory::desc layout_of(const OutputSpec& spec) {
  return spec.layout ? *spec.layout : plain_desc(spec.shape);
}

std::optional<OutputSpec> float_spec(const Graph& graph, ValueId value,
                                     const std::function<const OutputSpec*(ValueId)>& spec_of) {
  if (const OutputSpec* spec = spec_of(value)) {
    if (spec->dtype != DataType::kFloat) return std::nullopt;
    return *spec;
  }
  // Graph inputs and initializers are never placed, but their shape still tells whether
  // the Concat kernel can copy them as one contiguous run.
  const Value& v = graph.value(value);
  if (v.dtype != DataType::kFloat || !v.shape.rank_known) return std::nullopt;
  OutputSpec spec;
  for (const Dim& dim : v.shape.dims) {
    if (!dim.is_known()) return std::nullopt;
    spec.shape.push_back(dim.size);
  }
  return spec;
}

// The Concat's inputs with their slices of the output; nullopt when any input is not one
// contiguous run of the output in the same layout.
std::optional<std::vector<Part>> parts_of(
    const Graph& graph, const Node& node, const OutputSpec& whole, int axis,
    const std::function<const OutputSpec*(ValueId)>& spec_of) {
  std::vector<Part> parts;
  dnnl::memory::desc whole_layout = layout_of(whole);
  int64_t offset = 0;
  for (std::size_t index = 0; index < node.inputs.size(); ++index) {
    const ValueId input = node.inputs[index];
    if (input == kNoValue) return std::nullopt;
    std::optional<OutputSpec> spec = float_spec(graph, input, spec_of);
    if (!spec || spec->shape.size() != whole.shape.size()) return std::nullopt;
    int64_t size = spec->shape[static_cast<std::size_t>(axis)];
    if (size == 0) continue;
    bool last = offset + size == whole.shape[static_cast<std::size_t>(axis)];
    std::optional<std::size_t> start =
        slice_byte_offset(layout_of(*spec), whole_layout, axis, offset, last);
    if (!start) return std::nullopt;
    parts.push_back({input, index, offset, *start});
    offset += size;
  }
  if (parts.empty()) return std::nullopt;
  return parts;
}

// The Concat's axis (the attribute made non-negative) when its output is a float buffer of its
// own that `place_concat_inputs` may share; nullopt for any other node or output.
std::optional<int> concat_axis(const Node& node, const OutputSpec& whole) {
  const bool standard = node.domain.empty() || node.domain == "ai.onnx";
  if (!standard || node.op_type != "Concat" || node.outputs.size() != 1) return std::nullopt;
  if (whole.dtype != DataType::kFloat || whole.alias_of >= 0) return std::nullopt;
  const auto rank = static_cast<int64_t>(whole.shape.size());
  int64_t axis = node.int_attribute("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return static_cast<int>(axis);
}

// Whether this Concat's inputs already lie side by side inside one parent, in its order; then
// the Concat's output is that stretch of the parent. Returns the Concat's own placement.
std::optional<Placed> view_of_parent(const std::vector<Part>& parts, const OutputSpec& whole,
                                     int axis, const std::vector<std::optional<Placed>>& placed,
                                     const std::function<const OutputSpec*(ValueId)>& spec_of) {
  const std::optional<Placed>& first = placed[parts.front().value];
  if (!first || first->axis != axis) return std::nullopt;
  for (const Part& part : parts) {
    const std::optional<Placed>& mine = placed[part.value];
    if (!mine || mine->parent != first->parent || mine->axis != axis ||
        mine->offset != first->offset + part.offset ||
        mine->byte_offset != first->byte_offset + part.byte_offset) {
      return std::nullopt;
    }
  }
  const OutputSpec* parent = spec_of(first->parent);
  if (!parent) return std::nullopt;
  auto axis_index = static_cast<std::size_t>(axis);
  bool last = first->offset + whole.shape[axis_index] == parent->shape[axis_index];
  std::optional<std::size_t> start =
      slice_byte_offset(layout_of(whole), layout_of(*parent), axis, first->offset, last);
  if (start != first->byte_offset) return std::nullopt;
  return Placed{first->parent, axis, first->offset, *start};
}

}  // namespace

bool concat_in_place_enabled() {
  const char* text = std::getenv("CLEAVE_CONCAT_IN_PLACE");
  if (text == nullptr || *text == '\0' || std::string_view(text) == "1") return true;
  if (std::string_view(text) == "0") return false;
  throw Error(
      fmt::format("CLEAVE_CONCAT_IN_PLACE is '{}': expected 0 (every Concat copies its "
                  "inputs) or 1 (the default: inputs written in place where they can be)",
                  text));
}

ConcatPlacement place_concat_inputs(
    const Graph& graph, const std::function<const OutputSpec*(ValueId)>& spec_of,
    const std::function<bool(const Node& concat, ValueId input)>& may_place) {
  std::vector<std::optional<Placed>> placed(graph.value_capacity());
  if (!concat_in_place_enabled()) {
    ConcatPlacement none;
    none.slots.resize(graph.value_capacity());
    none.root_bytes.assign(graph.value_capacity(), 0);
    return none;
  }
  std::vector<NodeId> order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = graph.node(*it);
    if (node.op_type != "Concat" || node.outputs.size() != 1) continue;  // Before spec_of: cheap.
    ValueId output = node.outputs[0];
    if (may_place && !may_place(node, output)) continue;
    const OutputSpec* whole = spec_of(output);
    if (!whole) continue;
    const std::optional<int> axis = concat_axis(node, *whole);
    if (!axis) continue;
    std::optional<std::vector<Part>> parts = parts_of(graph, node, *whole, *axis, spec_of);
    if (!parts) continue;
    if (!placed[output]) {
      if (auto view = view_of_parent(*parts, *whole, *axis, placed, spec_of)) {
        placed[output] = view;
        continue;
      }
    }
    for (const Part& part : *parts) {
      if (placed[part.value]) continue;  // Already inside a later Concat: this one copies it.
      if (may_place && !may_place(node, part.value)) continue;
      const OutputSpec* spec = spec_of(part.value);
      if (!spec || spec->alias_of >= 0) continue;  // Not a buffer a kernel fills.
      placed[part.value] = Placed{output, *axis, part.offset, part.byte_offset};
    }
  }

  ConcatPlacement placement;
  placement.slots.resize(graph.value_capacity());
  placement.root_bytes.assign(graph.value_capacity(), 0);
  for (std::size_t value = 0; value < placed.size(); ++value) {
    if (!placed[value]) continue;
    std::size_t offset = 0;
    auto root = static_cast<ValueId>(value);
    // Parents come later in topological order, so the chain ends.
    while (placed[root]) {
      offset += placed[root]->byte_offset;
      root = placed[root]->parent;
    }
    placement.slots[value] = BufferSlot{root, offset};
    if (!placement.slots[root]) {
      const OutputSpec& spec = *spec_of(root);
      placement.slots[root] = BufferSlot{root, 0};
      placement.root_bytes[root] =
          spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
    }
    ++placement.values_in_place;
  }
  return placement;
}

bool concat_inputs_received_in_place(const Graph& graph, const Node& node) {
  // Channel blocks hold at most 16 channels: a slice that starts and (unless last) ends on a
  // multiple of 16 is whole blocks, as in a plain layout it is whole rows.
  constexpr int64_t kWidestBlock = 16;
  const bool standard = node.domain.empty() || node.domain == "ai.onnx";
  if (!standard || node.op_type != "Concat" || node.outputs.size() != 1) return false;
  const Value& output = graph.value(node.outputs[0]);
  if (output.dtype != DataType::kFloat || !output.shape.is_static()) return false;
  const std::vector<int64_t> dims = output.shape.sizes();
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t axis = node.int_attribute("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  for (int64_t d = 0; d < axis; ++d) {
    if (dims[static_cast<std::size_t>(d)] != 1) return false;
  }
  for (std::size_t index = 0; index < node.inputs.size(); ++index) {
    if (node.inputs[index] == kNoValue) return false;
    const Value& input = graph.value(node.inputs[index]);
    if (input.dtype != DataType::kFloat || !input.shape.is_static()) return false;
    const std::vector<int64_t> part = input.shape.sizes();
    if (part.size() != dims.size()) return false;
    const bool last = index + 1 == node.inputs.size();
    if (!last && part[static_cast<std::size_t>(axis)] % kWidestBlock != 0) return false;
  }
  return true;
}

std::optional<std::vector<std::optional<std::size_t>>> concat_input_offsets(
    const Graph& graph, const Node& node, const OutputSpec& whole,
    const std::function<const OutputSpec*(ValueId)>& spec_of) {
  const std::optional<int> axis = concat_axis(node, whole);
  if (!axis) return std::nullopt;
  std::optional<std::vector<Part>> parts = parts_of(graph, node, whole, *axis, spec_of);
  if (!parts) return std::nullopt;
  std::vector<std::optional<std::size_t>> offsets(node.inputs.size());
  for (const Part& part : *parts) offsets[part.index] = part.byte_offset;
  return offsets;
}

}  // namespace cleave
