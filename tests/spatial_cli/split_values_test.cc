// `cleave split` refuses speeds, shares and machine links it cannot split by, before any work,
// naming the option or the file and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../cli/command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

class SplitValues : public CommandFixture {
 protected:
  // `cleave split` of the demo model on 2 machines with `options`: refused, nothing written.
  std::string refusal(const std::string& options) const {
    const std::string model = std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx";
    CommandResult r = cleave("split " + model + " --nodes 2 -o " + path("out") + " " + options);
    EXPECT_NE(r.exit_code, 0) << options;
    EXPECT_FALSE(std::filesystem::exists(path("out"))) << options;
    return r.err;
  }
  std::string config(const std::string& shares) const {
    std::ofstream(path("c.json")) << R"({"layers": {"conv1": {"shares": )" << shares << "}}}";
    return "--config " + path("c.json");
  }
};

TEST_F(SplitValues, EmptySpeedsAreRefused) {
  EXPECT_NE(
      refusal("--speeds ''").find("--speeds '': item 1: expected a finite number > 0, got ''"),
      std::string::npos);
}

TEST_F(SplitValues, TrailingCommaInSpeedsIsRefused) {
  EXPECT_NE(refusal("--speeds 1,2,")
                .find("--speeds '1,2,': item 3: expected a finite number > 0, got ''"),
            std::string::npos);
}

TEST_F(SplitValues, SpeedsOfAHugeRatioAreRefused) {
  EXPECT_NE(refusal("--speeds 1,1e-300")
                .find("--speeds '1,1e-300': expected the largest at most "
                      "1e+06 times the smallest, got 1 and 1e-300"),
            std::string::npos);
}

TEST_F(SplitValues, ConfigSharesOfAHugeRatioAreRefusedByField) {
  EXPECT_NE(refusal(config("[1e-300, 1]"))
                .find(path("c.json") + ": layers.conv1.shares: expected the largest at most 1e+06 "
                                       "times the smallest, got 1 and 1e-300"),
            std::string::npos);
}

TEST_F(SplitValues, ConfigSharesBeyondTheBoundAreRefusedByField) {
  EXPECT_NE(refusal(config("[1e308, 1e308]"))
                .find(path("c.json") + ": layers.conv1.shares: expected numbers in (0, 1e+15], "
                                       "got 1e+308 (item 1)"),
            std::string::npos);
}

TEST_F(SplitValues, MachinesWithoutALinkAreRefused) {
  std::ofstream(path("m.json")) << R"({"devices": [{"name": "a"}, {"name": "b"}],
    "bandwidth": [[0, 0], [0, 0]]})";
  EXPECT_NE(refusal("--machine " + path("m.json"))
                .find(path("m.json") + ": bandwidth[0][1]: machines 0 and 1 have no link"),
            std::string::npos);
}

}  // namespace
}  // namespace cleave
