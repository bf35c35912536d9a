// `mpirun cleave run --output-dir` and `run-split --output-dir`: a bad target stops every rank
// before any work, with a clean message.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>

#include "../cli/command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class OutputDirRanks : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    ASSERT_EQ(
        cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code,
        0);
    ASSERT_EQ(cleave("plan " + path("model.onnx") +
                     " --costs static --strategy lc --workers 2 -o " + path("plan.json"))
                  .exit_code,
              0);
  }
};

TEST_F(OutputDirRanks, AnOutputDirThatIsAFileStopsEveryRankBeforeWork) {
  std::ofstream(path("file")) << "x";
  CommandResult result = mpirun(2, "run " + path("model.onnx") + " --plan " + path("plan.json") +
                                       " --output-dir " + path("file"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("rank 0 refused to start: " + path("file") +
                              ": cannot write the output folder: it is a file, expected a folder"),
                    Not(HasSubstr("internal error")), Not(HasSubstr("filesystem error"))));
  EXPECT_EQ(read_text(path("file")), "x");
}

TEST_F(OutputDirRanks, RunSplitOutputDirThatIsAFileStopsEveryRankBeforeWork) {
  ASSERT_EQ(cleave("split " + path("model.onnx") + " --nodes 2 -o " + path("split")).exit_code, 0);
  std::ofstream(path("file")) << "x";
  CommandResult result = mpirun(2, "run-split " + path("split") + " --output-dir " + path("file"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("rank 0 refused to start: " + path("file") +
                              ": cannot write the output folder: it is a file, expected a folder"),
                    Not(HasSubstr("internal error")), Not(HasSubstr("filesystem error"))));
  EXPECT_EQ(read_text(path("file")), "x");
}

}  // namespace
}  // namespace cleave
