// `cleave codegen --stream ... --lang cpp` of a program whose model filter holds a node shaped at
// run time: refused before anything is written, naming the filter, the node and why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CodegenStreamDynamic : public CodegenFixture {};

TEST_F(CodegenStreamDynamic, AFilterWithANodeShapedAtRunTimeIsNamedAndNothingIsWritten) {
  // The filter's output is static ([2, 1]: the sum over the non-zero entries' positions); the
  // value before it is not.
  write_model(R"(graph main [ai.onnx=13] (%x: f32[1,6]) {
  @axis: i64[1] = [1]
  %i = "where_nonzero" NonZero(%x)
  %f = Cast[to=1](%i)
  %y = ReduceSum[keepdims=1](%f, @axis)
  return %y
})",
              path("nz.onnx"));
  std::ofstream(path("prog.json")) << R"({"pipeline": {"name": "top", "streams": [
      {"filter": {"name": "net", "pop": 1, "push": 1, "model": "nz.onnx"}}]}})";
  CommandOutput result = cleave("codegen nz.onnx --stream prog.json --lang cpp -o st");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("filter \"net\""), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("'where_nonzero' (NonZero)"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("only at run time"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("st")));
}

TEST_F(CodegenStreamDynamic, AFilterRunningASubGraphIsNamedAndNothingIsWritten) {
  write_model(R"(graph main [ai.onnx=17] (%x: f32[1,2]) {
  %s = ReduceSum[keepdims=0](%x)
  %c = Greater(%s, %s)
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
  std::ofstream(path("prog.json")) << R"({"pipeline": {"name": "top", "streams": [
      {"filter": {"name": "branchy", "pop": 1, "push": 1, "model": "if.onnx"}}]}})";
  CommandOutput result = cleave("codegen if.onnx --stream prog.json --lang cpp -o st");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("filter \"branchy\""), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("'choose' (If)"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("sub-graph"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("st")));
}

}  // namespace
}  // namespace cleave
