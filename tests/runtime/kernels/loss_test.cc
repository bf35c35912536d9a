// The loss kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

// Log-probabilities of two samples over three classes, and their targets (class 2, class 0).
const Tensor kLogProb = floats({2, 3}, {-1, -2, -3, -0.5, -1.5, -2.5});
const Tensor kTarget = make_tensor(DataType::kInt64, {2}, {2, 0});
const Tensor kWeight = floats({3}, {0.2, 0.3, 0.5});

std::string nll(const std::string& attributes, bool weighted) {
  return "graph g [ai.onnx=13] (%x: f32[2,3], %t: i64[2]" +
         std::string(weighted ? ", %w: f32[3]" : "") + ") {\n  %y = NegativeLogLikelihoodLoss" +
         attributes + "(%x, %t" + (weighted ? ", %w" : "") + ")\n  return %y\n}\n";
}

TEST(NegativeLogLikelihoodLoss, NoneReductionIsTheNegatedPickedLogProbability) {
  Tensor y = run_graph(nll("[reduction=\"none\"]", false), {{"x", kLogProb}, {"t", kTarget}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2}));
  expect_values(y, {3, 0.5}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, SumAddsTheLosses) {
  Tensor y = run_graph(nll("[reduction=\"sum\"]", false), {{"x", kLogProb}, {"t", kTarget}})[0];
  EXPECT_TRUE(y.shape().empty());
  expect_values(y, {3.5}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, WeightedMeanDividesByThePickedWeights) {
  // (3·0.5 + 0.5·0.2) / (0.5 + 0.2)
  Tensor y = run_graph(nll("", true), {{"x", kLogProb}, {"t", kTarget}, {"w", kWeight}})[0];
  expect_values(y, {1.6 / 0.7}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, AnIgnoredTargetWeighsNothing) {
  // Sample 1's class 0 is ignored: the mean is sample 0's weighted loss over its weight.
  Tensor y = run_graph(nll("[ignore_index=0]", true),
                       {{"x", kLogProb}, {"t", kTarget}, {"w", kWeight}})[0];
  expect_values(y, {3.0}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, ATargetOutsideTheClassesIsAnError) {
  try {
    run_graph(nll("", false), {{"x", kLogProb}, {"t", make_tensor(DataType::kInt64, {2}, {3, 0})}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target value 3 is out of range for 3 classes"),
              std::string::npos)
        << e.what();
  }
}

TEST(SoftmaxCrossEntropyLoss, LossAndLogProbabilityOfEqualScores) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,2], %t: i64[1]) {
  %y, %p = SoftmaxCrossEntropyLoss(%x, %t)
  return %y, %p
})";
  std::vector<Tensor> out = run_graph(
      text, {{"x", floats({1, 2}, {0, 0})}, {"t", make_tensor(DataType::kInt64, {1}, {1})}});
  expect_values(out[0], {std::log(2.0)}, 1e-6);
  expect_values(out[1], {-std::log(2.0), -std::log(2.0)}, 1e-6);
}

TEST(SoftmaxCrossEntropyLoss, ClassesAreAxisOneOfSpatialScores) {
  // [N=1, C=2, d=2]: position 0 scores (ln 3, 0) → p(class 0) = 3/4; position 1 (0, 0).
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,2,2], %t: i64[1,2]) {
  %y = SoftmaxCrossEntropyLoss[reduction="none"](%x, %t)
  return %y
})";
  Tensor y = run_graph(text, {{"x", floats({1, 2, 2}, {std::log(3.0), 0, 0, 0})},
                              {"t", make_tensor(DataType::kInt64, {1, 2}, {0, 1})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2}));
  expect_values(y, {-std::log(0.75), std::log(2.0)}, 1e-6);
}

}  // namespace
}  // namespace cleave
