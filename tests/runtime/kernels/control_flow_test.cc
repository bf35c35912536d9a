// If, Loop and Scan: bodies run as sub-graphs on a nested executor, outputs shaped at run time.
#include <gtest/gtest.h>

#include "ir/scope.h"
#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

constexpr const char* kIf = R"(graph g [ai.onnx=17] (%c: bool[]) {
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %n = Constant[value=tensor<f32[3]>[1.0, 2.0, 3.0]]()
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Constant[value=tensor<f32[2]>[5.0, 6.0]]()
    return %p
  }](%c)
  return %y
})";

TEST(If, RunsTheBranchTheConditionNamesEachRun) {
  Executor executor(parse_graph(kIf));
  Tensor then = executor.run({{"c", make_tensor(DataType::kBool, {}, {1})}})[0];
  expect_values(then, {5, 6});
  Tensor otherwise = executor.run({{"c", make_tensor(DataType::kBool, {}, {0})}})[0];
  expect_values(otherwise, {1, 2, 3});
}

TEST(If, ABodyReadingAnOuterValueIsRefusedNamingIt) {
  const char* text = R"(graph g [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Identity(%x)
    return %p
  }](%c)
  return %y
})";
  try {
    run_graph(text, {{"c", make_tensor(DataType::kBool, {}, {1})}, {"x", floats({2}, {1, 2})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads 'x'"), std::string::npos) << e.what();
  }
}

TEST(If, ReadsOuterValuesMadeExplicitInputs) {
  const char* text = R"(graph g [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Identity(%x)
    return %p
  }](%c)
  return %y
})";
  Graph graph = parse_graph(text);
  make_captures_explicit(graph);
  Executor executor(graph);
  const Tensor x = floats({2}, {1, -2});
  expect_values(executor.run({{"c", make_tensor(DataType::kBool, {}, {0})}, {"x", x}})[0], {-1, 2});
  expect_values(executor.run({{"c", make_tensor(DataType::kBool, {}, {1})}, {"x", x}})[0], {1, -2});
}

TEST(Loop, ABodyNestedInABodyReadsTheOutermostValue) {
  // The If inside the loop body reads %step from two graphs out.
  const char* text = R"(graph g [ai.onnx=13] (%m: i64[], %y: f32[1], %step: f32[1]) {
  %c = Constant[value=tensor<bool[]>[1]]()
  %out = Loop[body=graph b [ai.onnx=13] (%i: i64[], %cond: bool[], %v: f32[1]) {
    %t = Constant[value=tensor<bool[]>[1]]()
    %w = If[else_branch=graph e [ai.onnx=13] () {
      %z = Identity(%v)
      return %z
    }, then_branch=graph t [ai.onnx=13] () {
      %a = Add(%v, %step)
      return %a
    }](%t)
    %same = Identity(%cond)
    return %same, %w
  }](%m, %c, %y)
  return %out
})";
  Graph graph = parse_graph(text);
  make_captures_explicit(graph);
  Executor executor(graph);
  Tensor out = executor.run({{"m", make_tensor(DataType::kInt64, {}, {3})},
                             {"y", floats({1}, {1})},
                             {"step", floats({1}, {0.5})}})[0];
  expect_values(out, {2.5});
}

TEST(Loop, CarriesValuesAndStacksScanOutputsOverTheTripCount) {
  const char* text = R"(graph g [ai.onnx=13] (%m: i64[], %y: f32[1]) {
  %c = Constant[value=tensor<bool[]>[1]]()
  %out, %scan = Loop[body=graph b [ai.onnx=13] (%i: i64[], %cond: bool[], %v: f32[1]) {
    %f = Cast[to=1](%i)
    %w = Add(%v, %f)
    %same = Identity(%cond)
    %copy = Identity(%w)
    return %same, %w, %copy
  }](%m, %c, %y)
  return %out, %scan
})";
  Executor executor(parse_graph(text));
  std::vector<Tensor> out =
      executor.run({{"m", make_tensor(DataType::kInt64, {}, {4})}, {"y", floats({1}, {10})}});
  expect_values(out[0], {16});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{4, 1}));
  expect_values(out[1], {10, 11, 13, 16});
  std::vector<Tensor> fewer =
      executor.run({{"m", make_tensor(DataType::kInt64, {}, {2})}, {"y", floats({1}, {0})}});
  EXPECT_EQ(fewer[1].shape(), (std::vector<int64_t>{2, 1}));
}

TEST(Scan, RunningSumAlongTheFirstAxis) {
  const char* text = R"(graph g [ai.onnx=11] (%s: f32[2], %x: f32[3,2]) {
  %y, %z = Scan[body=graph b [ai.onnx=11] (%acc: f32[2], %row: f32[2]) {
    %next = Add(%acc, %row)
    %copy = Identity(%next)
    return %next, %copy
  }, num_scan_inputs=1](%s, %x)
  return %y, %z
})";
  std::vector<Tensor> out =
      run_graph(text, {{"s", floats({2}, {0, 0})}, {"x", floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
  expect_values(out[0], {9, 12});
  expect_values(out[1], {1, 2, 4, 6, 9, 12});
}

TEST(Scan, ReversedInputRunsFromTheEnd) {
  const char* text = R"(graph g [ai.onnx=11] (%s: f32[1], %x: f32[3,1]) {
  %y, %z = Scan[body=graph b [ai.onnx=11] (%acc: f32[1], %row: f32[1]) {
    %next = Add(%acc, %row)
    %copy = Identity(%next)
    return %next, %copy
  }, num_scan_inputs=1, scan_input_directions=[1]](%s, %x)
  return %y, %z
})";
  std::vector<Tensor> out =
      run_graph(text, {{"s", floats({1}, {0})}, {"x", floats({3, 1}, {1, 2, 3})}});
  expect_values(out[1], {3, 5, 6});
}

TEST(Scan, OpsetEightScansEachBatchEntry) {
  const char* text = R"(graph g [ai.onnx=8] (%s: f32[2,1], %x: f32[2,3,1]) {
  %y, %z = Scan[body=graph b [ai.onnx=8] (%acc: f32[1], %row: f32[1]) {
    %next = Add(%acc, %row)
    %copy = Identity(%next)
    return %next, %copy
  }, num_scan_inputs=1](_, %s, %x)
  return %y, %z
})";
  std::vector<Tensor> out = run_graph(
      text, {{"s", floats({2, 1}, {0, 10})}, {"x", floats({2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_values(out[0], {6, 25});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 3, 1}));
  expect_values(out[1], {1, 3, 6, 14, 19, 25});
}

}  // namespace
}  // namespace cleave
