// `cleave codegen --lang cpp` on an Einsum, whose output shape the model leaves unknown: the
// prepared run's shapes size the C API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(CodegenFixture, AnEinsumModelGeneratesCpp) {
  write_model(R"(graph main [ai.onnx=13] (%x: f32[2,3]) {
  @w: f32[3,4]
  %y = Einsum[equation="ij,jk->ik"](%x, @w)
  %out = Relu(%y)
  return %out
})",
              path("m.onnx"));
  const CommandOutput result = cleave("codegen m.onnx --lang cpp --layouts plain -o gen");
  EXPECT_EQ(result.exit_code, 0) << result.text;
  EXPECT_THAT(result.text, Not(HasSubstr("not fully known")));
  EXPECT_TRUE(std::filesystem::exists(path("gen/model_api.cc")));
}

}  // namespace
}  // namespace cleave
