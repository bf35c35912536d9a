// `cleave convert` and `cleave extract`: exit codes, messages, and no output file on failure.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/text.h"
#include "onnx/graph_compare.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class ModelCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_convert_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    model_ = path("model.onnx");
    export_onnx(parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @w: f32[2] = [1.0, 2.0]
  %a: f32[2] = "A" Relu(%x)
  %b: f32[2] = "B" Mul(%a, @w)
  %c: f32[2] = "C" Exp(%b)
  return %c
}
)"),
                model_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  CommandResult cleave(const std::string& arguments) const {
    std::string command = std::string(CLEAVE_BINARY) + " " + arguments + " >" + path("stdout") +
                          " 2>" + path("stderr");
    int status = std::system(command.c_str());
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_text(path("stdout"));
    result.err = read_text(path("stderr"));
    fs::remove(path("stdout"));
    fs::remove(path("stderr"));
    return result;
  }

  fs::path folder_;
  std::string model_;
};

TEST_F(ModelCommands, ConvertOfGarbageFailsNamingTheFileAndWritesNothing) {
  std::string garbage = path("garbage.onnx");
  std::ofstream(garbage) << "definitely not a protobuf \xff\xff\xff";
  CommandResult result = cleave("convert " + garbage + " " + path("out.onnx"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(garbage), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("out.onnx")));
}

TEST_F(ModelCommands, ConvertWritesAnEqualModel) {
  CommandResult result = cleave("convert --json " + model_ + " " + path("out.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["nodes"], 3);
  EXPECT_EQ(json["onnx_check"], "passed");
  std::string difference;
  EXPECT_TRUE(graphs_equal(import_onnx(model_), import_onnx(path("out.onnx")), &difference))
      << difference;
}

TEST_F(ModelCommands, ConvertTextPrintsTheTextForm) {
  CommandResult result = cleave("convert --text " + model_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("Mul(%a, @w)"), std::string::npos) << result.out;
}

TEST_F(ModelCommands, ExtractByNamesFindsTheBoundary) {
  CommandResult result =
      cleave("extract --json " + model_ + " " + path("part.onnx") + " --nodes B");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["inputs"], nlohmann::json::array({"a"}));
  EXPECT_EQ(json["outputs"], nlohmann::json::array({"b"}));
  EXPECT_EQ(json["initializers"], 1);
  EXPECT_EQ(import_onnx(path("part.onnx")).node_count(), 1u);
}

TEST_F(ModelCommands, ExtractByRangeTakesTheNodesBetween) {
  CommandResult result =
      cleave("extract --json " + model_ + " " + path("part.onnx") + " --node-range A:B");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["nodes"], 2);
  EXPECT_EQ(json["inputs"], nlohmann::json::array({"x"}));
  EXPECT_EQ(json["outputs"], nlohmann::json::array({"b"}));
}

TEST_F(ModelCommands, ExtractOfUnknownNodeFailsAndWritesNothing) {
  CommandResult result = cleave("extract " + model_ + " " + path("part.onnx") + " --nodes Z");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("'Z'"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("part.onnx")));
}

}  // namespace
}  // namespace cleave
