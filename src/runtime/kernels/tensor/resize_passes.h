// Resize's separable interpolation passes (linear, cubic) over a dense layout (plain,
// channels-last or channel-blocked), with vector loops per instruction set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/cpu_isa.h"

namespace cleave::shape {

/// Linear or cubic taps of one axis: output o is the sum over t of
/// weight[o·taps + t] · input[index[o·taps + t]], summed in the order of t.
struct AxisTaps {
  int taps = 0;
  std::vector<int64_t> index;  ///< out × taps
  std::vector<float> weight;   ///< out × taps
  std::vector<bool> outside;   ///< out: takes the extrapolation value
  bool identity = false;       ///< out == in and every output copies its own input
  /// The same taps by column (taps × out), indices as int32, for the gathering loops; empty
  /// where an index does not fit.
  std::vector<int32_t> index_columns;
  std::vector<float> weight_columns;
};

/// Fills `index_columns` and `weight_columns` from `index` and `weight`.
void add_tap_columns(AxisTaps& taps);

/// One dimension of a dense tensor as its bytes lie in memory, outermost first.
struct ResizeDim {
  int64_t in = 0, out = 0;
  /// nullptr for a dimension that keeps its size (a channel block, or channels-last's channels).
  const AxisTaps* taps = nullptr;
  /// Sum from zero over every tap, as the pass over a plain tensor's innermost axis does: an
  /// axis that is innermost in the plain layout but not in this one then gets the same bits.
  bool like_innermost = false;
};

/// Resizes `source` (dense, the dims' `in` sizes) into `target` (their `out` sizes), one dim at
/// a time in `order` (positions in `dims`), skipping dims without taps or with identity taps.
/// The loops are those of `isa` (at most what the CPU has); the results have the same bits
/// whatever `isa` and `threads` are.
template <typename T>
void interpolate_dims(std::span<const ResizeDim> dims, std::span<const std::size_t> order,
                      const T* source, T* target, int threads, VectorIsa isa);

extern template void interpolate_dims<float>(std::span<const ResizeDim>,
                                             std::span<const std::size_t>, const float*, float*,
                                             int, VectorIsa);
extern template void interpolate_dims<double>(std::span<const ResizeDim>,
                                              std::span<const std::size_t>, const double*, double*,
                                              int, VectorIsa);

}  // namespace cleave::shape
