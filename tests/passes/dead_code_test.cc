// Dead-code elimination: what no graph output needs goes, what something needs stays.
#include "passes/dead_code.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string eliminate(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

TEST(DeadCode, RemovesADanglingBranch) {
  PassResult result;
  EXPECT_EQ(eliminate(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Neg(%x)
  %c = Exp(%b)
  return %a
})",
                      &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  return %a
}
)");
  EXPECT_EQ(result.count("nodes removed"), 2);
  EXPECT_EQ(result.summary(), "dead-code elimination: 2 nodes removed");
}

TEST(DeadCode, RemovesInitializersThatNothingReads) {
  PassResult result;
  EXPECT_EQ(eliminate(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @used: f32[2] = [1.0, 2.0]
  @unused: f32[1] = [3.0]
  @read_by_dead_node: f32[1] = [4.0]
  %a = Add(%x, @used)
  %b = Mul(%x, @read_by_dead_node)
  return %a
})",
                      &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @used: f32[2] = [1.0, 2.0]
  %a = Add(%x, @used)
  return %a
}
)");
  EXPECT_EQ(result.count("initializers removed"), 2);
}

TEST(DeadCode, KeepsInitializersThatAreGraphOutputsAndUnusedGraphInputs) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2], %unused: f32[3]) {
  @table: f32[2] = [1.0, 2.0]
  %a = Relu(%x)
  return %a, @table: f32[2]
}
)";
  PassResult result;
  EXPECT_EQ(eliminate(text, &result), text);
  EXPECT_FALSE(result.changed());
}

TEST(DeadCode, KeepsANodeWhenAnyOfItsOutputsIsNeeded) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[4]) {
  %a, %b = Split[axis=0](%x)
  return %b
}
)";
  EXPECT_EQ(eliminate(text), text);
}

TEST(DeadCode, KeepsValuesThatOnlyAControlFlowBodyReads) {
  const char* text = R"(graph main [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  @bias: f32[2] = [1.0, 2.0]
  %n = Neg(%x)
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %p = Add(%n, %bias)
    return %p
  }, then_branch=graph t [ai.onnx=17] () {
    %q = Identity(%n)
    return %q
  }](%c)
  return %y
}
)";
  // A body names outer values with %, initializers too: the reads are by name only.
  EXPECT_EQ(eliminate(text), text);
}

}  // namespace
}  // namespace cleave
