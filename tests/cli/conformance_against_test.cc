// `cleave conformance --against`: the cases another runtime passes that cleave does not.
#include <filesystem>
#include <fstream>

#include "command_fixture.h"

namespace cleave {
namespace {

const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

class ConformanceAgainst : public CommandFixture {};

TEST_F(ConformanceAgainst, ListsACaseTheReferencePassesAndCleaveDoesNot) {
  if (!std::filesystem::exists(kNode)) GTEST_SKIP() << "libonnx-testdata is not installed";
  // Bernoulli is out of cleave's scope (random), so it stays unsupported.
  std::ofstream(path("reference.txt")) << "# made by hand\nnode/test_bernoulli pass\n"
                                          "node/test_abs pass\n";
  CommandResult result = cleave("conformance " + kNode + "test_bernoulli " + kNode +
                                "test_abs -q --against " + path("reference.txt"));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("MISSING unsupported  node/test_bernoulli"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("cleave passes 1 of them; 1 it passes that cleave does not"),
            std::string::npos)
      << result.out;
}

TEST_F(ConformanceAgainst, AMissingReferenceFileIsRefusedBeforeAnyCaseRuns) {
  CommandResult result =
      cleave("conformance " + path(".") + " --against " + path("no_such_file.txt"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("cannot open the reference results file"), std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace cleave
