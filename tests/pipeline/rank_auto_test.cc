// Rank 0's `--plan auto` for MPI ranks: the candidates it sends (choice, runner-up of another
// family, all on rank 0), each a plan file of one worker per rank, and the machine it plans on.
#include "pipeline/rank_auto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "modelgen/inception.h"
#include "support/error.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

Graph branchy() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

RankAutoOptions static_options() {
  RankAutoOptions options;
  options.costs = "static";
  return options;
}

TEST(RankAuto, TheCandidatesAreTheChoiceTheRunnerUpOfAnotherFamilyAndAllOnRankZero) {
  const Graph graph = branchy();
  const std::vector<RankCandidate> candidates = plan_rank_candidates(graph, static_options(), 2);
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(candidates[0].role, "choice");
  EXPECT_EQ(candidates[1].role, "runner-up");
  EXPECT_EQ(candidates[2].role, "sequential");
  EXPECT_NE(candidates[0].strategy, "sequential") << "two Inception blocks: a parallel choice";
  EXPECT_NE(candidates[1].configuration, candidates[0].configuration);
  EXPECT_EQ(candidates[2].strategy, "sequential");
  for (const RankCandidate& candidate : candidates) {
    // Every candidate is a plan file for the ranks: one worker per rank, this graph's.
    const ModelPlan plan = model_plan_from_json(candidate.plan, graph, candidate.role,
                                                /*cores_on_this_host=*/false);
    EXPECT_EQ(plan.plan.order.size(), 2u) << candidate.configuration;
    EXPECT_EQ(plan.plan.strategy, candidate.strategy);
    EXPECT_EQ(plan.configuration, candidate.configuration);
    EXPECT_FALSE(candidate.plan.at("candidates").empty()) << "the choice's table travels with each";
  }
  // All on rank 0: rank 1 idle.
  const ModelPlan sequential = model_plan_from_json(candidates[2].plan, graph, "sequential", false);
  EXPECT_FALSE(sequential.plan.order[0].empty());
  EXPECT_TRUE(sequential.plan.order[1].empty());
  // The runner-up's family is not the choice's: the table has other families that need timing.
  const ModelPlan choice = model_plan_from_json(candidates[0].plan, graph, "choice", false);
  const ModelPlan runner_up = model_plan_from_json(candidates[1].plan, graph, "runner-up", false);
  EXPECT_NE(runner_up.family, choice.family) << runner_up.configuration;
  // It runs otherwise than both: not all on rank 0, not the choice's orders.
  EXPECT_FALSE(runner_up.plan.order[1].empty());
  EXPECT_NE(runner_up.plan.order, choice.plan.order);
}

TEST(RankAuto, WithoutTheCheckOnlyTheChoiceIsSent) {
  RankAutoOptions options = static_options();
  options.check = false;
  const std::vector<RankCandidate> candidates = plan_rank_candidates(branchy(), options, 3);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].role, "choice");
}

TEST(RankAuto, WithoutAMachineFileTheRanksAreEqualDevicesLinkedByMessages) {
  RankAutoOptions options = static_options();
  options.threads_per_worker = 2;
  const Machine machine = rank_auto_machine(options, 3);
  ASSERT_EQ(machine.size(), 3u);
  EXPECT_FALSE(machine.shared_memory);
  for (std::size_t d = 0; d < 3; ++d) {
    EXPECT_EQ(machine.devices[d].threads, 2);
    EXPECT_TRUE(machine.identical(0, d));
  }
  EXPECT_GT(machine.transfer_time(0, 1, 1e6), 0);
}

TEST(RankAuto, AMachineFileOfAnotherDeviceCountIsRefusedNamingBothCounts) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("rank_auto_" + std::to_string(getpid()) + ".json"))
          .string();
  std::ofstream(path) << R"({"devices": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    "bandwidth": [[0, 1e9, 1e9], [1e9, 0, 1e9], [1e9, 1e9, 0]],
    "latency": [[0, 1e-4, 1e-4], [1e-4, 0, 1e-4], [1e-4, 1e-4, 0]]})";
  RankAutoOptions options = static_options();
  options.machine = path;
  EXPECT_EQ(rank_auto_machine(options, 3).size(), 3u);
  try {
    plan_rank_candidates(branchy(), options, 2);
    FAIL() << "3 devices for 2 ranks";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": the machine file names 3 device(s), but 2 ranks "
                                           "were started"));
    EXPECT_THAT(e.what(), HasSubstr("mpirun -np 3"));
  }
  std::filesystem::remove(path);
}

TEST(RankAuto, TheCandidatesTravelAsTextAndBack) {
  const Graph graph = branchy();
  const std::vector<RankCandidate> sent = plan_rank_candidates(graph, static_options(), 2);
  const std::vector<RankCandidate> received = rank_candidates_from_text(rank_candidates_text(sent));
  ASSERT_EQ(received.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(received[i].role, sent[i].role);
    EXPECT_EQ(received[i].strategy, sent[i].strategy);
    EXPECT_EQ(received[i].configuration, sent[i].configuration);
    EXPECT_EQ(received[i].plan, sent[i].plan);
  }
  EXPECT_THAT([] { rank_candidates_from_text("not json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("rank 0's candidate plans")));
  EXPECT_THAT([] { rank_candidates_from_text("[]"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("none")));
  EXPECT_THAT([] { rank_candidates_from_text(R"([{"role": "choice"}])"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("rank 0's candidate plans")));
}

}  // namespace
}  // namespace cleave
