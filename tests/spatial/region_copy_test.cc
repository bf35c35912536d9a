// The one region copy (spatial/region.h) that the in-process runner and the ranks' sends share.
#include "spatial/region.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "support/error.h"

namespace cleave {
namespace {

// A float tensor of these sizes whose element at flat index i holds i.
Tensor counting(const std::vector<int64_t>& shape) {
  Tensor tensor = Tensor::allocate(DataType::kFloat, shape);
  float* data = tensor.data<float>();
  std::iota(data, data + tensor.element_count(), 0.0f);
  return tensor;
}

std::string refusal(const Tensor& tensor, const Box& box) {
  try {
    copy_region(tensor, box, "machine 1 step 2");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(RegionCopy, GathersAnInnerBoxRowByRow) {
  const Tensor tensor = counting({2, 3, 4});
  const Tensor region = copy_region(tensor, {{1, 2}, {0, 3}, {1, 3}}, "test");
  EXPECT_EQ(region.shape(), (std::vector<int64_t>{1, 3, 2}));
  const std::vector<float> got(region.data<float>(), region.data<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{13, 14, 17, 18, 21, 22}));
}

TEST(RegionCopy, WritesIntoABufferAfterAPrefix) {
  const Tensor tensor = counting({4, 2});
  std::vector<float> buffer(5, -1.0f);
  copy_region(tensor, {{1, 3}, {0, 2}}, reinterpret_cast<std::byte*>(buffer.data() + 1), "test");
  EXPECT_EQ(buffer, (std::vector<float>{-1, 2, 3, 4, 5}));
}

TEST(RegionCopy, CopiesAScalar) {
  Tensor scalar = Tensor::allocate(DataType::kFloat, {});
  *scalar.data<float>() = 7.5f;
  const Tensor copy = copy_region(scalar, {}, "test");
  ASSERT_EQ(copy.element_count(), 1);
  EXPECT_EQ(*copy.data<float>(), 7.5f);
}

TEST(RegionCopy, EmptyBoxGivesAnEmptyTensor) {
  const Tensor copy = copy_region(counting({3, 2}), {{1, 1}, {0, 2}}, "test");
  EXPECT_EQ(copy.shape(), (std::vector<int64_t>{0, 2}));
}

TEST(RegionCopy, BoxOutsideTheTensorIsNamedWithTheStep) {
  EXPECT_EQ(refusal(counting({2, 3}), {{0, 2}, {1, 4}}),
            "machine 1 step 2: region [1, 4) of dimension 1 is outside f32[2,3]");
}

TEST(RegionCopy, BoxOfAnotherRankIsRefused) {
  EXPECT_EQ(refusal(counting({2, 3}), {{0, 2}}),
            "machine 1 step 2: region has 1 dimensions, the tensor f32[2,3]");
}

}  // namespace
}  // namespace cleave
