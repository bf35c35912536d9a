// `cleave inspect`: the JSON report of a generated model, and DOT output Graphviz accepts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout only; stderr is appended when `with_errors`
};

CommandResult run(const std::string& command, bool with_errors = true) {
  CommandResult result;
  FILE* pipe = popen((command + (with_errors ? " 2>&1" : "")).c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string cleave(const std::string& arguments) {
  return std::string(CLEAVE_BINARY) + " " + arguments;
}

class InspectCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_inspect_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    model_ = (folder_ / "model.onnx").string();
    ASSERT_EQ(
        run(cleave("gen inception --blocks 2 --channels 8 --size 8x8 -o " + model_)).exit_code, 0);
  }
  void TearDown() override { fs::remove_all(folder_); }

  fs::path folder_;
  std::string model_;
};

TEST_F(InspectCommand, JsonParsesAndCountsTheGeneratedNodes) {
  CommandResult result = run(cleave("inspect --json " + model_), false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["node_count"], 2 + 2 * 14 + 3);
  EXPECT_EQ(json["nodes"].size(), 2u + 2 * 14 + 3);
  EXPECT_EQ(json["nodes_with_unknown_flops"], 0);
  EXPECT_GT(json["static_cost"]["parallelism"].get<double>(), 1.0);
}

TEST_F(InspectCommand, HumanReportNamesTheCriticalPath) {
  CommandResult result = run(cleave("inspect " + model_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("critical path:\n  stem "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("block2_b3_5x5"), std::string::npos) << result.output;
}

TEST_F(InspectCommand, DotOutputIsAcceptedByGraphviz) {
  const std::string dot = (folder_ / "model.dot").string();
  ASSERT_EQ(run(cleave("inspect --dot " + dot + " " + model_)).exit_code, 0);
  CommandResult svg = run("dot -Tsvg " + dot, false);
  EXPECT_EQ(svg.exit_code, 0);
  EXPECT_NE(svg.output.find("<svg"), std::string::npos);
}

TEST_F(InspectCommand, SvgIsRenderedDirectly) {
  const std::string svg = (folder_ / "model.svg").string();
  ASSERT_EQ(run(cleave("inspect --svg " + svg + " " + model_)).exit_code, 0);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
}

TEST_F(InspectCommand, MissingModelIsAnError) {
  CommandResult result = run(cleave("inspect " + (folder_ / "nope.onnx").string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("nope.onnx"), std::string::npos) << result.output;
}

}  // namespace
