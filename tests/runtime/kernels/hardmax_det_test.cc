// Math kernels of issue 44: Hardmax (both axis semantics) and Det.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::run_graph;

TEST(Hardmax, OneAtTheFirstLargestAlongTheLastAxis) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[2,3]) {
  %y = Hardmax(%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 3}, {1, 3, 2, 5, 5, 0})}})[0];
  expect_values(y, {0, 1, 0, 1, 0, 0});
}

TEST(Hardmax, BeforeOpset13TheInputIsViewedAsTwoDimensional) {
  // axis=0 makes one row of all four elements: a single 1 at the largest.
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[2,2]) {
  %y = Hardmax[axis=0](%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 2}, {1, 2, 4, 3})}})[0];
  expect_values(y, {0, 0, 1, 0});
}

Tensor det(const std::string& type, const Tensor& x) {
  return run_graph("graph g [ai.onnx=11] (%x: " + type + ") {\n  %y = Det(%x)\n  return %y\n}\n",
                   {{"x", x}})[0];
}

TEST(Det, TwoByTwo) {
  Tensor y = det("f32[2,2]", floats({2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(y.shape().empty());
  expect_values(y, {-2}, 1e-6);
}

TEST(Det, BatchedMatricesNeedingAPivot) {
  // The second matrix has a zero in the first pivot position: a row swap flips the sign.
  Tensor y = det("f32[2,3,3]", floats({2, 3, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4,  //
                                                  0, 1, 0, 1, 0, 0, 0, 0, 5}));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2}));
  expect_values(y, {24, -5}, 1e-6);
}

TEST(Det, SingularMatrixIsZero) {
  expect_values(det("f32[2,2]", floats({2, 2}, {1, 2, 2, 4})), {0}, 1e-6);
}

}  // namespace
}  // namespace cleave
