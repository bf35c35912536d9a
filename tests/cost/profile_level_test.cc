// The level check: the sequential plan's scripted times scale a table, within bounds, recorded.
#include "cost/profile_level.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "ir/text.h"
#include "support/error.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// A profiled table of two nodes at 1 and 2 threads, with busy-neighbour times.
CostTable profiled_table() {
  CostTable table;
  table.source = "profile";
  table.context = "in-context";
  table.nodes.resize(2);
  table.nodes[0].seconds = {4e-3, 2.5e-3};
  table.nodes[0].busy_seconds = 5e-3;
  table.nodes[0].output_bytes = 1024;
  table.nodes[0].flops = 1e6;
  table.nodes[1].seconds = {6e-3, 3.5e-3};
  table.nodes[1].busy_seconds = 7e-3;
  table.run_seconds = {10e-3, 6e-3};
  table.busy_run_seconds = 12e-3;
  return table;
}

// Scripted rounds: each call returns the next time (the last one again past the end).
class ProfileLevelCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.when = LevelCheck::kReused;
    options_.time_round = [this] {
      const double seconds = times_[std::min(calls_, times_.size() - 1)];
      ++calls_;
      return seconds;
    };
  }
  ProfileLevel check(CostTable& table) {
    return check_profile_level(table, options_,
                               [this](const std::string& line) { warnings_.push_back(line); });
  }

  LevelCheckOptions options_;
  std::vector<double> times_;
  std::size_t calls_ = 0;
  std::vector<std::string> warnings_;
};

TEST_F(ProfileLevelCheck, EveryTimeIsScaledByMeasuredOverPredicted) {
  times_ = {6.6e-3};  // The profile predicted 6 ms at 2 threads: 1.1x.
  CostTable table = profiled_table();
  const ProfileLevel level = check(table);
  ASSERT_TRUE(level.applied) << level.reason;
  EXPECT_NEAR(level.factor, 1.1, 1e-12);
  EXPECT_EQ(level.threads, 2);
  EXPECT_DOUBLE_EQ(level.predicted_seconds, 6e-3);
  EXPECT_DOUBLE_EQ(level.measured_seconds, 6.6e-3);
  EXPECT_NEAR(table.nodes[0].seconds[0], 4.4e-3, 1e-15);
  EXPECT_NEAR(table.nodes[1].seconds[1], 3.85e-3, 1e-15);
  EXPECT_NEAR(*table.nodes[0].busy_seconds, 5.5e-3, 1e-15);
  EXPECT_NEAR(table.run_seconds[0], 11e-3, 1e-15);
  EXPECT_NEAR(table.run_seconds[1], 6.6e-3, 1e-15);
  EXPECT_NEAR(table.busy_run_seconds, 13.2e-3, 1e-15);
  // Sizes are not times.
  EXPECT_DOUBLE_EQ(table.nodes[0].output_bytes, 1024);
  EXPECT_DOUBLE_EQ(table.nodes[0].flops, 1e6);
  ASSERT_TRUE(table.level.has_value());
  EXPECT_TRUE(table.level->applied);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(ProfileLevelCheck, TheMedianRoundSetsTheFactorNotAnOutlier) {
  times_ = {5.7e-3, 30e-3, 5.4e-3, 5.5e-3, 5.6e-3};
  CostTable table = profiled_table();
  const ProfileLevel level = check(table);
  ASSERT_TRUE(level.applied);
  EXPECT_EQ(level.rounds_seconds.size(), 5u);
  EXPECT_DOUBLE_EQ(level.measured_seconds, 5.6e-3);
  EXPECT_NEAR(table.run_seconds[1], 5.6e-3, 1e-15);
}

TEST_F(ProfileLevelCheck, ShortRunsStopAtTheMostRounds) {
  times_ = {6e-3};
  CostTable table = profiled_table();
  check(table);
  EXPECT_EQ(calls_, 5u);
}

TEST_F(ProfileLevelCheck, LongRunsStopAtTheLeastRoundsOnceTheTimeIsSpent) {
  // A round costs twice its timed run: 3 x 2 x 0.2 s is past 0.5 s.
  times_ = {0.2};
  CostTable table = profiled_table();
  table.run_seconds = {0.3, 0.2};
  const ProfileLevel level = check(table);
  EXPECT_EQ(calls_, 3u);
  EXPECT_TRUE(level.applied);
  EXPECT_DOUBLE_EQ(level.factor, 1.0);
}

TEST_F(ProfileLevelCheck, AZeroMeasurementLeavesTheTableUnscaledWithAWarning) {
  times_ = {6.6e-3, 0.0};
  CostTable table = profiled_table();
  const ProfileLevel level = check(table);
  EXPECT_FALSE(level.applied);
  EXPECT_EQ(calls_, 2u);  // The bad round ends the check.
  EXPECT_DOUBLE_EQ(level.factor, 1.0);
  EXPECT_DOUBLE_EQ(table.run_seconds[1], 6e-3);
  EXPECT_DOUBLE_EQ(table.nodes[0].seconds[0], 4e-3);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("not a time"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("left as profiled"), std::string::npos) << warnings_[0];
  ASSERT_TRUE(table.level.has_value());
  EXPECT_FALSE(table.level->applied);
}

TEST_F(ProfileLevelCheck, NegativeOrNonFiniteMeasurementsLeaveTheTableUnscaled) {
  for (double bad :
       {-1e-3, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    times_ = {bad};
    calls_ = 0;
    warnings_.clear();
    CostTable table = profiled_table();
    const ProfileLevel level = check(table);
    EXPECT_FALSE(level.applied) << bad;
    EXPECT_DOUBLE_EQ(table.run_seconds[1], 6e-3) << bad;
    EXPECT_EQ(warnings_.size(), 1u) << bad;
    // JSON has no NaN or infinity: the round is written as null, and the file still parses.
    const nlohmann::json json = level_to_json(level);
    EXPECT_TRUE(nlohmann::json::accept(json.dump())) << bad;
  }
}

TEST_F(ProfileLevelCheck, AFactorPastTheBoundLeavesTheTableUnscaled) {
  times_ = {12e-3};  // 2x the prediction, past 1.5x.
  CostTable table = profiled_table();
  const ProfileLevel level = check(table);
  EXPECT_FALSE(level.applied);
  EXPECT_DOUBLE_EQ(level.measured_seconds, 12e-3);
  EXPECT_DOUBLE_EQ(table.run_seconds[1], 6e-3);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("2.00x"), std::string::npos) << warnings_[0];
  times_ = {3e-3};  // 0.5x: as far the other way.
  CostTable faster = profiled_table();
  EXPECT_FALSE(check(faster).applied);
  EXPECT_DOUBLE_EQ(faster.run_seconds[1], 6e-3);
}

TEST_F(ProfileLevelCheck, ATableWithoutWholeRunsIsNotChecked) {
  times_ = {6e-3};
  CostTable table = profiled_table();
  table.run_seconds.clear();
  const ProfileLevel level = check(table);
  EXPECT_FALSE(level.applied);
  EXPECT_EQ(calls_, 0u);
  EXPECT_EQ(warnings_.size(), 1u);
}

TEST_F(ProfileLevelCheck, TheLevelIsRecordedAsJsonAndText) {
  times_ = {6.6e-3};
  CostTable table = profiled_table();
  const ProfileLevel level = check(table);
  const nlohmann::json json = level_to_json(level);
  EXPECT_EQ(json["threads"], 2);
  EXPECT_NEAR(json["predicted_ms"].get<double>(), 6.0, 1e-9);
  EXPECT_NEAR(json["measured_ms"].get<double>(), 6.6, 1e-9);
  EXPECT_NEAR(json["factor"].get<double>(), 1.1, 1e-9);
  EXPECT_EQ(json["rounds"], 5);
  EXPECT_EQ(json["rounds_ms"].size(), 5u);
  EXPECT_TRUE(json["applied"].get<bool>());
  EXPECT_FALSE(json.contains("reason"));
  EXPECT_EQ(level_text(level),
            "sequential plan at 2 thread(s) measured 6.600 ms (median of 5 rounds) against the "
            "profile's 6.000 ms: every time x1.100");
}

// $CLEAVE_PROFILE_LEVEL, restored after each test.
class ProfileLevelEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* value = std::getenv("CLEAVE_PROFILE_LEVEL")) saved_ = value;
  }
  void TearDown() override {
    if (saved_) {
      setenv("CLEAVE_PROFILE_LEVEL", saved_->c_str(), 1);
    } else {
      unsetenv("CLEAVE_PROFILE_LEVEL");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(ProfileLevelEnvironment, ReusedTablesByDefaultEveryTableOrNoneWhenAsked) {
  unsetenv("CLEAVE_PROFILE_LEVEL");
  EXPECT_EQ(default_level_check(), LevelCheck::kReused);
  setenv("CLEAVE_PROFILE_LEVEL", "check", 1);
  EXPECT_EQ(default_level_check(), LevelCheck::kReused);
  setenv("CLEAVE_PROFILE_LEVEL", "always", 1);
  EXPECT_EQ(default_level_check(), LevelCheck::kAlways);
  setenv("CLEAVE_PROFILE_LEVEL", "off", 1);
  EXPECT_EQ(default_level_check(), LevelCheck::kOff);
  EXPECT_EQ(LevelCheckOptions{}.when, LevelCheck::kOff);
}

TEST_F(ProfileLevelEnvironment, AnyOtherValueIsAnErrorNamingTheVariable) {
  setenv("CLEAVE_PROFILE_LEVEL", "sometimes", 1);
  try {
    default_level_check();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CLEAVE_PROFILE_LEVEL"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sometimes"), std::string::npos) << e.what();
  }
}

// profile_costs checks a reused table's level and leaves the cached file as profiled.
class ProfileLevelOfACachedTable : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("cleave_profile_level_test_" +
                  std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    options_ = profile_options(2);
    options_.repeat = 3;
    options_.warmup = 1;
    options_.cache_directory = directory_.string();
    options_.cores_free = [](int) { return true; };
    options_.reuse = ProfileReuse::kAlways;
    options_.host_conditions = [](int threads) { return ProfileConditions{1e-3, threads, 0.5}; };
    options_.level.when = LevelCheck::kReused;
    options_.level.time_round = [this] {
      ++rounds_;
      return round_seconds_;
    };
  }
  void TearDown() override { fs::remove_all(directory_); }

  nlohmann::json cached_json() const {
    std::ifstream in(fs::directory_iterator(directory_)->path());
    return nlohmann::json::parse(in);
  }

  fs::path directory_;
  ProfileOptions options_;
  double round_seconds_ = 0;
  int rounds_ = 0;
};

Graph small_graph() {
  return parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,8,16,16]) {
  %a = Relu(%x)
  %y = Sigmoid(%a)
  return %y
}
)");
}

TEST_F(ProfileLevelOfACachedTable, AReusedTableIsScaledToTheSequentialPlanNow) {
  const Graph graph = small_graph();
  const CostTable made = profile_costs(graph, options_);
  EXPECT_FALSE(made.level.has_value());  // Measured now: its level is the host's.
  EXPECT_EQ(rounds_, 0);
  round_seconds_ = made.run_seconds.back() * 1.2;
  const CostTable reused = profile_costs(graph, options_);
  EXPECT_EQ(reused.cache_use.outcome, "reused");
  ASSERT_TRUE(reused.level.has_value());
  EXPECT_TRUE(reused.level->applied) << reused.level->reason;
  EXPECT_NEAR(reused.level->factor, 1.2, 1e-9);
  EXPECT_EQ(rounds_, 5);
  for (NodeId id : graph.node_ids())
    EXPECT_NEAR(reused.seconds(id, 2), made.seconds(id, 2) * 1.2, 1e-12);
  EXPECT_NEAR(reused.run_seconds.back(), round_seconds_, 1e-12);
  // The cache keeps the times as profiled.
  EXPECT_DOUBLE_EQ(cached_json()["run_seconds"][1].get<double>(), made.run_seconds[1]);
}

TEST_F(ProfileLevelOfACachedTable, AlwaysChecksATableMeasuredNowTooAndCachesItAsProfiled) {
  options_.level.when = LevelCheck::kAlways;
  round_seconds_ = 1.0;  // Far past any small graph's run: not applied, so the first is known.
  const Graph graph = small_graph();
  const CostTable made = profile_costs(graph, options_);
  ASSERT_TRUE(made.level.has_value());
  EXPECT_FALSE(made.level->applied);
  EXPECT_EQ(rounds_, 3);  // 3 rounds of 2 x 1 s: past 0.5 s.
  round_seconds_ = made.run_seconds.back() * 0.9;
  rounds_ = 0;
  const CostTable again = profile_costs(graph, options_);
  ASSERT_TRUE(again.level.has_value());
  EXPECT_TRUE(again.level->applied);
  EXPECT_NEAR(again.level->factor, 0.9, 1e-9);
  EXPECT_EQ(rounds_, 5);
  // The file holds the times as profiled, not as scaled.
  EXPECT_DOUBLE_EQ(cached_json()["run_seconds"][1].get<double>(), made.run_seconds[1]);
}

TEST_F(ProfileLevelOfACachedTable, OffLeavesAReusedTableAsProfiled) {
  options_.level.when = LevelCheck::kOff;
  const Graph graph = small_graph();
  const CostTable made = profile_costs(graph, options_);
  round_seconds_ = made.run_seconds.back() * 1.2;
  const CostTable reused = profile_costs(graph, options_);
  EXPECT_FALSE(reused.level.has_value());
  EXPECT_EQ(rounds_, 0);
  EXPECT_EQ(reused.run_seconds, made.run_seconds);
}

}  // namespace
}  // namespace cleave
