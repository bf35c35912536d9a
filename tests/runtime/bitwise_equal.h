// Test helper: whether two runs' outputs agree bit for bit (shapes, sizes and bytes).
#pragma once

#include <cstring>
#include <vector>

#include "runtime/tensor.h"

namespace cleave {

inline bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape() || a[i].byte_size() != b[i].byte_size()) return false;
    if (std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()) != 0) return false;
  }
  return true;
}

}  // namespace cleave
