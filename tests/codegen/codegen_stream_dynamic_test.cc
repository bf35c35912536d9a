// `cleave codegen --stream ... --lang cpp` of a program whose model filter holds a node shaped at
// run time: refused before anything is written, naming the filter, the node and why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CodegenStreamDynamic : public CodegenFixture {
 protected:
  // Writes `text` as MODEL, a one-filter program FILTER running it, and generates its C++:
  // refused with a message holding each of `expected`, with no output folder written.
  void expect_refused(const std::string& text, const std::string& model, const std::string& filter,
                      const std::vector<std::string>& expected) {
    write_model(text, path(model));
    std::ofstream(path("prog.json"))
        << R"({"pipeline": {"name": "top", "streams": [
      {"filter": {"name": ")"
        << filter << R"(", "pop": 1, "push": 1, "model": ")" << model << R"("}}]}})";
    CommandOutput result = cleave("codegen " + model + " --stream prog.json --lang cpp -o st");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.text.find("filter \"" + filter + "\""), std::string::npos) << result.text;
    for (const std::string& part : expected)
      EXPECT_NE(result.text.find(part), std::string::npos) << part << " in " << result.text;
    EXPECT_FALSE(fs::exists(path("st")));
  }
};

TEST_F(CodegenStreamDynamic, AFilterWithANodeShapedAtRunTimeIsNamedAndNothingIsWritten) {
  // The filter's output is static ([2, 1]: the sum over the non-zero entries' positions); the
  // value before it is not.
  expect_refused(R"(graph main [ai.onnx=13] (%x: f32[1,6]) {
  @axis: i64[1] = [1]
  %i = "where_nonzero" NonZero(%x)
  %f = Cast[to=1](%i)
  %y = ReduceSum[keepdims=1](%f, @axis)
  return %y
})",
                 "nz.onnx", "net", {"'where_nonzero' (NonZero)", "only at run time"});
}

TEST_F(CodegenStreamDynamic, AFilterRunningASubGraphIsNamedAndNothingIsWritten) {
  expect_refused(R"(graph main [ai.onnx=17] (%x: f32[1,2]) {
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
                 "if.onnx", "branchy", {"'choose' (If)", "sub-graph"});
}

}  // namespace
}  // namespace cleave
