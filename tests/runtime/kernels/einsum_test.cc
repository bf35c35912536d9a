// Einsum's kernel: contractions, implicit outputs, diagonals, ellipsis broadcasting, errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

std::string two_inputs(const std::string& equation, const std::string& a, const std::string& b) {
  return "graph g [ai.onnx=13] (%a: " + a + ", %b: " + b + ") {\n  %y = Einsum[equation=\"" +
         equation + "\"](%a, %b)\n  return %y\n}\n";
}

std::string one_input(const std::string& equation, const std::string& a) {
  return "graph g [ai.onnx=13] (%a: " + a + ") {\n  %y = Einsum[equation=\"" + equation +
         "\"](%a)\n  return %y\n}\n";
}

std::string error_of(const std::string& text, const std::map<std::string, Tensor>& inputs) {
  try {
    run_graph(text, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Einsum, MatrixProduct) {
  Tensor y = run_graph(
      two_inputs("ij,jk->ik", "f32[2,3]", "f32[3,2]"),
      {{"a", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", floats({3, 2}, {1, 2, 3, 4, 5, 6})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  expect_values(y, {22, 28, 49, 64});
}

TEST(Einsum, ImplicitOutputIsTheLettersUsedOnceInOrder) {
  // "ba" alone is a transpose: the output is "ab".
  Tensor y = run_graph(one_input("ba", "f32[2,3]"), {{"a", floats({2, 3}, {1, 2, 3, 4, 5, 6})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  expect_values(y, {1, 4, 2, 5, 3, 6});
}

TEST(Einsum, ARepeatedLabelIsADiagonal) {
  Tensor y = run_graph(one_input("ii->", "f32[2,2]"), {{"a", floats({2, 2}, {1, 2, 3, 4})}})[0];
  EXPECT_TRUE(y.shape().empty());
  expect_values(y, {5});
}

TEST(Einsum, EllipsisDimsBroadcast) {
  Tensor y = run_graph(two_inputs("...ij,...jk->...ik", "f32[1,2,2]", "f32[3,2,2]"),
                       {{"a", floats({1, 2, 2}, {1, 2, 3, 4})},
                        {"b", floats({3, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2, 2}));
  expect_values(y, {1, 2, 3, 4, 2, 4, 6, 8, 2, 1, 4, 3});
}

TEST(Einsum, PyTorchsSpacedUppercaseEquation) {
  Tensor y = run_graph(
      two_inputs("B I D, B J D -> B I J", "f32[1,2,2]", "f32[1,2,2]"),
      {{"a", floats({1, 2, 2}, {1, 2, 3, 4})}, {"b", floats({1, 2, 2}, {1, 0, 1, 1})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 2}));
  expect_values(y, {1, 3, 3, 7});
}

TEST(Einsum, IntegersSumExactly) {
  Tensor y = run_graph(one_input("ij->i", "i64[2,3]"),
                       {{"a", make_tensor(DataType::kInt64, {2, 3}, {1, 2, 3, 4, 5, 6})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kInt64);
  expect_values(y, {6, 15});
}

TEST(Einsum, TermsMustMatchTheInputs) {
  EXPECT_NE(error_of(one_input("ij,jk->ik", "f32[2,2]"), {{"a", floats({2, 2}, {1, 2, 3, 4})}})
                .find("2 input term(s) for 1 input(s)"),
            std::string::npos);
}

TEST(Einsum, ALabelKeepsOneSize) {
  EXPECT_NE(error_of(two_inputs("ij,jk->ik", "f32[2,3]", "f32[4,2]"),
                     {{"a", floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                      {"b", floats({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}})
                .find("label 'j' is 4 in input 1 but 3 before"),
            std::string::npos);
}

TEST(Einsum, RefusesCharactersThatAreNoLabels) {
  EXPECT_NE(error_of(one_input("i1->i", "f32[2,2]"), {{"a", floats({2, 2}, {1, 2, 3, 4})}})
                .find("has '1', expected letters and '...'"),
            std::string::npos);
}

TEST(Einsum, RefusesAnOutputLabelNoInputHas) {
  EXPECT_NE(error_of(one_input("ij->k", "f32[2,2]"), {{"a", floats({2, 2}, {1, 2, 3, 4})}})
                .find("names a label no input has"),
            std::string::npos);
}

TEST(Einsum, RefusesATermOfTheWrongRank) {
  EXPECT_NE(error_of(one_input("ijk->i", "f32[2,2]"), {{"a", floats({2, 2}, {1, 2, 3, 4})}})
                .find("input 0 has rank 2, its equation term names 3 axes"),
            std::string::npos);
}

TEST(Einsum, RefusesMoreCombinationsThanItCanCount) {
  const std::string text =
      R"(graph g [ai.onnx=13] (%a: f32[65536], %b: f32[65536], %c: f32[65536], %d: f32[65536]) {
  %y = Einsum[equation="a,b,c,d->"](%a, %b, %c, %d)
  return %y
})";
  const Tensor ones = floats({65536}, std::vector<double>(65536, 1.0));
  EXPECT_NE(error_of(text, {{"a", ones}, {"b", ones}, {"c", ones}, {"d", ones}})
                .find("more label combinations than int64 counts"),
            std::string::npos);
}

}  // namespace
}  // namespace cleave
