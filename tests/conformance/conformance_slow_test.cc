// ONNX backend conformance over Debian's libonnx-testdata, checked against committed expectations.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include "test_paths.h"

namespace {

std::string run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return output;
  char buffer[65536];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  output += "\nexit=" + std::to_string(WEXITSTATUS(status));
  return output;
}

TEST(Conformance, NoCaseThatPassedRegressesAndInScopePassRateIsAtLeast95Percent) {
  const std::string data = "/usr/share/libonnx-testdata/data";
  if (!std::filesystem::exists(data)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string command = std::string(CLEAVE_BINARY) + " conformance " + data + "/node " + data +
                        "/pytorch-converted " + data + "/pytorch-operator " + data +
                        "/simple --expect " + CLEAVE_SOURCE_DIR +
                        "/tests/conformance/expectations.txt --json 2>/dev/null";
  std::string output = run(command);
  auto exit_at = output.rfind("\nexit=");
  nlohmann::json report = nlohmann::json::parse(output.substr(0, exit_at));
  std::printf(
      "conformance: %d cases, %d pass, %d fail, %d unsupported; in scope %d of %d pass (%.1f%%)\n",
      report["cases"].get<int>(), report["passed"].get<int>(), report["failed"].get<int>(),
      report["unsupported"].get<int>(), report["in_scope_passed"].get<int>(),
      report["in_scope"].get<int>(), report["in_scope_pass_rate"].get<double>());
  EXPECT_EQ(report["regressions"].size(), 0u) << report["regressions"].dump(2);
  EXPECT_GE(report["in_scope_pass_rate"].get<double>(), 95.0);
  EXPECT_EQ(output.substr(exit_at), "\nexit=0");
}

}  // namespace
