// A child process for work that may abort: its bytes come back, its death is reported.
#include "support/isolated.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace cleave {
namespace {

using ::testing::HasSubstr;

TEST(RunIsolatedTest, ReturnsWhatTheChildProduced) {
  std::string failure;
  const auto bytes = run_isolated(
      [] {
        std::vector<char> out(100000);
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i % 251);
        return out;
      },
      30, &failure);
  ASSERT_TRUE(bytes.has_value()) << failure;
  ASSERT_EQ(bytes->size(), 100000u);
  EXPECT_EQ((*bytes)[99999], static_cast<char>(99999 % 251));
}

TEST(RunIsolatedTest, AChildThatAbortsIsReportedAndThisProcessGoesOn) {
  std::string failure;
  const auto bytes = run_isolated([]() -> std::vector<char> { std::abort(); }, 30, &failure);
  EXPECT_FALSE(bytes.has_value());
  EXPECT_THAT(failure, HasSubstr("died of signal 6"));
}

TEST(RunIsolatedTest, AnExceptionInTheChildEndsTheChildOnly) {
  std::string failure;
  const auto bytes = run_isolated(
      []() -> std::vector<char> { throw std::runtime_error("solver gave up"); }, 30, &failure);
  EXPECT_FALSE(bytes.has_value());
  EXPECT_THAT(failure, HasSubstr("exited with status 4"));
}

TEST(RunIsolatedTest, AChildPastItsDeadlineIsStopped) {
  std::string failure;
  const auto bytes = run_isolated(
      [] {
        ::sleep(30);
        return std::vector<char>{'x'};
      },
      0.2, &failure);
  EXPECT_FALSE(bytes.has_value());
  EXPECT_THAT(failure, HasSubstr("ran past 0.2 s"));
}

}  // namespace
}  // namespace cleave
