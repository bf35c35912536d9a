// Values crossing ranks copied once at most: a value read by two ranks is sent from its own
// bytes to both, and a Concat's inputs from other ranks are received into its output; the
// outputs stay bit-identical to one process.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli/command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

class MpiInPlaceTest : public CommandFixture {
 protected:
  // One inception block of 64 channels on 16 x 16: four branches of 16 channels, each a whole
  // channel block of its Concat's output.
  void SetUp() override {
    CommandFixture::SetUp();
    CommandResult made = cleave("gen inception --blocks 1 --channels 64 --size 16 --seed 3 -o " +
                                path("model.onnx"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  // A 3-worker plan: branch 1 of the block on worker 1, branch 2 on worker 2, the rest (stem,
  // the other branches, the Concat, the head) on worker 0. The stem's output is read by both
  // other ranks, and the Concat on rank 0 reads a value from each.
  std::string branch_plan() {
    CommandResult made = cleave("plan " + path("model.onnx") +
                                " --costs static --strategy lc --workers 3 -o " + path("lc.json"));
    EXPECT_EQ(made.exit_code, 0) << made.err;
    nlohmann::json plan = nlohmann::json::parse(read_text(path("lc.json")));
    const auto& workers = plan["workers"];
    nlohmann::json order = nlohmann::json::array(
        {nlohmann::json::array(), nlohmann::json::array(), nlohmann::json::array()});
    int moved[3] = {0, 0, 0};
    for (auto& task : plan["tasks"]) {
      const std::string name = task["task"];
      const int worker = name.find("block1_b1_") != std::string::npos   ? 1
                         : name.find("block1_b2_") != std::string::npos ? 2
                                                                        : 0;
      ++moved[worker];
      task["worker"] = workers[worker];
      order[worker].push_back(name);  // Tasks are listed in a topological order.
    }
    EXPECT_GT(moved[1], 0);
    EXPECT_GT(moved[2], 0);
    plan["order"] = order;
    std::ofstream(path("branches.json")) << plan.dump();
    return path("branches.json");
  }

  std::map<std::string, std::vector<std::byte>> outputs_in(const std::string& folder) const {
    std::map<std::string, std::vector<std::byte>> result;
    for (const auto& entry : std::filesystem::directory_iterator(path(folder))) {
      Tensor tensor = read_npy(entry.path().string());
      const auto* bytes = static_cast<const std::byte*>(tensor.raw());
      result[entry.path().filename().string()] = {bytes, bytes + tensor.byte_size()};
    }
    return result;
  }

  // Runs the branch plan on 3 ranks (a warm-up call plans the placement, the timed calls use
  // it) and checks the outputs against one process bit for bit; returns rank 0's figures.
  nlohmann::json run_branches(const std::string& layouts, const std::string& environment,
                              const std::string& folder) {
    const std::string common = " --layouts " + layouts + " --seed 4 ";
    CommandResult single =
        cleave("run " + path("model.onnx") + common + "--output-dir " + path(folder + "_single"));
    EXPECT_EQ(single.exit_code, 0) << single.err;
    CommandResult ranks = mpirun(3,
                                 "run " + path("model.onnx") + " --plan " + branch_plan() + common +
                                     "--warmup 1 --repeat 2 --json --output-dir " + path(folder),
                                 environment);
    EXPECT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
    if (ranks.exit_code != 0) return {};
    const auto expected = outputs_in(folder + "_single");
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(outputs_in(folder), expected);
    const nlohmann::json report = nlohmann::json::parse(ranks.out);
    // The stem's output went to ranks 1 and 2: two messages of one value.
    EXPECT_GT(report["per_rank"][0]["messages_sent"].get<double>(), 1) << report["per_rank"];
    return report["per_rank"];
  }
};

// Two values of 16 x 16 x 16 floats reach rank 0's Concat from ranks 1 and 2.
constexpr double kBranchBytes = 16.0 * 16 * 16 * sizeof(float);

TEST_F(MpiInPlaceTest, ConcatInputsFromOtherRanksAreReceivedInPlaceBlocked) {
  const nlohmann::json ranks = run_branches("blocked", "", "blocked");
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0]["values_received_in_place_per_run"].get<double>(), 2) << ranks[0];
  EXPECT_EQ(ranks[0]["received_bytes_copied_per_run"].get<double>(), 0) << ranks[0];
  EXPECT_EQ(ranks[0]["concat_inputs_in_place"].get<double>(), 4) << ranks[0];
}

// Channels-last slices of a channel join interleave: no input is one run of the output, so
// the Concat copies what it receives (the simulator, which does not know the layouts, prices
// no copy there: concat_inputs_received_in_place answers for plain and blocked layouts).
TEST_F(MpiInPlaceTest, ChannelsLastConcatCopiesWhatItReceives) {
  const nlohmann::json ranks = run_branches("channels-last", "", "channels_last");
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0]["values_received_in_place_per_run"].get<double>(), 0) << ranks[0];
  EXPECT_EQ(ranks[0]["received_bytes_copied_per_run"].get<double>(), 2 * kBranchBytes) << ranks[0];
}

// With in-place Concat switched off, the same run copies both received values and still
// equals one process.
TEST_F(MpiInPlaceTest, SwitchedOffTheConcatCopiesWhatItReceives) {
  const nlohmann::json ranks = run_branches("blocked", "-x CLEAVE_CONCAT_IN_PLACE=0", "off");
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0]["values_received_in_place_per_run"].get<double>(), 0) << ranks[0];
  EXPECT_EQ(ranks[0]["received_bytes_copied_per_run"].get<double>(), 2 * kBranchBytes) << ranks[0];
}

// A short message received in place is refused like any other: rank 1 sends one message per
// call, so message=1 corrupts the one of the second call, which rank 0 receives into its
// Concat's output.
TEST_F(MpiInPlaceTest, ShortMessageReceivedInPlaceIsRefused) {
  CommandResult ranks = mpirun(3,
                               "run " + path("model.onnx") + " --plan " + branch_plan() +
                                   " --layouts blocked --warmup 1 --repeat 2 --rank-timeout 5 "
                                   "--output-dir " +
                                   path("out"),
                               "-x CLEAVE_FAULT=rank=1,run=0,action=short,message=1");
  EXPECT_NE(ranks.exit_code, 0);
  EXPECT_NE(ranks.err.find("refused the message for value"), std::string::npos) << ranks.err;
  EXPECT_NE(ranks.err.find("the plan says"), std::string::npos) << ranks.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

}  // namespace
}  // namespace cleave
