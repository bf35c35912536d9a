// `cleave split --dim h|w|c` then `mpirun -np N cleave run-split`: every direction, on 2 and 3
// ranks, gives the single process's outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "../cli/command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

class SplitRanksTest : public CommandFixture,
                       public ::testing::WithParamInterface<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    ASSERT_EQ(
        cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code,
        0);
  }
};

TEST_P(SplitRanksTest, RanksGiveTheSingleProcessOutputs) {
  const auto& [dim, ranks] = GetParam();
  CommandResult split = cleave("split " + path("model.onnx") + " --nodes " + std::to_string(ranks) +
                               " --dim " + dim + " -o " + path("split"));
  ASSERT_EQ(split.exit_code, 0) << split.err;
  CommandResult single = cleave("run " + path("model.onnx") +
                                " --layouts blocked --seed 3 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult run =
      mpirun(ranks, "run-split " + path("split") + " --model " + path("model.onnx") +
                        " --seed 3 --warmup 1 --repeat 2 --json --output-dir " + path("ranks"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["per_rank"].size(), static_cast<std::size_t>(ranks));
  // Every rank computed its part and handed some of it on.
  for (const auto& rank : report["per_rank"]) EXPECT_GT(rank["bytes_sent"].get<double>(), 0);
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(path("single"))) {
    Tensor expected = read_npy(entry.path().string());
    Tensor got = read_npy(path("ranks/" + entry.path().filename().string()));
    ASSERT_EQ(got.shape(), expected.shape());
    double worst = 0;
    for (int64_t i = 0; i < expected.element_count(); ++i)
      worst = std::max(worst, std::abs(double{got.data<float>()[i]} - expected.data<float>()[i]));
    EXPECT_LT(worst, 1e-4) << entry.path().filename();
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Directions, SplitRanksTest,
                         ::testing::Values(std::make_tuple("h", 2), std::make_tuple("w", 2),
                                           std::make_tuple("c", 2), std::make_tuple("h", 3),
                                           std::make_tuple("c", 3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "On" +
                                  std::to_string(std::get<1>(info.param)) + "Ranks";
                         });

}  // namespace
}  // namespace cleave
