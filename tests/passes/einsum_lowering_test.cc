// Einsum lowering: two-operand contractions become Transposes around a MatMul.
#include "passes/einsum_lowering.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ir/text.h"
#include "ir/verify.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

std::string lower(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = lower_einsums(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

std::string einsum_graph(const std::string& equation, const std::string& a, const std::string& b,
                         const std::string& y = "") {
  return "graph g [ai.onnx=13] (%a: " + a + ", %b: " + b + ") {\n  %y" + y +
         " = Einsum[equation=\"" + equation + "\"](%a, %b)\n  return %y\n}\n";
}

TEST(EinsumLowering, AttentionScoresTransposeTheKeys) {
  PassResult result;
  EXPECT_EQ(
      lower(einsum_graph("B G H I D, B G H J D -> B G H I J", "f32[1,2,3,4,8]", "f32[1,2,3,5,8]"),
            &result),
      R"(graph g [ai.onnx=13] (%a: f32[1,2,3,4,8], %b: f32[1,2,3,5,8]) {
  %y_rhs: f32[1,2,3,8,5] = Transpose[perm=[0,1,2,4,3]](%b)
  %y = MatMul(%a, %y_rhs)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Einsum lowering: 1 Einsums lowered to MatMul");
}

TEST(EinsumLowering, AttentionTimesValuesIsAMatMulAlone) {
  EXPECT_EQ(lower(einsum_graph("bghij,bghjd->bghid", "f32[1,2,3,4,5]", "f32[1,2,3,5,8]")),
            R"(graph g [ai.onnx=13] (%a: f32[1,2,3,4,5], %b: f32[1,2,3,5,8]) {
  %y = MatMul(%a, %b)
  return %y
}
)");
}

TEST(EinsumLowering, AnOutputInAnotherOrderGetsAFinalTranspose) {
  EXPECT_EQ(lower(einsum_graph("ik,kj->ji", "f32[2,3]", "f32[3,4]")),
            R"(graph g [ai.onnx=13] (%a: f32[2,3], %b: f32[3,4]) {
  %y_product: f32 = MatMul(%a, %b)
  %y = Transpose[perm=[1,0]](%y_product)
  return %y
}
)");
}

TEST(EinsumLowering, KeepsWhatIsNoMatrixProduct) {
  for (const char* equation :
       {"ii,ij->j", "...ij,...jk->...ik", "ij,ij->ij", "ijk,k->ij", "ij,kl->ijkl", "ij,jk->k"}) {
    PassResult result;
    lower(einsum_graph(equation, "f32[2,2]", "f32[2,2]"), &result);
    EXPECT_FALSE(result.changed()) << equation;
  }
}

TEST(EinsumLowering, KeepsIntegerEinsums) {
  PassResult result;
  lower(einsum_graph("ij,jk->ik", "i64[2,2]", "i64[2,2]"), &result);
  EXPECT_FALSE(result.changed());
}

// The lowered graph computes what Einsum's own kernel does, for a batch in the middle.
TEST(EinsumLowering, LoweredGraphComputesTheEinsum) {
  const std::string text = einsum_graph("ibk,bkj->bji", "f32[3,2,4]", "f32[2,4,5]");
  Graph original = parse_graph(text);
  Graph lowered = parse_graph(text);
  ASSERT_EQ(lower_einsums(lowered).count("Einsums lowered to MatMul"), 1);
  verify_graph(lowered);
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor a = Tensor::allocate(DataType::kFloat, {3, 2, 4});
  Tensor b = Tensor::allocate(DataType::kFloat, {2, 4, 5});
  for (Tensor* t : {&a, &b}) {
    for (int64_t i = 0; i < t->element_count(); ++i) t->data<float>()[i] = uniform(random);
  }
  std::vector<Tensor> expected = Executor(original).run({{"a", a}, {"b", b}});
  std::vector<Tensor> actual = Executor(lowered).run({{"a", a}, {"b", b}});
  ASSERT_EQ(expected[0].shape(), (std::vector<int64_t>{2, 5, 3}));
  ASSERT_EQ(actual[0].shape(), expected[0].shape());
  auto want = expected[0].values<float>();
  auto got = actual[0].values<float>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

}  // namespace
}  // namespace cleave
