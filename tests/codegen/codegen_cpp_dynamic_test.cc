// `cleave codegen --lang cpp --ranks` of what a rank program cannot hold yet (sub-graphs, shapes
// known only at run time): refused before anything is written, naming the node.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CodegenCppDynamic : public CodegenFixture {};

TEST_F(CodegenCppDynamic, AValueShapedAtRunTimeNamesItsNodeAndWritesNothing) {
  write_model(R"(graph main [ai.onnx=13] (%x: f32[2,6]) {
  %i = "where_nonzero" NonZero(%x)
  %y = Cast[to=1](%i)
  return %y
})",
              path("nz.onnx"));
  ASSERT_EQ(cleave("run nz.onnx").exit_code, 0);
  CommandOutput result = cleave("codegen nz.onnx --lang cpp --ranks --plan auto -o gen");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("'where_nonzero' (NonZero)"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("only at run time"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("gen")));
}

TEST_F(CodegenCppDynamic, ASubGraphNamesItsNodeAndWritesNothing) {
  write_model(R"(graph main [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y = "choose" If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Relu(%x)
    return %p
  }](%c)
  return %y
})",
              path("if.onnx"));
  CommandOutput result = cleave("codegen if.onnx --lang cpp --ranks --plan auto -o gen");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("'choose' (If)"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("sub-graph"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("gen")));
}

}  // namespace
}  // namespace cleave
