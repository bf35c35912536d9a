// Rank 0's `--plan auto` for MPI ranks: the candidates it sends (choice, runner-up of another
// family, all on rank 0), each a plan file of one worker per rank, and the machine it plans on.
#include "pipeline/rank_auto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../spatial/split_testing.h"
#include "modelgen/inception.h"
#include "spatial/split_machine.h"
#include "spatial/split_recipe.h"
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

Graph conv_chain() {
  return testing::tall_conv_chain();
}

class RankAutoFileTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  // Two ranks linked at `bandwidth` bytes/s, each of `memory` bytes (0: not said).
  std::string machine(double bandwidth, double memory = 0, const std::string& ends = "") {
    const std::string device = memory > 0 ? fmt::format(R"(, "memory_bytes": {})", memory) : "";
    std::ofstream(path_) << fmt::format(
        R"({{"devices": [{{"name": "rank0"{0}}}, {{"name": "rank1"{0}}}],
             "bandwidth": [[0, {1}], [{1}, 0]], "latency": [[0, 1e-7], [1e-7, 0]]{2}}})",
        device, bandwidth, ends);
    return path_;
  }
  const std::string path_ =
      (std::filesystem::temp_directory_path() / ("rank_auto_" + std::to_string(getpid()) + ".json"))
          .string();
};

const RankCandidate* with_role(const std::vector<RankCandidate>& candidates,
                               const std::string& role) {
  for (const RankCandidate& candidate : candidates)
    if (candidate.role == role) return &candidate;
  return nullptr;
}

// Fixed costs and links that cost next to nothing: the split is the fastest row of the table,
// and it is sent as a recipe each rank makes the partitioned graph of its plan from.
TEST_F(RankAutoFileTest, ASplitPredictedFastestIsTimedOnTheRanks) {
  const Graph graph = conv_chain();
  RankAutoOptions options = static_options();
  options.machine = machine(1e12);
  const std::vector<RankCandidate> candidates = plan_rank_candidates(graph, options, 2);
  const RankCandidate* split = with_role(candidates, "split");
  ASSERT_NE(split, nullptr) << rank_candidates_text(candidates);
  EXPECT_EQ(candidates.front().role, "choice");
  EXPECT_THAT(split->configuration, ::testing::StartsWith("split over 2 devices along h"));
  EXPECT_TRUE(split->dropped.empty());
  // Its row is the fastest prediction of the choice's table.
  double spatial = 0, fastest_other = INFINITY;
  for (const nlohmann::json& row : candidates[0].plan.at("candidates")) {
    if (row["predicted_seconds"].is_null()) continue;
    if (row["family"] == "spatial") {
      spatial = row["predicted_seconds"].get<double>();
      EXPECT_THAT(row["rejected"].get<std::string>(), HasSubstr("timed on the ranks"));
    } else {
      fastest_other = std::min(fastest_other, row["predicted_seconds"].get<double>());
    }
  }
  EXPECT_GT(spatial, 0);
  EXPECT_LT(spatial, fastest_other);
  // A rank makes the split again from the model it loaded, and its plan runs a part on each.
  ASSERT_FALSE(split->split.is_null());
  const Graph partitioned = candidate_graph(conv_chain(), *split);
  EXPECT_GT(partitioned.node_count(), graph.node_count());
  const ModelPlan plan = model_plan_from_json(split->plan, partitioned, "split", false);
  EXPECT_EQ(plan.family, "spatial");
  ASSERT_EQ(plan.plan.order.size(), 2u);
  EXPECT_FALSE(plan.plan.order[1].empty());
  ASSERT_EQ(split->memory_bytes.size(), 2u);
  EXPECT_GT(split->memory_bytes[1], 0);
  // A task plan runs over the model itself.
  EXPECT_EQ(candidate_graph(conv_chain(), candidates[0]).node_count(), graph.node_count());
  // The recipe travels with the rest.
  const std::vector<RankCandidate> received =
      rank_candidates_from_text(rank_candidates_text(candidates));
  const RankCandidate* sent_back = with_role(received, "split");
  ASSERT_NE(sent_back, nullptr);
  EXPECT_EQ(sent_back->split, split->split);
  EXPECT_EQ(sent_back->memory_bytes, split->memory_bytes);
}

// Links so slow that the split is predicted far slower than the choice: not timed.
TEST_F(RankAutoFileTest, ASplitPredictedFarSlowerIsNotTimed) {
  RankAutoOptions options = static_options();
  options.machine = machine(1e3);
  const std::vector<RankCandidate> candidates = plan_rank_candidates(conv_chain(), options, 2);
  EXPECT_EQ(with_role(candidates, "split"), nullptr);
  bool listed = false;
  for (const nlohmann::json& row : candidates[0].plan.at("candidates")) {
    if (row["family"] != "spatial") continue;
    listed = true;
    EXPECT_THAT(row["rejected"].get<std::string>(), HasSubstr("not within 1.25x of")) << row;
  }
  EXPECT_TRUE(listed);
}

// The search priced each halo's receiving end (copies at the endpoint's rate, a wait's wake-up),
// which decides which tiles fuse: the recipe carries them, so every rank rebuilds rank 0's split.
TEST_F(RankAutoFileTest, ASplitRecipeCarriesTheMachinesMessageEnds) {
  const Graph graph = conv_chain();
  RankAutoOptions options = static_options();
  options.machine = machine(1e12, 0, R"(, "endpoint_bandwidth": 1e8, "wake_seconds": 5e-5)");
  const std::vector<RankCandidate> candidates = plan_rank_candidates(graph, options, 2);
  const RankCandidate* split = with_role(candidates, "split");
  ASSERT_NE(split, nullptr);
  const nlohmann::json& ends = split->split.at("cost").at("message_ends");
  EXPECT_EQ(ends.at("endpoint_bandwidth"), 1e8);
  EXPECT_EQ(ends.at("wake_seconds"), 5e-5);
  EXPECT_EQ(ends.at("device_speeds"), nlohmann::json({1.0, 1.0}));
  const SplitModelOptions read = split_recipe_from_json(split->split, graph, "recipe");
  ASSERT_NE(read.cost.machine, nullptr);
  EXPECT_GT(read.cost.receive_seconds(0, 1, 1e5), read.cost.transfer_seconds(0, 1, 1e5));
  EXPECT_EQ(split_recipe_json(read), split->split);
  EXPECT_NO_THROW(candidate_graph(graph, *split));
  // Without them the rebuilt split is another one than rank 0's.
  RankCandidate without = *split;
  without.split["cost"].erase("message_ends");
  EXPECT_THROW(candidate_graph(graph, without), Error);
}

TEST_F(RankAutoFileTest, ASplitRecipeRoundTripsAndABadOneIsRefusedNamingTheField) {
  const Graph graph = conv_chain();
  RankAutoOptions options = static_options();
  options.machine = machine(1e12);
  const std::vector<RankCandidate> candidates = plan_rank_candidates(graph, options, 2);
  const RankCandidate* split = with_role(candidates, "split");
  ASSERT_NE(split, nullptr);
  const SplitModelOptions read = split_recipe_from_json(split->split, graph, "recipe");
  EXPECT_EQ(split_recipe_json(read), split->split);
  EXPECT_TRUE(read.figures_only);

  const auto refused = [&](nlohmann::json recipe, const std::string& why) {
    RankCandidate bad = *split;
    bad.split = std::move(recipe);
    try {
      candidate_graph(conv_chain(), bad);
      ADD_FAILURE() << "accepted: " << bad.split.dump();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("--plan auto's split (split over 2 devices"));
      EXPECT_THAT(e.what(), HasSubstr(why));
    }
  };
  nlohmann::json recipe = split->split;
  recipe.erase("fuse");
  refused(recipe, "fuse");
  recipe = split->split;
  recipe["dim"] = "q";
  refused(recipe, "dim: expected \"h\", \"w\", \"c\", \"hw\" or \"none\"");
  recipe = split->split;
  recipe["layers"]["no_such_node"] = {{"shares", {1, 1}}};
  refused(recipe, "no node named \"no_such_node\"");
  recipe = split->split;
  recipe["speeds"] = {1, 1, 1};
  refused(recipe, "speeds: expected 2 entries (one per machine) or none");
  refused(nlohmann::json("not a recipe"), "expected an object");
  // Well formed, but another split than rank 0's: its partitioned graph differs.
  recipe = split->split;
  recipe["speeds"] = {1, 3};
  for (auto& [name, layer] : recipe["layers"].items()) layer["shares"] = {1, 3};
  refused(recipe, "is not the one rank 0 made");
}

// Every rank holds every candidate at once: with memories that fit the choice alone, the
// others are dropped, the largest first, and the choice is kept.
TEST_F(RankAutoFileTest, CandidatesOverARanksMemoryAreDroppedButNeverTheChoice) {
  RankAutoOptions options = static_options();
  options.machine = machine(1e12);
  std::vector<std::string> lines;
  options.log = [&](const std::string& line) { lines.push_back(line); };
  const std::vector<RankCandidate> roomy = plan_rank_candidates(branchy(), options, 2);
  ASSERT_GE(roomy.size(), 3u);
  for (const RankCandidate& candidate : roomy) EXPECT_TRUE(candidate.dropped.empty());
  const std::vector<double>& choice = roomy.front().memory_bytes;
  ASSERT_EQ(choice.size(), 2u);
  const double most = std::max(choice[0], choice[1]);
  ASSERT_GT(most, 0);

  options.machine = machine(1e12, most * 1.02);
  lines.clear();
  const std::vector<RankCandidate> tight = plan_rank_candidates(branchy(), options, 2);
  ASSERT_GE(tight.size(), 2u);
  EXPECT_EQ(tight.front().role, "choice");
  EXPECT_TRUE(tight.front().dropped.empty());
  EXPECT_FALSE(tight.front().plan.is_null());
  for (std::size_t i = 1; i < tight.size(); ++i) {
    EXPECT_THAT(tight[i].dropped, HasSubstr("MiB on rank")) << tight[i].configuration;
    EXPECT_TRUE(tight[i].plan.is_null()) << "a dropped plan does not travel";
  }
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.rfind("ranks: dropped ", 0) == 0;
  }));
  // The dropped travel as names, and the ranks read them back.
  const std::vector<RankCandidate> received =
      rank_candidates_from_text(rank_candidates_text(tight));
  ASSERT_EQ(received.size(), tight.size());
  for (std::size_t i = 0; i < tight.size(); ++i) EXPECT_EQ(received[i].dropped, tight[i].dropped);
}

// A rank's memory at its worst moment is the candidates' steady state and the load-time bytes
// of one being made (the model's weights as loaded, its own beside their packed copies): a
// memory that holds every candidate's steady state but not that peak drops one, and a memory
// that holds the peak drops none.
TEST_F(RankAutoFileTest, CandidatesFittingOnlyOnceLoadedAreDropped) {
  RankAutoOptions options = static_options();
  options.machine = machine(1e12);
  const std::vector<RankCandidate> roomy = plan_rank_candidates(branchy(), options, 2);
  ASSERT_GE(roomy.size(), 3u);
  const Graph graph = branchy();
  double model_bytes = 0;
  for (ValueId id : graph.initializers())
    if (graph.value(id).initializer->bytes)
      model_bytes += static_cast<double>(graph.value(id).initializer->bytes->size());
  ASSERT_GT(model_bytes, 0);
  double steady = 0, peak = 0;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    double sum = 0, loading = 0;
    for (const RankCandidate& candidate : roomy) {
      ASSERT_EQ(candidate.load_bytes.size(), 2u) << candidate.configuration;
      // The whole model as loaded at least: every rank loads it for every candidate.
      EXPECT_GE(candidate.load_bytes[rank], model_bytes) << candidate.configuration;
      sum += candidate.memory_bytes[rank];
      loading = std::max(loading, candidate.load_bytes[rank]);
    }
    steady = std::max(steady, sum);
    peak = std::max(peak, sum + loading);
  }
  ASSERT_GT(peak, steady * 1.05);

  options.machine = machine(1e12, steady * 1.02);
  const std::vector<RankCandidate> tight = plan_rank_candidates(branchy(), options, 2);
  EXPECT_TRUE(tight.front().dropped.empty());
  EXPECT_TRUE(std::any_of(tight.begin(), tight.end(), [](const RankCandidate& candidate) {
    return candidate.dropped.find("while the last is made") != std::string::npos;
  }));

  options.machine = machine(1e12, peak * 1.02);
  for (const RankCandidate& candidate : plan_rank_candidates(branchy(), options, 2))
    EXPECT_TRUE(candidate.dropped.empty()) << candidate.configuration << ": " << candidate.dropped;
  // The load-time bytes travel with the plans.
  const std::vector<RankCandidate> received =
      rank_candidates_from_text(rank_candidates_text(roomy));
  for (std::size_t i = 0; i < roomy.size(); ++i)
    EXPECT_EQ(received[i].load_bytes, roomy[i].load_bytes);
}

TEST(RankAuto, WithoutAMachineFilesMemoryARankHasItsShareOfTheHosts) {
  const Machine machine = ranks_without_machine_file(2, 1);
  const std::vector<double> memory = rank_memory_bytes(machine, 2);
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_GT(memory[0], 0);
  EXPECT_EQ(memory[0], memory[1]);
  Machine bounded = machine;
  bounded.devices[1].memory_bytes = 1e6;
  EXPECT_EQ(rank_memory_bytes(bounded, 2)[1], 1e6);
}

}  // namespace
}  // namespace cleave
