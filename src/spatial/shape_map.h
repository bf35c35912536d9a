// ShapeMaps: which part of every tensor each machine holds, as interval sets along each dimension.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// A half-open range [begin, end) of indices along one dimension.
struct Interval {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  bool contains(const Interval& other) const {
    return other.empty() || (begin <= other.begin && other.end <= end);
  }
  bool operator==(const Interval&) const = default;
};

Interval intersect(const Interval& a, const Interval& b);

/// One interval per dimension: a rectangular region of a tensor.
using Box = std::vector<Interval>;

/// The box covering a whole tensor of these sizes.
Box full_box(const std::vector<int64_t>& sizes);
Box intersect(const Box& a, const Box& b);
bool box_empty(const Box& box);
bool box_contains(const Box& outer, const Box& inner);
/// The smallest box holding both (an empty box is ignored).
Box bounding_box(const Box& a, const Box& b);
int64_t box_elements(const Box& box);
std::vector<int64_t> box_sizes(const Box& box);
/// `inner` in the coordinates of `outer` (outer's begins subtracted).
Box relative_box(const Box& inner, const Box& outer);
/// "[0:1, 0:8, 4:8, 0:8]"
std::string print_box(const Box& box);

/// Several disjoint ranges along one dimension, sorted.
using IntervalSet = std::vector<Interval>;

/// A tensor's partition: per machine, per dimension, the ranges that machine holds (the region
/// is the product of its dimensions' sets).
struct TensorMap {
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> sizes;
  std::vector<std::vector<IntervalSet>> machines;  ///< [machine][dimension]
};

/// Per tensor (by name, in the order added), per machine, the region it holds.
class ShapeMap {
 public:
  explicit ShapeMap(int machines = 1) : machines_(machines) {}
  int machines() const { return machines_; }
  /// Adds or replaces a tensor; every machine starts with nothing.
  TensorMap& add(const std::string& name, DataType dtype, std::vector<int64_t> sizes);
  /// Sets machine `m`'s region of `name` to one box.
  void set_box(const std::string& name, int machine, const Box& box);
  const TensorMap& at(const std::string& name) const;
  TensorMap& at(const std::string& name);
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::vector<std::string>& names() const { return order_; }

 private:
  int machines_;
  std::map<std::string, TensorMap> tensors_;
  std::vector<std::string> order_;
};

/// Text form, one tensor per block, machines by index; a dimension holding several ranges
/// joins them with `|`, an empty one is `-`:
///
///     shapemap 2 {
///       %y: f32[1,4,8,8]
///         m0: [0:1, 0:4, 0:4, 0:8]
///         m1: [0:1, 0:4, 4:8, 0:2|6:8]
///     }
std::string print_shape_map(const ShapeMap& map);
/// Parses the text form; throws Error with the line on malformed text or ranges outside the
/// tensor.
ShapeMap parse_shape_map(std::string_view text);

}  // namespace cleave
