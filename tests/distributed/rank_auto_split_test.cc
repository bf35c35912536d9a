// `mpirun cleave run --plan auto`: the spatial split timed on the ranks beside the task plans
// (each rank making it again from its model), a recipe a rank cannot make stopping every rank,
// and candidates dropped where the ranks' memory holds only the choice.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../cli/command_fixture.h"
#include "../spatial/split_testing.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

// Two ranks whose links cost next to nothing.
constexpr const char* kFastLinks = R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e12], [1e12, 0]], "latency": [[0, 1e-7], [1e-7, 0]]})";

class RankAutoSplitTest : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(testing::tall_conv_chain(), path("chain.onnx"));
    std::ofstream(path("fast.json")) << kFastLinks;
  }

  // Every .npy output of `folder`, by file name.
  std::map<std::string, Tensor> outputs_in(const std::string& folder) const {
    std::map<std::string, Tensor> result;
    for (const auto& entry : std::filesystem::directory_iterator(path(folder)))
      result[entry.path().filename().string()] = read_npy(entry.path().string());
    return result;
  }

  // The outputs of `folder` are `want`'s, up to float sums in another order.
  void expect_outputs(const std::string& folder, const std::map<std::string, Tensor>& want) {
    const std::map<std::string, Tensor> got = outputs_in(folder);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    for (const auto& [name, tensor] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      const std::vector<double> a = got.at(name).to_double_vector(), b = tensor.to_double_vector();
      ASSERT_EQ(a.size(), b.size()) << name;
      for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << name << " " << i;
    }
  }
};

const std::string kCommon = " --costs static --layouts blocked --seed 4 ";

TEST_F(RankAutoSplitTest, TheSplitIsTimedOnTheRanksAndItsOutputsAreTheSequentialRuns) {
  CommandResult single = cleave("run " + path("chain.onnx") + " --layouts blocked --seed 4" +
                                " --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks =
      mpirun(2, "run " + path("chain.onnx") + " --plan auto --machine " + path("fast.json") +
                    kCommon + "--repeat 2 --json --verbose --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
  const nlohmann::json report = nlohmann::json::parse(ranks.out);
  ASSERT_TRUE(report["plan"].contains("auto_check")) << report["plan"];
  const nlohmann::json& check = report["plan"]["auto_check"];
  ASSERT_TRUE(check.contains("split")) << check;
  EXPECT_EQ(check["split"].get<std::string>().rfind("split over 2 devices along h", 0), 0u)
      << check;
  EXPECT_FALSE(check.contains("split_rejected")) << check;
  EXPECT_GT(check["split_ms"].get<double>(), 0) << check;
  // Rank 0 compared the split's outputs with the choice's before timing it.
  EXPECT_NE(ranks.err.find("ranks: to time: split split over 2 devices"), std::string::npos)
      << ranks.err;
  EXPECT_NE(ranks.err.find("ranks: the split's outputs agree with those of "), std::string::npos)
      << ranks.err;
  // The fastest median is kept, and what runs is what was kept.
  const std::string kept = check["kept_configuration"];
  std::vector<double> timed = {check["candidate_ms"].get<double>(),
                               check["split_ms"].get<double>()};
  if (check.contains("runner_up_ms")) timed.push_back(check["runner_up_ms"]);
  if (check["sequential_ms"].get<double>() > 0) timed.push_back(check["sequential_ms"]);
  const double kept_ms = kept == check["split"] ? check["split_ms"].get<double>()
                         : kept == check["candidate_configuration"]
                             ? check["candidate_ms"].get<double>()
                         : kept == "sequential" ? check["sequential_ms"].get<double>()
                                                : check["runner_up_ms"].get<double>();
  for (double ms : timed) EXPECT_LE(kept_ms, ms) << check;
  if (kept == check["split"]) {
    EXPECT_EQ(report["plan"]["family"], "spatial");
    EXPECT_EQ(report["plan"]["configuration"], kept);
  }
  EXPECT_EQ(report["latency_ms"]["runs"].size(), 2u);
  expect_outputs("ranks", outputs_in("single"));
}

// A split recipe that rank 1 cannot make (it names a layer its model lacks): refused on every
// rank before any run, a non-zero exit, no output written.
TEST_F(RankAutoSplitTest, ARecipeARankCannotMakeStopsEveryRank) {
  const auto start = std::chrono::steady_clock::now();
  CommandResult result =
      mpirun(2,
             "run " + path("chain.onnx") + " --plan auto --machine " + path("fast.json") + kCommon +
                 "--rank-timeout 10 --output-dir " + path("out"),
             "-x CLEAVE_FAULT=rank=1,action=bad-split");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 90);
  const std::string why = "--plan auto's split (split over 2 devices along h";
  EXPECT_NE(result.err.find("rank 1 refused to start: " + why), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("layer config: no node named \"no_such_node\" in the model"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("so rank 0 stops too"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

// Memories that hold the choice alone: rank 0 drops the others before any rank prepares them,
// the report lists them, and the choice runs.
TEST_F(RankAutoSplitTest, CandidatesThatDoNotFitTheRanksMemoryAreDropped) {
  CommandResult made = cleave("plan " + path("chain.onnx") + " --costs static --machine " +
                              path("fast.json") + " --json");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  double most = 0;
  const nlohmann::json table = nlohmann::json::parse(made.out);
  for (const nlohmann::json& row : table["candidates"]) {
    if (!row.value("chosen", false)) continue;
    for (std::size_t d = 0; d < row["memory_bytes"].size(); ++d) {
      const double activations =
          d < row["activation_bytes"].size() ? row["activation_bytes"][d].get<double>() : 0.0;
      most = std::max(most, row["memory_bytes"][d].get<double>() + activations);
    }
  }
  ASSERT_GT(most, 0) << made.out;
  std::ofstream(path("tight.json")) << fmt::format(
      R"({{"devices": [{{"name": "rank0", "memory_bytes": {0}}}, {{"name": "rank1", "memory_bytes": {0}}}],
    "bandwidth": [[0, 1e12], [1e12, 0]], "latency": [[0, 1e-7], [1e-7, 0]]}})",
      std::ceil(most * 1.02));
  CommandResult single = cleave("run " + path("chain.onnx") + " --layouts blocked --seed 4" +
                                " --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks =
      mpirun(2, "run " + path("chain.onnx") + " --plan auto --machine " + path("tight.json") +
                    kCommon + "--json --verbose --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
  const nlohmann::json report = nlohmann::json::parse(ranks.out);
  ASSERT_TRUE(report["plan"].contains("auto_check")) << report["plan"];
  const nlohmann::json& check = report["plan"]["auto_check"];
  ASSERT_TRUE(check.contains("dropped")) << check;
  EXPECT_FALSE(check["dropped"].empty());
  for (const nlohmann::json& one : check["dropped"]) {
    EXPECT_NE(one["role"], "choice");
    EXPECT_NE(one["why"].get<std::string>().find("MiB on rank"), std::string::npos) << one;
  }
  EXPECT_EQ(check["timed"], false) << "only the choice was left: nothing to time";
  EXPECT_NE(ranks.err.find("ranks: dropped "), std::string::npos) << ranks.err;
  expect_outputs("ranks", outputs_in("single"));
  CommandResult text = mpirun(
      2, "run " + path("chain.onnx") + " --plan auto --machine " + path("tight.json") + kCommon);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\ndropped    "), std::string::npos) << text.out;
}

}  // namespace
}  // namespace cleave
