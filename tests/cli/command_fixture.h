// Shared fixture of the CLI tests: a scratch folder per test and a way to run the built binary.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "test_paths.h"

namespace cleave {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// The prefix of every loopback `mpirun` in the tests: `ranks` ranks over TCP on `lo`, one
/// OpenMP thread each, stopped after 120 s; `environment` adds "-x NAME=V" options. The command
/// to run follows it.
inline std::string loopback_mpirun(int ranks, const std::string& environment = "") {
  return "timeout 120 mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) +
         " --mca btl tcp,self --mca btl_tcp_if_include lo -x OMP_NUM_THREADS=1 " + environment +
         " ";
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Each test gets an empty folder, removed afterwards; `cleave(args)` runs the CLI there with
/// stdout and stderr captured.
class CommandFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("cleave_cli_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  CommandResult cleave(const std::string& arguments) const {
    return run_shell(std::string(CLEAVE_BINARY) + " " + arguments);
  }

  /// `cleave arguments` on `ranks` ranks over loopback TCP (see loopback_mpirun).
  CommandResult mpirun(int ranks, const std::string& arguments,
                       const std::string& environment = "") const {
    return run_shell(loopback_mpirun(ranks, environment) + CLEAVE_BINARY + " " + arguments);
  }

  /// Any shell command (mpirun, a bench script), its output kept as cleave()'s is.
  CommandResult run_shell(const std::string& command) const {
    const std::string full = command + " >" + path("stdout") + " 2>" + path("stderr");
    const int status = std::system(full.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(path("stdout")),
            read_text(path("stderr"))};
  }

  std::filesystem::path folder_;
};

/// A CommandFixture for commands that measure (layout choices, profiles): child processes keep
/// their caches in the test's folder. `model_` is the demo Inception model in the repository.
class DemoModelFixture : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    model_ = std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx";
    // The child process inherits it: measurements go to this test's folder.
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }
  std::string model_;
};

}  // namespace cleave
