// Region copies: a box of a plain tensor gathered into contiguous row-major memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "spatial/shape_map.h"

namespace cleave {

/// Copies the elements inside `box` of a dense row-major array of sizes `dims`, `element` bytes
/// each, from `in` to `out` (contiguous, row-major). The box must lie inside `dims`.
void copy_box(const std::byte* in, const std::vector<int64_t>& dims, std::size_t element,
              const Box& box, std::byte* out);

/// Copies the elements of plain tensor `tensor` inside `box` (its own coordinates), row-major,
/// to `out`, which must hold box_elements(box) elements of the tensor's type. Throws Error,
/// starting with `where`, when the tensor is blocked or the box has another rank or leaves it.
void copy_region(const Tensor& tensor, const Box& box, std::byte* out, const std::string& where);

/// The same region as a new plain tensor of the box's sizes.
Tensor copy_region(const Tensor& tensor, const Box& box, const std::string& where);

}  // namespace cleave
