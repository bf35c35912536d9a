// `cleave gen`: writes reproducible models, reports them in one line, refuses bad options.
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
  std::string output;  // stdout and stderr
};

CommandResult run_cleave(const std::string& arguments) {
  const std::string command = std::string(CLEAVE_BINARY) + " " + arguments + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class GenCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_gen_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  fs::path folder_;
};

TEST_F(GenCommand, SameSeedWritesByteIdenticalFiles) {
  ASSERT_EQ(run_cleave("gen inception --blocks 2 --seed 5 -o " + path("a.onnx")).exit_code, 0);
  ASSERT_EQ(run_cleave("gen inception --blocks 2 --seed 5 -o " + path("b.onnx")).exit_code, 0);
  ASSERT_EQ(run_cleave("gen inception --blocks 2 --seed 6 -o " + path("c.onnx")).exit_code, 0);
  EXPECT_FALSE(read_file(path("a.onnx")).empty());
  EXPECT_EQ(read_file(path("a.onnx")), read_file(path("b.onnx")));
  EXPECT_NE(read_file(path("a.onnx")), read_file(path("c.onnx")));
}

TEST_F(GenCommand, PrintsAOneLineSummary) {
  CommandResult result = run_cleave("gen squeezenet --blocks 2 -o " + path("s.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("squeezenet, 20 nodes"), std::string::npos) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1);
}

TEST_F(GenCommand, RwnnAlsoWritesTheBareDag) {
  CommandResult result = run_cleave(
      "gen rwnn --modules 3 --nodes 8 --graph ws --k 4 --p 0.5 --channels-between 2 "
      "--dependence wdep -o " +
      path("r.onnx") + " --dag " + path("r.json"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json dag = nlohmann::json::parse(read_file(path("r.json")));
  EXPECT_EQ(dag["node_count"], 24);
  EXPECT_EQ(dag["channel_edges"].size(), 4u);
}

TEST_F(GenCommand, BadOptionsFailWithoutWritingAFile) {
  CommandResult size = run_cleave("gen inception --size 3y3 -o " + path("x.onnx"));
  EXPECT_EQ(size.exit_code, 1);
  EXPECT_NE(size.output.find("--size '3y3'"), std::string::npos) << size.output;
  CommandResult channels =
      run_cleave("gen rwnn --modules 2 --nodes 4 --channels-between 3 -o " + path("x.onnx"));
  EXPECT_EQ(channels.exit_code, 1);
  EXPECT_NE(channels.output.find("at least 6 nodes"), std::string::npos) << channels.output;
  EXPECT_TRUE(fs::is_empty(folder_));
}

}  // namespace
