// Zero-Pad folding into the padding of the Conv and AveragePool nodes that read it.
#include "passes/pad_fusion.h"

#include <optional>
#include <string>
#include <vector>

namespace cleave {

namespace {

// The pads of a Pad node that pads with zeros along spatial dims only ([begin of each dim...,
// end of each dim...] over the data's rank), or nullopt when it is any other Pad.
std::optional<std::vector<int64_t>> zero_spatial_pads(const Graph& graph, const Node& pad) {
  if (pad.op_type != "Pad" || !pad.domain.empty() || pad.inputs.empty() ||
      pad.outputs.size() != 1 || pad.string_attribute("mode", "constant") != "constant") {
    return std::nullopt;
  }
  std::vector<int64_t> pads;
  if (const Attribute* attribute = pad.attribute("pads")) {
    // Opset 1-10: pads and value are attributes.
    if (pad.float_attribute("value", 0.0f) != 0.0f) return std::nullopt;
    pads = attribute->ints;
  } else {
    if (pad.inputs.size() < 2 || pad.inputs[1] == kNoValue || !is_constant(graph, pad.inputs[1]))
      return std::nullopt;
    if (pad.inputs.size() > 3 && pad.inputs[3] != kNoValue) return std::nullopt;  // axes
    const TensorData& data = *graph.value(pad.inputs[1]).initializer;
    if (data.dtype != DataType::kInt64 || !data.bytes) return std::nullopt;
    auto values = data.as<int64_t>();
    pads.assign(values.begin(), values.end());
    if (pad.inputs.size() > 2 && pad.inputs[2] != kNoValue) {
      ValueId fill = pad.inputs[2];
      if (!is_constant(graph, fill)) return std::nullopt;
      const TensorData& value = *graph.value(fill).initializer;
      if (value.dtype != DataType::kFloat || value.element_count() != 1 ||
          value.as<float>().size() != 1 || value.as<float>()[0] != 0.0f) {
        return std::nullopt;
      }
    }
  }
  const Shape& shape = graph.value(pad.inputs[0]).shape;
  const std::size_t rank = pads.size() / 2;
  if (pads.size() % 2 != 0 || rank < 3 || (shape.rank() != 0 && shape.rank() != rank)) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < pads.size(); ++i) {
    const bool batch_or_channel = i % rank < 2;
    if (pads[i] < 0 || (batch_or_channel && pads[i] != 0)) return std::nullopt;
  }
  return pads;
}

// The reader's own pads with the Pad's spatial pads added, or nullopt when the reader cannot
// take them (another op, auto_pad, ceil_mode, padding that must not be averaged).
std::optional<std::vector<int64_t>> merged_pads(const Node& reader,
                                                const std::vector<int64_t>& pad_pads) {
  const bool conv = reader.op_type == "Conv";
  if ((!conv && reader.op_type != "AveragePool") || !reader.domain.empty()) return std::nullopt;
  const std::string auto_pad = reader.string_attribute("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && !auto_pad.empty()) return std::nullopt;
  const std::size_t spatial = pad_pads.size() / 2 - 2;
  std::vector<int64_t> own = reader.ints_attribute("pads");
  if (own.empty()) own.assign(2 * spatial, 0);
  if (own.size() != 2 * spatial) return std::nullopt;
  if (!conv) {
    if (reader.int_attribute("ceil_mode", 0) != 0) return std::nullopt;
    bool has_own_pads = false;
    for (int64_t p : own) has_own_pads = has_own_pads || p != 0;
    if (has_own_pads && reader.int_attribute("count_include_pad", 0) == 0) return std::nullopt;
  }
  const std::size_t rank = spatial + 2;
  for (std::size_t axis = 0; axis < spatial; ++axis) {
    own[axis] += pad_pads[axis + 2];
    own[spatial + axis] += pad_pads[rank + axis + 2];
  }
  return own;
}

}  // namespace

PassResult fold_pads(Graph& graph) {
  PassResult result{"Pad folding", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    const Node& pad = graph.node(id);
    std::optional<std::vector<int64_t>> pads = zero_spatial_pads(graph, pad);
    if (!pads) continue;
    const ValueId padded = pad.outputs[0];
    const ValueId source = pad.inputs[0];
    if (source == kNoValue || read_by_bodies[padded]) continue;
    // Copied: rewiring a reader edits the consumer list being walked.
    const std::vector<NodeId> readers = graph.consumers(padded);
    for (NodeId reader_id : readers) {
      Node& reader = graph.node(reader_id);
      if (reader.inputs.empty() || reader.inputs[0] != padded) continue;
      bool reads_elsewhere = false;
      for (std::size_t slot = 1; slot < reader.inputs.size(); ++slot) {
        reads_elsewhere = reads_elsewhere || reader.inputs[slot] == padded;
      }
      if (reads_elsewhere) continue;
      std::optional<std::vector<int64_t>> merged = merged_pads(reader, *pads);
      if (!merged) continue;
      const bool conv = reader.op_type == "Conv";
      reader.set_attribute("pads", Attribute::of_ints(*merged));
      if (!conv) reader.set_attribute("count_include_pad", Attribute::of_int(1));
      graph.set_node_input(reader_id, 0, source);
      result.add(conv ? "Pads folded into Conv" : "Pads folded into AveragePool");
    }
  }
  return result;
}

}  // namespace cleave
