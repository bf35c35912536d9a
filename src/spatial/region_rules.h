// Per op: which region of each input a region of the output needs, and how the slice's node
// changes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "spatial/shape_map.h"

namespace cleave {

/// What computing the box `out` of a node's first output needs (thesis Eqs. 3.2-3.6 for the
/// windowed ops).
struct RegionMap {
  bool ok = false;
  std::string reason;  ///< Why the op cannot compute just this box, when !ok.
  /// Per input slot, the box of that input the slice reads; nullopt: omitted or not read (a
  /// Concat input outside the box).
  std::vector<std::optional<Box>> inputs;
  /// Attributes the slice's node sets differently (pads, group).
  std::vector<std::pair<std::string, Attribute>> attributes;
  /// Constant inputs the slice's node gets instead (Pad's pads, Reshape's shape, Resize's
  /// sizes), by slot; a slot past the node's last input is added.
  std::map<int, TensorData> constant_inputs;
  /// When set, the slice's node computes this box of the output (a superset of the requested
  /// one, in the output's coordinates) and a Slice crops it: a Resize starts where its input
  /// and output grids line up.
  std::optional<Box> computed;
};

/// The region map of `node` for the box `out` of its output 0. A box covering the whole output
/// always maps (to whole inputs, node unchanged); any other box maps only for the op families
/// the partitioner splits, otherwise `ok` is false with the reason.
RegionMap map_region(const Graph& graph, NodeId node, const Box& out);
/// The region map of computing all of `node` (its whole inputs, node unchanged): a box
/// covering the output, and every gathered node, whose shapes need not be known.
RegionMap whole_region(const Graph& graph, NodeId node);
/// The static sizes of a value, or nullopt when its shape is not fully known.
std::optional<std::vector<int64_t>> static_sizes(const Graph& graph, ValueId value);
/// Split points along `axis` of the node's output must be multiples of this (a grouped
/// convolution split along channels keeps whole groups).
int64_t split_granularity(const Graph& graph, NodeId node, int axis);
/// Arithmetic per element of the node's output (multiply-adds count 2): the cost of computing
/// one more output element on a machine.
double flops_per_output_element(const Graph& graph, NodeId node);

}  // namespace cleave
