// Identity/Dropout/zero-Pad removal: readers move to the input, graph output names never change.
#include "passes/identity_removal.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string remove(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = remove_identities(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

TEST(IdentityRemoval, RewiresReadersToTheInput) {
  PassResult result;
  EXPECT_EQ(remove(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Identity(%x)
  %b = Relu(%a)
  %c = Neg(%a)
  %d = Add(%b, %c)
  return %d
})",
                   &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %b = Relu(%x)
  %c = Neg(%x)
  %d = Add(%b, %c)
  return %d
}
)");
  EXPECT_EQ(result.summary(), "Identity/Dropout removal: 1 Identity nodes removed");
}

TEST(IdentityRemoval, RemovesAPadOfZeros) {
  PassResult result;
  EXPECT_EQ(remove(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @pads: i64[8] = [0, 0, 0, 0, 0, 0, 0, 0]
  %p = Pad[mode="constant"](%x, @pads)
  %y = AveragePool[kernel_shape=[2,2]](%p)
  return %y
})",
                   &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @pads: i64[8] = [0, 0, 0, 0, 0, 0, 0, 0]
  %y = AveragePool[kernel_shape=[2,2]](%x)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Identity/Dropout removal: 1 zero Pad nodes removed");
}

TEST(IdentityRemoval, KeepsAPadThatPads) {
  const char* text = R"(graph main [ai.onnx=10] (%x: f32[1,1,2,2]) {
  %p = Pad[pads=[0,0,1,0,0,0,0,0]](%x)
  %y = Relu(%p)
  return %y
}
)";
  EXPECT_EQ(remove(text), text);
}

TEST(IdentityRemoval, KeepsAGraphOutputNameByLettingTheProducerWriteIt) {
  EXPECT_EQ(remove(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Neg(%a)
  %y = Identity(%a)
  return %y, %b
})"),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %y = "a" Relu(%x)
  %b = Neg(%y)
  return %y, %b
}
)");
}

TEST(IdentityRemoval, KeepsAnIdentityBetweenAGraphInputAndAGraphOutput) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %y = Identity(%x)
  return %y
}
)";
  PassResult result;
  EXPECT_EQ(remove(text, &result), text);
  EXPECT_EQ(result.count("kept for graph output names"), 1);
}

TEST(IdentityRemoval, KeepsAnIdentityBetweenTwoGraphOutputs) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %y = Identity(%a)
  return %a, %y
}
)";
  EXPECT_EQ(remove(text), text);
}

TEST(IdentityRemoval, RemovesAChainOfIdentities) {
  EXPECT_EQ(remove(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Identity(%a)
  %y = Identity(%b)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %y = "a" Relu(%x)
  return %y
}
)");
}

TEST(IdentityRemoval, RemovesInferenceDropoutWithAnUnusedMask) {
  PassResult result;
  EXPECT_EQ(remove(R"(graph main [ai.onnx=13] (%x: f32[2]) {
  @ratio: f32[] = [0.5]
  @training: bool[] = [0]
  %d, %mask = Dropout(%x, @ratio, @training)
  %y = Relu(%d)
  return %y
})",
                   &result),
            R"(graph main [ai.onnx=13] (%x: f32[2]) {
  @ratio: f32[] = [0.5]
  @training: bool[] = [0]
  %y = Relu(%x)
  return %y
}
)");
  EXPECT_EQ(result.count("Dropout nodes removed"), 1);
}

TEST(IdentityRemoval, KeepsDropoutWhoseTrainingModeIsNotKnownFalse) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[2], %training: bool[]) {
  %d = Dropout(%x, _, %training)
  %y = Relu(%d)
  return %y
}
)";
  EXPECT_EQ(remove(text), text);
}

TEST(IdentityRemoval, RemovesATrainingModeDropoutOfRatioZero) {
  PassResult result;
  EXPECT_EQ(remove(R"(graph main [ai.onnx=13] (%x: f32[2]) {
  @ratio: f32[] = [0]
  @training: bool[] = [1]
  %d = Dropout(%x, @ratio, @training)
  %y = Relu(%d)
  return %y
})",
                   &result),
            R"(graph main [ai.onnx=13] (%x: f32[2]) {
  @ratio: f32[] = [0.0]
  @training: bool[] = [1]
  %y = Relu(%x)
  return %y
}
)");
  EXPECT_EQ(result.count("Dropout nodes removed"), 1);
}

TEST(IdentityRemoval, KeepsATrainingModeDropoutOfAnotherRatio) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[2]) {
  @ratio: f32[] = [0.1]
  @training: bool[] = [1]
  %d = Dropout(%x, @ratio, @training)
  %y = Relu(%d)
  return %y
}
)";
  EXPECT_EQ(remove(text), text);
}

TEST(IdentityRemoval, KeepsDropoutWhoseMaskIsRead) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[2]) {
  %d, %mask = Dropout(%x)
  %y = Relu(%d)
  return %y, %mask
}
)";
  EXPECT_EQ(remove(text), text);
}

TEST(IdentityRemoval, KeepsAnIdentityWhoseOutputABodyReadsByName) {
  const char* text = R"(graph main [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %a = Identity(%x)
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %p = Neg(%a)
    return %p
  }, then_branch=graph t [ai.onnx=17] () {
    %q = Relu(%a)
    return %q
  }](%c)
  return %y
}
)";
  EXPECT_EQ(remove(text), text);
}

}  // namespace
}  // namespace cleave
