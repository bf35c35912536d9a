// `cleave split --machine` with memory_bytes: each machine's weights stay within its memory (a
// C split slices them) or the split is refused naming the machine; run-split runs the result.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../cli/command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

class SplitMemoryTest : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    ASSERT_EQ(
        cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code,
        0);
  }

  // Two machines with `memory` bytes each, 1 Gbit/s apart.
  std::string cluster(double memory) {
    nlohmann::json devices = nlohmann::json::array();
    for (int r = 0; r < 2; ++r)
      devices.push_back({{"name", "rank" + std::to_string(r)}, {"memory_bytes", memory}});
    std::ofstream(path("cluster.json"))
        << nlohmann::json{{"devices", devices}, {"bandwidth", {{0, 1.25e8}, {1.25e8, 0}}}};
    return path("cluster.json");
  }

  // The per-machine weights of a split along `dim` with no memory bound.
  std::vector<double> weights_along(const std::string& dim) {
    CommandResult split = cleave("split " + path("model.onnx") + " --nodes 2 --dim " + dim +
                                 " --json -o " + path("free_" + dim));
    EXPECT_EQ(split.exit_code, 0) << split.err;
    return nlohmann::json::parse(split.out)["optimized"]["weight_bytes"].get<std::vector<double>>();
  }
};

TEST_F(SplitMemoryTest, SplitThatCopiesEveryWeightIsRefusedNamingTheMachineAndBytes) {
  const std::vector<double> whole = weights_along("h");  // H copies every weight.
  CommandResult split = cleave("split " + path("model.onnx") + " --nodes 2 --dim h --machine " +
                               cluster(whole[0] / 2) + " -o " + path("split"));
  EXPECT_EQ(split.exit_code, 1);
  EXPECT_NE(split.err.find("cluster.json"), std::string::npos) << split.err;
  EXPECT_NE(split.err.find(fmt::format("machine 0 ('rank0') would hold {} bytes of weights",
                                       static_cast<int64_t>(whole[0]))),
            std::string::npos)
      << split.err;
  EXPECT_FALSE(std::filesystem::exists(path("split")));
}

TEST_F(SplitMemoryTest, AutoKeepsEachMachineWithinItsMemoryAndTheSplitRuns) {
  const std::vector<double> whole = weights_along("h");
  const std::vector<double> sliced = weights_along("c");
  const double memory = std::max(sliced[0], sliced[1]);
  ASSERT_LT(memory, whole[0]) << "a C split must slice this model's weights";
  CommandResult split = cleave("split " + path("model.onnx") + " --nodes 2 --dim auto --machine " +
                               cluster(memory) + " --json -o " + path("split"));
  ASSERT_EQ(split.exit_code, 0) << split.err;
  nlohmann::json report = nlohmann::json::parse(split.out);
  for (double bytes : report["optimized"]["weight_bytes"]) EXPECT_LE(bytes, memory);
  int set_aside = 0;
  for (const auto& candidate : report["candidates"]) set_aside += candidate.contains("over_memory");
  EXPECT_GE(set_aside, 1) << report["candidates"].dump();

  CommandResult single =
      cleave("run " + path("model.onnx") + " --seed 3 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run-split " + path("split") + " --model " + path("model.onnx") +
                                      " --seed 3 --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  for (const auto& entry : std::filesystem::directory_iterator(path("single"))) {
    Tensor expected = read_npy(entry.path().string());
    Tensor got = read_npy(path("ranks/" + entry.path().filename().string()));
    ASSERT_EQ(got.shape(), expected.shape());
    for (int64_t i = 0; i < expected.element_count(); ++i)
      EXPECT_NEAR(got.data<float>()[i], expected.data<float>()[i], 1e-4) << i;
  }
}

}  // namespace
}  // namespace cleave
