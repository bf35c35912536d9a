// The one region copy: a box of a dense row-major array (sliced weights of a split).
#include "spatial/region.h"

#include <cstring>
#include <vector>

namespace cleave {

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

}  // namespace cleave
