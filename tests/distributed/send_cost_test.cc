// `mpirun -np 2 cleave info --send-cost`: cleave's own cost per message sent, measured on its
// hand-off; refused with a clear error outside mpirun.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../cli/command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

using SendCostTest = CommandFixture;

TEST_F(SendCostTest, TwoRanksMeasureOneFigurePerRound) {
  const CommandResult result = mpirun(2, "info --send-cost --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json figure = nlohmann::json::parse(result.out);  // rank 0's line alone
  ASSERT_TRUE(figure["send_seconds"].is_number()) << result.out;
  const double seconds = figure["send_seconds"].get<double>();
  EXPECT_GT(seconds, 0);
  EXPECT_LT(seconds, 0.1);  // a message, not a timeout
  EXPECT_EQ(figure["per_round"].size(), 21u);
  const CommandResult text = mpirun(2, "info --send-cost");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("send_us ", 0), 0u) << text.out;
}

TEST_F(SendCostTest, OutsideMpirunItSaysHowToRunIt) {
  const CommandResult result = cleave("info --send-cost");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("needs two ranks"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("mpirun -np 2 cleave info --send-cost"), std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace cleave
