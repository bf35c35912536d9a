// Ranks as devices of a machine file: plans that fit each rank's memory, ranks that read only
// their own weights, and `cleave plan --machine` plans that run on the ranks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../cli/command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

class RankWeightsTest : public CommandFixture {
 protected:
  // A stack of `layers` Gemm+Relu of `width`, weights in an external data file (or embedded).
  void make_mlp(int layers, int width, bool embedded = false) {
    CommandResult made = run_shell(std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR +
                                   "/bench/distributed/make_mlp.py " + path("mlp.onnx") +
                                   " --layers " + std::to_string(layers) + " --width " +
                                   std::to_string(width) + (embedded ? " --embedded" : ""));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  // Ranks of equal speed with `memory` bytes each for weights, 1 Gbit/s apart.
  std::string cluster(int ranks, double memory, const std::string& name = "cluster.json") {
    nlohmann::json devices = nlohmann::json::array();
    nlohmann::json bandwidth = nlohmann::json::array();
    for (int r = 0; r < ranks; ++r) {
      devices.push_back({{"name", "rank" + std::to_string(r)}, {"memory_bytes", memory}});
      nlohmann::json row = nlohmann::json::array();
      for (int c = 0; c < ranks; ++c) row.push_back(r == c ? 0.0 : 1.25e8);
      bandwidth.push_back(row);
    }
    std::ofstream(path(name)) << nlohmann::json{{"devices", devices}, {"bandwidth", bandwidth}};
    return path(name);
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
};

constexpr double kMiB = 1048576.0;

TEST_F(RankWeightsTest, PlanForAClusterFileRunsOnItsRanksAndEqualsOneProcess) {
  ASSERT_EQ(
      cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code, 0);
  CommandResult planned = cleave("plan " + path("model.onnx") + " --costs static --machine " +
                                 cluster(2, 1e9) + " --json -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  nlohmann::json plan = nlohmann::json::parse(planned.out);
  ASSERT_EQ(plan["order"].size(), 2u);
  const std::string common = " --layouts blocked --seed 3 ";
  CommandResult single =
      cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan " + path("plan.json") +
                                      common + "--json --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_EQ(nlohmann::json::parse(ranks.out)["ranks"], 2);
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

TEST_F(RankWeightsTest, PlanIsRefusedWhenNoRankCanHoldItsWeights) {
  make_mlp(2, 512);  // 1 MiB of weights per layer.
  CommandResult planned = cleave("plan " + path("mlp.onnx") +
                                 " --no-optimize --costs static --strategy heft --machine " +
                                 cluster(2, 0.5 * kMiB) + " -o " + path("plan.json"));
  EXPECT_EQ(planned.exit_code, 1);
  EXPECT_NE(planned.err.find("memory"), std::string::npos) << planned.err;
  EXPECT_FALSE(std::filesystem::exists(path("plan.json")));
}

TEST_F(RankWeightsTest, AutoPlanSpreadsAModelLargerThanOneRankOverSeveral) {
  make_mlp(4, 512);  // 4 MiB of weights; each rank may hold 2.5.
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") + " --no-optimize --costs static --machine " +
             cluster(2, 2.5 * kMiB) + " --json -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  nlohmann::json plan = nlohmann::json::parse(planned.out);
  // Sequential (everything on one rank) does not fit, so it was set aside.
  bool sequential_over = false;
  for (const auto& candidate : plan["candidates"])
    sequential_over |= candidate["strategy"] == "sequential" &&
                       candidate["rejected"].get<std::string>().find("memory") != std::string::npos;
  EXPECT_TRUE(sequential_over) << plan["candidates"].dump();
  ASSERT_EQ(plan["order"].size(), 2u);
  EXPECT_FALSE(plan["order"][0].empty());
  EXPECT_FALSE(plan["order"][1].empty());
}

// Each rank reads its own layers only, and the outputs equal one process's bitwise. (What this
// saves at the peak is measured under a memory cap by bench/distributed/memory_capped.sh.)
TEST_F(RankWeightsTest, RanksOfAnExternalDataModelReadOnlyTheirOwnWeights) {
  make_mlp(4, 512);  // 4 MiB of weights, 1 MiB a layer.
  // As is (--no-optimize): ranks leave other ranks' weights unread.
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") + " --no-optimize --costs static --strategy heft " +
             "--machine " + cluster(2, 2.5 * kMiB) + " -o " + path("as_is.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  // Optimized: the passes need every weight, so each rank reads the whole model first.
  planned = cleave("plan " + path("mlp.onnx") + " --costs static --strategy heft --machine " +
                   cluster(2, 2.5 * kMiB) + " -o " + path("optimized.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;

  CommandResult single =
      cleave("run " + path("mlp.onnx") + " --no-optimize --seed 2 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult as_is =
      mpirun(2, "run " + path("mlp.onnx") + " --no-optimize --plan " + path("as_is.json") +
                    " --seed 2 --json --output-dir " + path("ranks"));
  ASSERT_EQ(as_is.exit_code, 0) << as_is.err;
  CommandResult whole = mpirun(
      2, "run " + path("mlp.onnx") + " --plan " + path("optimized.json") + " --seed 2 --json");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  nlohmann::json own = nlohmann::json::parse(as_is.out);
  nlohmann::json all = nlohmann::json::parse(whole.out);
  EXPECT_EQ(own["weights_read"], "own tasks' only");
  EXPECT_EQ(all["weights_read"], "whole model, then dropped");
  EXPECT_GT(own["model_weight_bytes"].get<double>(), 4 * kMiB);
  double kept = 0;
  for (int r = 0; r < 2; ++r) {
    const double mine = own["per_rank"][r]["weight_bytes"].get<double>();
    EXPECT_LE(mine, 2.5 * kMiB) << r;
    EXPECT_GT(mine, 0) << r;
    kept += mine;
  }
  EXPECT_EQ(kept, own["model_weight_bytes"].get<double>());
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

// As above for a model whose weights are inside the protobuf (the corpus models): the ranks
// skip the payloads of other ranks' weights and read their own from the file.
TEST_F(RankWeightsTest, RanksOfAnEmbeddedWeightsModelReadOnlyTheirOwnWeights) {
  make_mlp(4, 512, /*embedded=*/true);
  ASSERT_FALSE(std::filesystem::exists(path("mlp.onnx.weights")));
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") + " --no-optimize --costs static --strategy heft " +
             "--machine " + cluster(2, 2.5 * kMiB) + " -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  CommandResult single =
      cleave("run " + path("mlp.onnx") + " --no-optimize --seed 2 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ran =
      mpirun(2, "run " + path("mlp.onnx") + " --no-optimize --plan " + path("plan.json") +
                    " --seed 2 --json --output-dir " + path("ranks"));
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  nlohmann::json report = nlohmann::json::parse(ran.out);
  EXPECT_EQ(report["weights_read"], "own tasks' only");
  double kept = 0;
  for (int r = 0; r < 2; ++r) {
    const double mine = report["per_rank"][r]["weight_bytes"].get<double>();
    EXPECT_LE(mine, 2.5 * kMiB) << r;
    EXPECT_GT(mine, 0) << r;
    kept += mine;
  }
  EXPECT_EQ(kept, report["model_weight_bytes"].get<double>());
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

// Each Gemm packs its weight matrix, so the rank frees the loaded copy (the biases, read at
// every run, stay); --keep-loaded-weights keeps them. Outputs are the same either way.
TEST_F(RankWeightsTest, RanksFreeEachWeightOnceTheirKernelsPackedIt) {
  make_mlp(4, 512);
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") + " --no-optimize --costs static --strategy heft " +
             "--machine " + cluster(2, 2.5 * kMiB) + " -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const std::string run = "run " + path("mlp.onnx") + " --no-optimize --plan " + path("plan.json") +
                          " --seed 2 --repeat 2 --json --output-dir ";
  CommandResult freed = mpirun(2, run + path("freed"));
  ASSERT_EQ(freed.exit_code, 0) << freed.err;
  CommandResult kept = mpirun(2, run + path("kept") + " --keep-loaded-weights");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  nlohmann::json freed_report = nlohmann::json::parse(freed.out);
  nlohmann::json kept_report = nlohmann::json::parse(kept.out);
  for (int r = 0; r < 2; ++r) {
    const auto& rank = freed_report["per_rank"][r];
    const double weights = rank["weight_bytes"].get<double>();
    const double biases = 512 * 4 * (weights / (512 * 512 * 4 + 512 * 4));
    EXPECT_DOUBLE_EQ(rank["released_weight_bytes"].get<double>(), weights - biases) << r;
    EXPECT_EQ(kept_report["per_rank"][r]["released_weight_bytes"].get<double>(), 0) << r;
  }
  EXPECT_EQ(outputs_in("freed"), outputs_in("kept"));
}

// A model cut short inside a weight's payload is refused by every rank, naming the file.
TEST_F(RankWeightsTest, TruncatedEmbeddedModelIsRefusedOnEveryRank) {
  make_mlp(2, 512, /*embedded=*/true);
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") +
             " --no-optimize --costs static --strategy heft --workers 2 -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  std::filesystem::resize_file(path("mlp.onnx"), std::filesystem::file_size(path("mlp.onnx")) / 2);
  CommandResult ran = mpirun(2, "run " + path("mlp.onnx") + " --no-optimize --plan " +
                                    path("plan.json") + " --output-dir " + path("out"));
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_NE(ran.err.find(path("mlp.onnx") + ": not a valid ONNX model"), std::string::npos)
      << ran.err;
  EXPECT_NE(ran.err.find("rank 0 refused to start"), std::string::npos) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(RankWeightsTest, BadClusterFileIsRefusedByNameBeforeTheModelLoads) {
  std::ofstream(path("cluster.json")) << R"({"devices": [{"name": "r0", "memory": 1e6}]})";
  CommandResult planned = cleave("plan " + path("missing.onnx") + " --machine " +
                                 path("cluster.json") + " -o " + path("plan.json"));
  EXPECT_EQ(planned.exit_code, 1);
  EXPECT_NE(planned.err.find("cluster.json"), std::string::npos) << planned.err;
  EXPECT_NE(planned.err.find("memory"), std::string::npos) << planned.err;
  EXPECT_EQ(planned.err.find("missing.onnx"), std::string::npos) << planned.err;
  EXPECT_FALSE(std::filesystem::exists(path("plan.json")));
}

// A rank refuses a plan that puts more weights on it than its machine file allows.
TEST_F(RankWeightsTest, RanksRefuseAPlanOverTheirMemory) {
  make_mlp(4, 512);
  CommandResult planned = cleave("plan " + path("mlp.onnx") +
                                 " --no-optimize --costs static --strategy heft --machine " +
                                 cluster(2, 2.5 * kMiB) + " -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  // The same plan with the ranks' memory lowered after planning (an edited file).
  nlohmann::json plan = nlohmann::json::parse(read_text(path("plan.json")));
  for (auto& device : plan["task_graph"]["devices"]) device["memory_bytes"] = 1e6;
  std::ofstream(path("plan.json")) << plan.dump();
  CommandResult ran = mpirun(2, "run " + path("mlp.onnx") + " --no-optimize --plan " +
                                    path("plan.json") + " --output-dir " + path("out"));
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_NE(ran.err.find("more than its memory"), std::string::npos) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

// The CI-sized memory-capped run: 128 MiB of weights on 4 ranks (about 87 MiB each at their
// peak), each in a cgroup of 112 MiB, which one process holding the whole model exceeds (about
// 171 MiB at its peak, though it frees each loaded weight once packed).
TEST_F(RankWeightsTest, ModelLargerThanTheCapRunsOnCappedRanks) {
  if (::geteuid() != 0 || !std::filesystem::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
    GTEST_SKIP() << "needs root and cgroup v1 memory";
  }
  make_mlp(8, 2048);
  CommandResult planned =
      cleave("plan " + path("mlp.onnx") + " --no-optimize --costs static --strategy heft " +
             "--machine " + cluster(4, 36 * kMiB) + " -o " + path("plan.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const std::string capped = std::string("timeout 120 ") + CLEAVE_SOURCE_DIR +
                             "/bench/distributed/emulated_cluster.sh --memory 112M -np ";
  CommandResult ranks = run_shell(capped + "4 -- " + CLEAVE_BINARY + " run " + path("mlp.onnx") +
                                  " --no-optimize --plan " + path("plan.json") +
                                  " --seed 6 --json --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  nlohmann::json report = nlohmann::json::parse(ranks.out);
  for (const auto& rank : report["per_rank"])
    EXPECT_LT(rank["peak_rss_bytes"].get<double>(), 112 * kMiB);
  // One process with the whole model under the same cap is killed.
  CommandResult alone = run_shell(capped + "1 -- " + CLEAVE_BINARY + " run " + path("mlp.onnx") +
                                  " --no-optimize --seed 6 --output-dir " + path("alone"));
  EXPECT_NE(alone.exit_code, 0);
  CommandResult single =
      cleave("run " + path("mlp.onnx") + " --no-optimize --seed 6 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

}  // namespace
}  // namespace cleave
