// Source kernels of issue 44: EyeLike and the Hann, Hamming and Blackman windows.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

Tensor window(const std::string& op, const std::string& attributes, int64_t size) {
  std::string text =
      "graph g [ai.onnx=17] (%n: i64[]) {\n  %y = " + op + attributes + "(%n)\n  return %y\n}\n";
  return run_graph(text,
                   {{"n", make_tensor(DataType::kInt64, {}, {static_cast<double>(size)})}})[0];
}

TEST(Windows, PeriodicHannOfFour) {
  Tensor y = window("HannWindow", "", 4);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(y.dtype(), DataType::kFloat);
  expect_values(y, {0, 0.5, 1, 0.5}, 1e-6);
}

TEST(Windows, SymmetricHannEndsOnZeroAtBothSides) {
  expect_values(window("HannWindow", "[periodic=0]", 3), {0, 1, 0}, 1e-6);
}

TEST(Windows, HammingUsesTwentyFiveFortySixths) {
  expect_values(window("HammingWindow", "", 2), {4.0 / 46, 1}, 1e-6);
}

TEST(Windows, BlackmanAddsTheSecondCosine) {
  expect_values(window("BlackmanWindow", "", 4), {0, 0.34, 1, 0.34}, 1e-6);
}

TEST(Windows, OutputDatatypeChoosesTheElementType) {
  Tensor y = window("HannWindow", "[output_datatype=11]", 4);
  EXPECT_EQ(y.dtype(), DataType::kDouble);
  expect_values(y, {0, 0.5, 1, 0.5}, 1e-12);
}

TEST(EyeLike, OnesOnTheDiagonalShiftedByK) {
  const char* text = R"(graph g [ai.onnx=9] (%x: f32[2,3]) {
  %y = EyeLike[k=1](%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 3}, {9, 9, 9, 9, 9, 9})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kFloat);
  expect_values(y, {0, 1, 0, 0, 0, 1});
}

TEST(EyeLike, DtypeAttributeSetsTheOutputType) {
  const char* text = R"(graph g [ai.onnx=9] (%x: f32[2,2]) {
  %y = EyeLike[dtype=7](%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 2}, {0, 0, 0, 0})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kInt64);
  expect_values(y, {1, 0, 0, 1});
}

}  // namespace
}  // namespace cleave
