// The one region copy (spatial/region.h) that slices a split's weights.
#include "spatial/region.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace cleave {
namespace {

// Floats of these sizes whose element at flat index i holds i.
std::vector<float> counting(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<float> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 0.0f);
  return values;
}

std::vector<float> copied(const std::vector<int64_t>& dims, const Box& box,
                          std::size_t prefix = 0) {
  const std::vector<float> in = counting(dims);
  std::vector<float> out(prefix + static_cast<std::size_t>(box_elements(box)), -1.0f);
  copy_box(reinterpret_cast<const std::byte*>(in.data()), dims, sizeof(float), box,
           reinterpret_cast<std::byte*>(out.data() + prefix));
  return out;
}

TEST(RegionCopy, GathersAnInnerBoxRowByRow) {
  EXPECT_EQ(copied({2, 3, 4}, {{1, 2}, {0, 3}, {1, 3}}),
            (std::vector<float>{13, 14, 17, 18, 21, 22}));
}

TEST(RegionCopy, WritesIntoABufferAfterAPrefix) {
  EXPECT_EQ(copied({4, 2}, {{1, 3}, {0, 2}}, 1), (std::vector<float>{-1, 2, 3, 4, 5}));
}

TEST(RegionCopy, CopiesAScalar) {
  EXPECT_EQ(copied({}, {}), (std::vector<float>{0}));
}

TEST(RegionCopy, EmptyBoxCopiesNothing) {
  EXPECT_EQ(copied({3, 2}, {{1, 1}, {0, 2}}, 2), (std::vector<float>{-1, -1}));
}

}  // namespace
}  // namespace cleave
