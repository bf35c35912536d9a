// `cleave run --plan P` in one process and on ranks prepare through the one Session.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "../cli/command_fixture.h"

namespace cleave {
namespace {

using RankSessionTest = CommandFixture;

// The line prepare_run logs for a plan file, from the output of a run with --verbose.
std::string plan_line(const std::string& err) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("recipe: plan ", 0) == 0) return line;
  }
  return "";
}

TEST_F(RankSessionTest, RanksLogTheSamePlanLineAsTheOneProcessSessionPrepare) {
  ASSERT_EQ(
      cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code, 0);
  const std::string plan = path("lc2.json");
  CommandResult made =
      cleave("plan " + path("model.onnx") + " --costs static --strategy lc --workers 2 -o " + plan);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string arguments =
      "run " + path("model.onnx") + " --plan " + plan + " --layouts blocked --verbose";
  CommandResult single = cleave(arguments);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const std::string expected = plan_line(single.err);
  ASSERT_NE(expected, "") << single.err;
  CommandResult ranks = mpirun(2, arguments);
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
  EXPECT_EQ(plan_line(ranks.err), expected) << ranks.err;
}

}  // namespace
}  // namespace cleave
