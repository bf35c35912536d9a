// Kernels whose output shapes are known only at run time (NonZero, Compress, Unique, NMS), and
// nodes prepared again when the values that fixed their shapes change between runs.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

TEST(NonZero, IndicesOfEachAxisInRowMajorOrder) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[2,2]) {
  %y = NonZero(%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 2}, {1, 0, 1, 1})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  expect_values(y, {0, 1, 1, 0, 0, 1});
}

TEST(NonZero, AllZeroGivesAnEmptyIndexList) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[3]) {
  %y = NonZero(%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({3}, {0, 0, -0.0})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 0}));
}

TEST(NonZero, AVectorGivesThePositionsOfNaNsAndNotOfNegativeZeros) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[7]) {
  %y = NonZero(%x)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({7}, {0, NAN, -0.0, 2, 0, 0, 5})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3}));
  expect_values(y, {1, 3, 6});
}

TEST(NonZero, BoolsOfRankThreeGiveEachAxisItsRow) {
  const char* text = R"(graph g [ai.onnx=13] (%x: bool[2,2,2]) {
  %y = NonZero(%x)
  return %y
})";
  Tensor x = make_tensor(DataType::kBool, {2, 2, 2}, {0, 1, 0, 0, 1, 0, 0, 1});
  Tensor y = run_graph(text, {{"x", x}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 3}));
  expect_values(y, {0, 1, 1, 0, 0, 1, 1, 0, 1});  // Flat positions 1, 4 and 7.
}

// The count is the output's shape, taken when the kernel is prepared: a kernel run on other
// values than those (which the executor never does) refuses rather than write past its output.
TEST(NonZero, AKernelRunOnOtherValuesThanItWasPreparedForRefuses) {
  const Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[4]) {
  %y = NonZero(%x)
  return %y
})");
  const NodeId node = graph.topological_order().at(0);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Tensor prepared = floats({4}, {1, 0, 0, 1});
  KernelContext context{graph, node, graph.node(node), 13, {&prepared}, {false}, engine};
  std::unique_ptr<Kernel> kernel =
      KernelRegistry::global().find("", "NonZero", 13)->create(context);
  ASSERT_EQ(kernel->output_specs().at(0).shape, (std::vector<int64_t>{1, 2}));
  Tensor output = Tensor::allocate(DataType::kInt64, {1, 2});
  const Tensor other = floats({4}, {1, 1, 1, 0});
  try {
    kernel->run({&other}, {&output}, stream);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NonZero"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("prepared"), std::string::npos) << e.what();
  }
}

TEST(NonZero, DownstreamNodesFollowTheCountOfEachRun) {
  // The count changes from run to run, so NonZero and the nodes after it are prepared again
  // and their buffers sized for each run.
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[6]) {
  %i = NonZero(%x)
  %t = Transpose[perm=[1,0]](%i)
  %f = Cast[to=1](%t)
  %s = ReduceSum[keepdims=0](%f)
  return %s, %t
})";
  Executor executor(parse_graph(text));
  std::vector<Tensor> first = executor.run({{"x", floats({6}, {1, 0, 2, 0, 3, 4})}});
  expect_values(first[0], {0 + 2 + 4 + 5});
  EXPECT_EQ(first[1].shape(), (std::vector<int64_t>{4, 1}));
  std::vector<Tensor> second = executor.run({{"x", floats({6}, {0, 0, 0, 0, 0, 7})}});
  expect_values(second[0], {5});
  EXPECT_EQ(second[1].shape(), (std::vector<int64_t>{1, 1}));
  std::vector<Tensor> third = executor.run({{"x", floats({6}, {1, 1, 1, 1, 1, 1})}});
  expect_values(third[0], {15});
}

TEST(RunTimeShapes, ReshapeToAComputedShapePreparesAgainWhenItChanges) {
  // The shape comes from the data: the first element of %n is the number of rows.
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[6], %n: i64[2]) {
  %y = Reshape(%x, %n)
  return %y
})";
  Executor executor(parse_graph(text));
  const Tensor x = floats({6}, {1, 2, 3, 4, 5, 6});
  Tensor a = executor.run({{"x", x}, {"n", make_tensor(DataType::kInt64, {2}, {2, 3})}})[0];
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  Tensor b = executor.run({{"x", x}, {"n", make_tensor(DataType::kInt64, {2}, {3, 2})}})[0];
  EXPECT_EQ(b.shape(), (std::vector<int64_t>{3, 2}));
  expect_values(b, {1, 2, 3, 4, 5, 6});
}

TEST(Compress, SelectsSlicesAlongTheAxis) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[3,2], %c: bool[3]) {
  %y = Compress[axis=0](%x, %c)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({3, 2}, {1, 2, 3, 4, 5, 6})},
                              {"c", make_tensor(DataType::kBool, {3}, {0, 1, 1})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  expect_values(y, {3, 4, 5, 6});
}

TEST(Compress, WithoutAxisSelectsFromTheFlattenedTensor) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[2,2], %c: bool[3]) {
  %y = Compress(%x, %c)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({2, 2}, {1, 2, 3, 4})},
                              {"c", make_tensor(DataType::kBool, {3}, {1, 0, 1})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2}));
  expect_values(y, {1, 3});
}

TEST(Compress, ALongerConditionThanTheAxisIsRefusedNamingTheNode) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[2], %c: bool[3]) {
  %y = Compress[axis=0](%x, %c)
  return %y
})";
  try {
    run_graph(text,
              {{"x", floats({2}, {1, 2})}, {"c", make_tensor(DataType::kBool, {3}, {1, 0, 1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("condition has 3 entries"), std::string::npos) << e.what();
  }
}

TEST(Unique, SortedValuesWithFirstIndicesInverseAndCounts) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[6]) {
  %y, %i, %v, %c = Unique(%x)
  return %y, %i, %v, %c
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({6}, {2, 1, 1, 3, 4, 3})}});
  expect_values(out[0], {1, 2, 3, 4});
  expect_values(out[1], {1, 0, 3, 4});
  expect_values(out[2], {1, 0, 0, 2, 3, 2});
  expect_values(out[3], {2, 1, 2, 1});
}

TEST(Unique, UnsortedKeepsTheOrderOfFirstOccurrence) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[6]) {
  %y, %i, %v, %c = Unique[sorted=0](%x)
  return %y, %i, %v, %c
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({6}, {2, 1, 1, 3, 4, 3})}});
  expect_values(out[0], {2, 1, 3, 4});
  expect_values(out[1], {0, 1, 3, 4});
  expect_values(out[2], {0, 1, 1, 2, 3, 2});
  expect_values(out[3], {1, 2, 2, 1});
}

TEST(Unique, AlongAnAxisComparesWholeSlices) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[3,2]) {
  %y, %i, %v, %c = Unique[axis=0](%x)
  return %y, %i, %v, %c
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({3, 2}, {1, 0, 0, 1, 1, 0})}});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  expect_values(out[0], {0, 1, 1, 0});
  expect_values(out[2], {1, 0, 1});
  expect_values(out[3], {1, 2});
}

// Two overlapping boxes and one apart, scores falling: the second is suppressed.
constexpr const char* kNms = R"(graph g [ai.onnx=11] (%b: f32[1,3,4], %s: f32[1,1,3]) {
  %m = Constant[value=tensor<i64[1]>[3]]()
  %iou = Constant[value=tensor<f32[1]>[0.5]]()
  %y = NonMaxSuppression(%b, %s, %m, %iou)
  return %y
})";

TEST(NonMaxSuppression, SuppressesOverlapsAboveTheThreshold) {
  Tensor y = run_graph(kNms, {{"b", floats({1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 5, 1, 6})},
                              {"s", floats({1, 1, 3}, {0.9, 0.8, 0.7})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  expect_values(y, {0, 0, 0, 0, 0, 2});
}

TEST(NonMaxSuppression, TheOutputLengthFollowsEachRunsBoxes) {
  Executor executor(parse_graph(kNms));
  const Tensor scores = floats({1, 1, 3}, {0.7, 0.8, 0.9});
  Tensor apart = executor.run(
      {{"b", floats({1, 3, 4}, {0, 0, 1, 1, 0, 2, 1, 3, 0, 5, 1, 6})}, {"s", scores}})[0];
  expect_values(apart, {0, 0, 2, 0, 0, 1, 0, 0, 0});
  Tensor same = executor.run(
      {{"b", floats({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1})}, {"s", scores}})[0];
  expect_values(same, {0, 0, 2});
}

}  // namespace
}  // namespace cleave
