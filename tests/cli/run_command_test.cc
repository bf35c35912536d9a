// `cleave run --layouts`: the measured layout choice, its cache, and refusing unknown values.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "command_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class RunCommandTest : public CommandFixture {
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

TEST_F(RunCommandTest, AutoLayoutsAreMeasuredOnceThenReadFromTheCache) {
  CommandResult first = cleave("run " + model_ + " --json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  nlohmann::json report = nlohmann::json::parse(first.out);
  EXPECT_TRUE(report["layouts"]["measured"].get<bool>());
  EXPECT_FALSE(report["layouts"]["cached"].get<bool>());
  EXPECT_GT(report["layouts"]["fastest_ms"]["blocked"].get<double>(), 0);
  EXPECT_GT(report["layouts"]["fastest_ms"]["channels-last"].get<double>(), 0);
  ASSERT_TRUE(fs::exists(path("cache/layouts")));
  EXPECT_EQ(std::distance(fs::directory_iterator(path("cache/layouts")), fs::directory_iterator()),
            1);

  CommandResult second = cleave("run " + model_);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("layouts    "), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("(measured earlier: "), std::string::npos) << second.out;
}

TEST_F(RunCommandTest, AFixedFamilyIsNotMeasured) {
  for (std::string family : {"channels-last", "winograd", "blocked"}) {
    CommandResult result = cleave("run " + model_ + " --layouts " + family + " --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    nlohmann::json report = nlohmann::json::parse(result.out);
    EXPECT_EQ(report["layouts"]["family"], family);
    EXPECT_FALSE(report["layouts"]["measured"].get<bool>());
    EXPECT_FALSE(fs::exists(path("cache/layouts")));
  }
}

TEST_F(RunCommandTest, AnUnknownLayoutIsRefused) {
  CommandResult result = cleave("run " + model_ + " --layouts sideways");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--layouts"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("cache/layouts")));
}

}  // namespace
}  // namespace cleave
