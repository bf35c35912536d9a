// TfIdfVectorizer: n-gram counts with and without skips, and the IDF weighting.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::make_tensor;
using kernel_test::run_graph;

// Pool: the unigram 3 (output 0) and the bigram (1, 3) (output 1).
Tensor vectorize(const std::string& attributes) {
  std::string text =
      "graph g [ai.onnx=9] (%x: i64[1,6]) {\n  %y = TfIdfVectorizer[min_gram_length=1, "
      "max_gram_length=2, ngram_counts=[0,1], ngram_indexes=[0,1], pool_int64s=[3,1,3]" +
      attributes + "](%x)\n  return %y\n}\n";
  return run_graph(text, {{"x", make_tensor(DataType::kInt64, {1, 6}, {1, 1, 3, 3, 3, 7})}})[0];
}

TEST(TfIdfVectorizer, CountsUnigramsAndAdjacentBigrams) {
  Tensor y = vectorize(", mode=\"TF\", max_skip_count=0");
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2}));
  expect_values(y, {3, 1});
}

TEST(TfIdfVectorizer, SkipsFindBigramsWithGapsButCountUnigramsOnce) {
  // With one skip, (1, 3) also appears at positions (0, 2) and (1, 3).
  expect_values(vectorize(", mode=\"TF\", max_skip_count=1"), {3, 3});
}

TEST(TfIdfVectorizer, IdfGivesTheWeightOfEachPresentNgram) {
  expect_values(vectorize(", mode=\"IDF\", max_skip_count=0, weights=[2.0,5.0]"), {2, 5});
}

}  // namespace
}  // namespace cleave
