// Region copies: a box of a dense row-major array gathered into contiguous row-major memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spatial/shape_map.h"

namespace cleave {

/// Copies the elements inside `box` of a dense row-major array of sizes `dims`, `element` bytes
/// each, from `in` to `out` (contiguous, row-major). The box must lie inside `dims`.
void copy_box(const std::byte* in, const std::vector<int64_t>& dims, std::size_t element,
              const Box& box, std::byte* out);

}  // namespace cleave
