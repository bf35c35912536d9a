// The one region copy, shared by the in-process split runner and the MPI ranks' sends.
#include "spatial/region.h"

#include <fmt/core.h>

#include <cstring>
#include <vector>

#include "support/error.h"

namespace cleave {

namespace {

void check_region(const Tensor& tensor, const Box& box, const std::string& where) {
  if (tensor.is_blocked())
    throw Error(
        fmt::format("{}: tensor {} is not plain (blocked layout)", where, tensor.describe()));
  const std::vector<int64_t>& shape = tensor.shape();
  if (box.size() != shape.size()) {
    throw Error(fmt::format("{}: region has {} dimensions, the tensor {}", where, box.size(),
                            tensor.describe()));
  }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (box[d].begin < 0 || box[d].end > shape[d] || box[d].begin > box[d].end) {
      throw Error(fmt::format("{}: region [{}, {}) of dimension {} is outside {}", where,
                              box[d].begin, box[d].end, d, tensor.describe()));
    }
  }
}

}  // namespace

void copy_box(const std::byte* in, const std::vector<int64_t>& dims, std::size_t element,
              const Box& box, std::byte* out) {
  if (box_elements(box) == 0) return;
  const std::size_t rank = box.size();
  if (rank == 0) {
    std::memcpy(out, in, element);
    return;
  }
  std::vector<int64_t> strides(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * dims[d];
  // Copies whole rows of the last dimension; `index` walks the box's other dimensions.
  const std::size_t row = static_cast<std::size_t>(box[rank - 1].size()) * element;
  std::vector<int64_t> index(rank, 0);
  for (std::size_t d = 0; d < rank; ++d) index[d] = box[d].begin;
  while (true) {
    int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += index[d] * strides[d];
    std::memcpy(out, in + offset * static_cast<int64_t>(element), row);
    out += row;
    // An odometer over the dimensions before the last.
    int d = static_cast<int>(rank) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < box[d].end) break;
      index[d] = box[d].begin;
    }
    if (d < 0) return;
  }
}

void copy_region(const Tensor& tensor, const Box& box, std::byte* out, const std::string& where) {
  check_region(tensor, box, where);
  copy_box(static_cast<const std::byte*>(tensor.raw()), tensor.shape(),
           element_size(tensor.dtype()), box, out);
}

Tensor copy_region(const Tensor& tensor, const Box& box, const std::string& where) {
  check_region(tensor, box, where);
  Tensor out = Tensor::allocate(tensor.dtype(), box_sizes(box));
  copy_region(tensor, box, static_cast<std::byte*>(out.raw()), where);
  return out;
}

}  // namespace cleave
