// Plain-loop kernels of the pool, order and norm families: MaxUnpool, MaxPool's Indices and
// integer MaxPool, ReverseSequence, MeanVarianceNormalization, BatchNormalization training.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

TEST(MaxUnpool, ScattersToTheIndexedPositionsOfTheDefaultShape) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[1,1,2,2], %i: i64[1,1,2,2]) {
  %y = MaxUnpool[kernel_shape=[2,2], strides=[2,2]](%x, %i)
  return %y
})";
  Tensor y =
      run_graph(text, {{"x", floats({1, 1, 2, 2}, {1, 2, 3, 4})},
                       {"i", make_tensor(DataType::kInt64, {1, 1, 2, 2}, {1, 3, 9, 11})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 4, 4}));
  expect_values(y, {0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0});
}

TEST(MaxPool, IndicesAreRowMajorPositionsInTheWholeInput) {
  const char* text = R"(graph g [ai.onnx=12] (%x: f32[1,2,2,2]) {
  %y, %i = MaxPool[kernel_shape=[2,2]](%x)
  return %y, %i
})";
  std::vector<Tensor> out =
      run_graph(text, {{"x", floats({1, 2, 2, 2}, {1, 4, 3, 2, 5, 0, 7, 6})}});
  expect_values(out[0], {4, 7});
  EXPECT_EQ(out[1].dtype(), DataType::kInt64);
  expect_values(out[1], {1, 6});
}

TEST(MaxPool, ColumnMajorStorageOrderCountsDownTheColumns) {
  // The largest element, at row 1 and column 0, is position 2 row-major and 1 column-major.
  const char* text = R"(graph g [ai.onnx=12] (%x: f32[1,1,2,2]) {
  %y, %i = MaxPool[kernel_shape=[2,2], storage_order=1](%x)
  return %y, %i
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({1, 1, 2, 2}, {1, 2, 4, 3})}});
  expect_values(out[0], {4});
  expect_values(out[1], {1});
}

TEST(MaxPool, EightBitIntegers) {
  const char* text = R"(graph g [ai.onnx=12] (%x: u8[1,1,1,3]) {
  %y = MaxPool[kernel_shape=[1,2]](%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", make_tensor(DataType::kUInt8, {1, 1, 1, 3}, {3, 9, 1})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kUInt8);
  expect_values(y, {9, 9});
}

TEST(BatchNormalization, TrainingModeUsesTheBatchStatistics) {
  const char* text =
      R"(graph g [ai.onnx=15] (%x: f32[2,1,1,1], %s: f32[1], %b: f32[1], %m: f32[1], %v: f32[1]) {
  %y, %rm, %rv = BatchNormalization[training_mode=1, epsilon=0.0, momentum=0.5](%x, %s, %b, %m, %v)
  return %y, %rm, %rv
})";
  // Batch mean 2 and variance 1; running statistics halfway from (0, 3) toward them.
  std::vector<Tensor> out = run_graph(text, {{"x", floats({2, 1, 1, 1}, {1, 3})},
                                             {"s", floats({1}, {1})},
                                             {"b", floats({1}, {0})},
                                             {"m", floats({1}, {0})},
                                             {"v", floats({1}, {3})}});
  expect_values(out[0], {-1, 1}, 1e-6);
  expect_values(out[1], {1}, 1e-6);
  expect_values(out[2], {2}, 1e-6);
}

TEST(ReverseSequence, ReversesEachBatchEntryUpToItsLength) {
  const char* text = R"(graph g [ai.onnx=10] (%x: f32[4,2], %lens: i64[2]) {
  %y = ReverseSequence[time_axis=0, batch_axis=1](%x, %lens)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
                              {"lens", make_tensor(DataType::kInt64, {2}, {3, 1})}})[0];
  expect_values(y, {4, 1, 2, 3, 0, 5, 6, 7});
}

TEST(ReverseSequence, BatchMajorLayout) {
  const char* text = R"(graph g [ai.onnx=10] (%x: f32[2,3], %lens: i64[2]) {
  %y = ReverseSequence[time_axis=1, batch_axis=0](%x, %lens)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 3}, {0, 1, 2, 3, 4, 5})},
                              {"lens", make_tensor(DataType::kInt64, {2}, {2, 3})}})[0];
  expect_values(y, {1, 0, 2, 5, 4, 3});
}

TEST(MeanVarianceNormalization, NormalizesEachChannelOverBatchAndSpace) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,2,1,2]) {
  %y = MeanVarianceNormalization(%x)
  return %y
})";
  // Channel 0 holds 1, 3 (mean 2, deviation 1); channel 1 holds 5, 5 (deviation 0).
  Tensor y = run_graph(text, {{"x", floats({1, 2, 1, 2}, {1, 3, 5, 5})}})[0];
  expect_values(y, {-1, 1, 0, 0}, 1e-6);
}

}  // namespace
}  // namespace cleave
