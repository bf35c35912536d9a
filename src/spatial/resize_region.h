// The region rule of Resize and Upsample along H and W: the input rows output rows read.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "runtime/kernels/tensor/resize_coordinates.h"
#include "spatial/region_rules.h"

namespace cleave {

/// One spatial axis of a Resize as cleave's kernel (runtime/kernels/tensor/resize.cc) and ONNX
/// Runtime compute it.
struct ResizeAxis {
  using Transform = ResizeTransform;  ///< kTfCropAndResize is refused.
  using Rounding = ResizeRounding;
  int64_t in = 0;       ///< Input rows.
  int64_t out = 0;      ///< Output rows.
  float scale = 1;      ///< The scale the coordinates use (the given one, or out / in).
  float resized = 0;    ///< The formulas' length_resized: in x scale, or the given size.
  bool linear = false;  ///< Linear interpolation; nearest otherwise.
  Transform transform = Transform::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
};

/// The input rows output rows `rows` read: for nearest, the rows their rounded coordinates
/// pick; for linear, both taps of each (clamped to the input, as the kernel clamps).
Interval resize_rows_read(const ResizeAxis& axis, const Interval& rows);

/// How a slice computes output rows `rows` of an axis: from input rows `read` (an aligned start
/// at or before what `rows` read, so that the slice's own coordinates are the whole Resize's
/// shifted by a whole number of rows), it computes the output rows `computed` (a superset of
/// `rows`, cropped afterwards). `by_sizes`: the slice gives its output length as a size (kept
/// ratio out/in, or (out-1)/(in-1) for align_corners) instead of the scale.
struct ResizeAxisPlan {
  Interval read;
  Interval computed;
};
std::optional<ResizeAxisPlan> plan_resize_axis(const ResizeAxis& axis, bool by_sizes,
                                               const Interval& rows, std::string& why);

/// The region map of a Resize or Upsample (NCHW) for output box `out`: along N and C (scale 1)
/// the same range; along H and W the aligned input rows, the slice computing the box `computed`
/// and its sizes or scales as plan_resize_axis says. Refused (with the reason) for cubic,
/// tf_crop_and_resize, scales or sizes that are not constants, and grids that never line up.
RegionMap resize_region(const Graph& graph, const Node& node, const std::vector<int64_t>& os,
                        const Box& out);

}  // namespace cleave
