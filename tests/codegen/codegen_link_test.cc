// Generated C++ programs link cleave's code-generation runtime only: no CBC, ONNX or protobuf.
#include <gtest/gtest.h>

#include <string>

#include "codegen_fixture.h"

namespace cleave {
namespace {

class CodegenLink : public CodegenFixture {
 protected:
  void SetUp() override {
    CodegenFixture::SetUp();
    write_model(kTwoBranchModel, path("m.onnx"));
    ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
              0);
  }

  /// Generates gen/ with `options`, configures it (no build) and returns the libraries the
  /// executable model_run links, as CMake wrote them into gen/build/build.ninja.
  std::string model_run_libraries(const std::string& options) const {
    CommandOutput generated = cleave(
        "codegen m.onnx --plan plan.json --lang cpp --layouts blocked " + options + " -o gen");
    EXPECT_EQ(generated.exit_code, 0) << generated.text;
    CommandOutput configured = shell("cmake -S gen -B gen/build -G Ninja");
    EXPECT_EQ(configured.exit_code, 0) << configured.text;
    const std::string ninja = read_text_file(path("gen/build/build.ninja"));
    const std::size_t rule = ninja.find("\nbuild model_run:");
    const std::size_t libraries = ninja.find("LINK_LIBRARIES = ", rule);
    if (rule == std::string::npos || libraries == std::string::npos) return "";
    return ninja.substr(libraries, ninja.find('\n', libraries) - libraries);
  }
};

bool mentions(const std::string& text, const std::string& name) {
  return text.find(name) != std::string::npos;
}

TEST_F(CodegenLink, AThreadProgramLinksTheCodegenRuntimeWithoutPlannersOnnxOrMpi) {
  const std::string libraries = model_run_libraries("");
  EXPECT_TRUE(mentions(libraries, "libcleave_codegen_runtime.a")) << libraries;
  EXPECT_TRUE(mentions(libraries, "libcleave_runtime.a")) << libraries;
  for (const char* unused :
       {"Cbc", "Clp", "onnx", "protobuf", "libcleave_plan.a", "libcleave_distributed.a", "mpi"})
    EXPECT_FALSE(mentions(libraries, unused)) << unused << " in " << libraries;
}

TEST_F(CodegenLink, ARankProgramAddsOnlyTheDistributedMessagesAndMpi) {
  const std::string libraries = model_run_libraries("--ranks");
  EXPECT_TRUE(mentions(libraries, "libcleave_codegen_runtime.a")) << libraries;
  EXPECT_TRUE(mentions(libraries, "libcleave_distributed.a")) << libraries;
  EXPECT_TRUE(mentions(libraries, "mpi")) << libraries;
  for (const char* unused :
       {"Cbc", "Clp", "onnx", "protobuf", "libcleave_plan.a", "libcleave_frontend.a"})
    EXPECT_FALSE(mentions(libraries, unused)) << unused << " in " << libraries;
}

}  // namespace
}  // namespace cleave
