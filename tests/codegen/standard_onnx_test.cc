// Every ONNX file cleave writes for the demo model is standard ONNX, and the StreamIt round trip
// (model to StreamIt text, the text back to C++) works on it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class StandardOnnx : public CodegenFixture {
 protected:
  void SetUp() override {
    CodegenFixture::SetUp();
    fs::copy_file(fs::path(CLEAVE_SOURCE_DIR) / "models/inception_demo.onnx", path("m.onnx"));
  }

  // The .onnx files under `folder`, relative to the test's folder.
  std::vector<std::string> models_under(const std::string& folder) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(path(folder))) {
      if (entry.path().extension() == ".onnx") {
        found.push_back(fs::relative(entry.path(), folder_).string());
      }
    }
    return found;
  }
};

TEST_F(StandardOnnx, StreamitTextOfTheDemoModelConvertsBackToCpp) {
  CommandOutput text = cleave("codegen m.onnx --lang streamit -o st");
  ASSERT_EQ(text.exit_code, 0) << text.text;
  // The per-filter models come from the optimized graph, whose Conv nodes carry fused
  // activations: they must read back as standard ONNX.
  CommandOutput cpp = cleave("codegen m.onnx --lang cpp --stream st/stream.cc -o gen");
  ASSERT_EQ(cpp.exit_code, 0) << cpp.text;
  EXPECT_TRUE(fs::exists(path("gen/stream.cc")));
}

// A residual block as a Transformer's starts: the input's splitter sends it first to an identity
// branch that ends at the joiner, the model filters come after.
TEST_F(StandardOnnx, StreamitTextWhoseFirstBranchIsAnIdentityConvertsBackToCpp) {
  write_model(R"(graph main [ai.onnx=17] (%x: f32[1,4,8]) {
  @w: f32[8,8]
  %m = MatMul(%x, @w)
  %r = Relu(%m)
  %y = Add(%x, %r)
  return %y
})",
              path("residual.onnx"));
  ASSERT_EQ(cleave("codegen residual.onnx --lang streamit -o st").exit_code, 0);
  const std::string source = read_text_file(path("st/stream.cc"));
  const std::size_t split = source.find("duplicateSplitJoin");
  ASSERT_NE(split, std::string::npos) << source;
  EXPECT_LT(source.find("filter_pass()", split), source.find("filter_v", split)) << source;
  CommandOutput cpp = cleave("codegen residual.onnx --lang cpp --stream st/stream.cc -o gen");
  EXPECT_EQ(cpp.exit_code, 0) << cpp.text;
}

TEST_F(StandardOnnx, EveryWrittenModelPassesTheFullOnnxChecker) {
  if (shell("/usr/bin/python3 -c 'import onnx'").exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no onnx module (scripts/install-deps.sh installs "
                    "python3-onnx)";
  }
  ASSERT_EQ(cleave("codegen m.onnx --lang streamit -o st").exit_code, 0);
  CommandOutput split = cleave("split m.onnx --nodes 2 -o sp");
  ASSERT_EQ(split.exit_code, 0) << split.text;
  CommandOutput optimized = cleave("optimize m.onnx opt.onnx");
  ASSERT_EQ(optimized.exit_code, 0) << optimized.text;
  std::vector<std::string> models = models_under("st");
  const std::vector<std::string> split_models = models_under("sp");
  models.insert(models.end(), split_models.begin(), split_models.end());
  models.push_back("opt.onnx");
  ASSERT_GE(models.size(), 4u);
  std::string arguments;
  for (const std::string& model : models) arguments += " " + model;
  CommandOutput check = shell(
      "/usr/bin/python3 -c 'import onnx, sys\n"
      "for p in sys.argv[1:]:\n"
      "    try:\n"
      "        onnx.checker.check_model(onnx.load(p), full_check=True)\n"
      "    except Exception as e:\n"
      "        print(p, e); sys.exit(1)\n'" +
      arguments);
  EXPECT_EQ(check.exit_code, 0) << check.text;
}

}  // namespace
}  // namespace cleave
