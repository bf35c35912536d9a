// A cached profile is reused only on a host as fast as when it was made (the reference kernel).
#include "cost/profile_cache.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "ir/text.h"
#include "support/error.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

Graph small_graph() {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,8,16,16]) {
  %a = Relu(%x)
  %y = Sigmoid(%a)
  return %y
}
)");
  return graph;
}

class ProfileCache : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("cleave_profile_cache_test_" +
                  std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    options_ = profile_options(2);
    options_.repeat = 3;
    options_.warmup = 1;
    options_.cache_directory = directory_.string();
    options_.cores_free = [](int) { return true; };
    options_.reuse = ProfileReuse::kCheck;
    options_.host_conditions = [this](int threads) {
      ++checks_;
      return ProfileConditions{reference_, threads, 0.5};
    };
    options_.progress = [this](const std::string& line) { progress_.push_back(line); };
    // The check runs whatever the load average says, unless a test turns the quiet rule on.
    options_.quiet_load_average = 0;
    options_.load_now = [this] { return load_now_; };
    // The reuse decision alone: a reused table's level check (profile_level_test.cc) would
    // rescale the times compared here.
    options_.level.when = LevelCheck::kOff;
  }
  void TearDown() override { fs::remove_all(directory_); }

  bool said(const std::string& text) const {
    return std::any_of(progress_.begin(), progress_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  }
  fs::path cached() const { return *fs::directory_iterator(directory_); }
  nlohmann::json cached_json() const {
    std::ifstream in(cached());
    return nlohmann::json::parse(in);
  }

  fs::path directory_;
  ProfileOptions options_;
  double reference_ = 1e-3;
  double load_now_ = 0.5;
  int checks_ = 0;
  std::vector<std::string> progress_;
};

TEST_F(ProfileCache, AProfileRecordsTheHostsSpeedWhenItWasMade) {
  const CostTable table = profile_costs(small_graph(), options_);
  ASSERT_TRUE(table.conditions.has_value());
  EXPECT_DOUBLE_EQ(table.conditions->reference_seconds, 1e-3);
  EXPECT_EQ(table.conditions->threads, 2);
  EXPECT_EQ(table.cache_use.outcome, "measured");
  const nlohmann::json json = cached_json();
  EXPECT_DOUBLE_EQ(json["conditions"]["reference_seconds"].get<double>(), 1e-3);
  EXPECT_EQ(json["conditions"]["threads"], 2);
  EXPECT_DOUBLE_EQ(json["conditions"]["load_average"].get<double>(), 0.5);
}

TEST_F(ProfileCache, AnEntryWithinTheToleranceIsReused) {
  const Graph graph = small_graph();
  const CostTable first = profile_costs(graph, options_);
  reference_ = 1.2e-3;  // 1.2x: within 1.25x.
  progress_.clear();
  const CostTable second = profile_costs(graph, options_);
  EXPECT_EQ(second.cache_use.outcome, "reused");
  ASSERT_TRUE(second.cache_use.now.has_value());
  EXPECT_DOUBLE_EQ(second.cache_use.now->reference_seconds, 1.2e-3);
  EXPECT_EQ(second.run_seconds, first.run_seconds);
  EXPECT_TRUE(said("reused")) << progress_.front();
  EXPECT_DOUBLE_EQ(cached_json()["conditions"]["reference_seconds"].get<double>(), 1e-3);
}

TEST_F(ProfileCache, AnEntryMadeQuietIsReusedUncheckedWhileTheHostIsQuiet) {
  options_.quiet_load_average = 1.0;  // Recorded 0.5 (host_conditions), 0.5 now.
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  const int checks_when_made = checks_;
  reference_ = 0.5e-3;  // The kernel would say twice as fast: it is not run.
  const CostTable second = profile_costs(graph, options_);
  EXPECT_EQ(checks_, checks_when_made);
  EXPECT_EQ(second.cache_use.outcome, "reused");
  EXPECT_FALSE(second.cache_use.now.has_value());
  EXPECT_NE(second.cache_use.reason.find("not checked"), std::string::npos)
      << second.cache_use.reason;
}

TEST_F(ProfileCache, ALoadedHostNowRunsTheCheckEvenForAnEntryMadeQuiet) {
  options_.quiet_load_average = 1.0;
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  const int checks_when_made = checks_;
  load_now_ = 2.5;
  reference_ = 0.5e-3;
  const CostTable again = profile_costs(graph, options_);
  EXPECT_EQ(checks_, checks_when_made + 1);
  EXPECT_EQ(again.cache_use.outcome, "re-measured");
}

TEST_F(ProfileCache, AnEntryMadeUnderLoadIsCheckedOnAQuietHost) {
  options_.quiet_load_average = 0.4;  // The recorded 0.5 is not quiet; 0.1 now is.
  load_now_ = 0.1;
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  const int checks_when_made = checks_;
  reference_ = 0.5e-3;
  const CostTable again = profile_costs(graph, options_);
  EXPECT_EQ(checks_, checks_when_made + 1);
  EXPECT_EQ(again.cache_use.outcome, "re-measured");
}

TEST_F(ProfileCache, AnEntryMadeOnASlowerHostIsMadeAgainAndSaysWhy) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  reference_ = 0.5e-3;  // Twice as fast now: the entry was made under load.
  progress_.clear();
  const CostTable again = profile_costs(graph, options_);
  EXPECT_EQ(again.cache_use.outcome, "re-measured");
  EXPECT_NE(again.cache_use.reason.find("0.500 ms"), std::string::npos) << again.cache_use.reason;
  EXPECT_NE(again.cache_use.reason.find("1.000 ms"), std::string::npos) << again.cache_use.reason;
  EXPECT_TRUE(said("measuring again"));
  EXPECT_FALSE(said("reused"));
  // The new entry records the speed it was made at, so the next process reuses it.
  EXPECT_DOUBLE_EQ(cached_json()["conditions"]["reference_seconds"].get<double>(), 0.5e-3);
  progress_.clear();
  EXPECT_EQ(profile_costs(graph, options_).cache_use.outcome, "reused");
}

TEST_F(ProfileCache, AnEntryMadeOnAFasterHostIsMadeAgain) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  reference_ = 1.3e-3;  // 1.3x slower now: past 1.25x.
  EXPECT_EQ(profile_costs(graph, options_).cache_use.outcome, "re-measured");
}

TEST_F(ProfileCache, AlwaysReusesWithoutTheCheckAndNeverMeasuresAgain) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  reference_ = 5e-3;
  options_.reuse = ProfileReuse::kAlways;
  const int before = checks_;
  const CostTable reused = profile_costs(graph, options_);
  EXPECT_EQ(reused.cache_use.outcome, "reused");
  EXPECT_EQ(checks_, before) << "no reference kernel timed";
  options_.reuse = ProfileReuse::kNever;
  reference_ = 1e-3;
  progress_.clear();
  const CostTable measured = profile_costs(graph, options_);
  EXPECT_EQ(measured.cache_use.outcome, "re-measured");
  EXPECT_EQ(measured.cache_use.reason, "CLEAVE_PROFILE_REUSE=never");
  EXPECT_TRUE(said("measuring again"));
}

// A table cached before the conditions were recorded: made again under the check, with the
// reason; reused as it is when told to.
TEST_F(ProfileCache, AnOlderEntryWithoutConditionsIsMadeAgainUnderTheCheck) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  nlohmann::json json = cached_json();
  json.erase("conditions");
  std::ofstream(cached()) << json.dump();
  options_.reuse = ProfileReuse::kAlways;
  const CostTable reused = profile_costs(graph, options_);
  EXPECT_EQ(reused.cache_use.outcome, "reused");
  EXPECT_FALSE(reused.conditions.has_value());
  options_.reuse = ProfileReuse::kCheck;
  progress_.clear();
  const CostTable again = profile_costs(graph, options_);
  EXPECT_EQ(again.cache_use.outcome, "re-measured");
  EXPECT_TRUE(said("no record of the host's speed")) << progress_.front();
  EXPECT_TRUE(cached_json().contains("conditions"));
}

// Damaged conditions: the entry is set aside with the field named, and made again; no crash.
TEST_F(ProfileCache, DamagedConditionsAreNamedAndTheEntryMadeAgain) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  for (const nlohmann::json& bad :
       {nlohmann::json{{"reference_seconds", -1}, {"threads", 2}, {"load_average", 0.1}},
        nlohmann::json{{"reference_seconds", 0}, {"threads", 2}, {"load_average", 0.1}},
        nlohmann::json{{"threads", 2}, {"load_average", 0.1}}, nlohmann::json("fast")}) {
    nlohmann::json json = cached_json();
    json["conditions"] = bad;
    std::ofstream(cached()) << json.dump();
    progress_.clear();
    const CostTable again = profile_costs(graph, options_);
    EXPECT_EQ(again.cache_use.outcome, "re-measured") << bad;
    EXPECT_NE(again.cache_use.reason.find("conditions"), std::string::npos)
        << again.cache_use.reason;
    EXPECT_TRUE(said("cached table not used, measuring again")) << bad;
  }
}

// Without progress lines, an entry set aside is still told: on stderr.
TEST_F(ProfileCache, AnEntrySetAsideIsToldOnStderrWithoutProgress) {
  const Graph graph = small_graph();
  profile_costs(graph, options_);
  options_.progress = nullptr;
  reference_ = 3e-3;
  testing::internal::CaptureStderr();
  profile_costs(graph, options_);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("measuring again"), std::string::npos) << err;
  EXPECT_NE(err.find("3.00x"), std::string::npos) << err;
}

TEST(ProfileReuseSetting, ReadsTheVariableAndRefusesOtherValues) {
  const char* before = std::getenv("CLEAVE_PROFILE_REUSE");
  const std::string saved = before ? before : "";
  setenv("CLEAVE_PROFILE_REUSE", "check", 1);
  EXPECT_EQ(default_profile_reuse(), ProfileReuse::kCheck);
  setenv("CLEAVE_PROFILE_REUSE", "always", 1);
  EXPECT_EQ(default_profile_reuse(), ProfileReuse::kAlways);
  setenv("CLEAVE_PROFILE_REUSE", "never", 1);
  EXPECT_EQ(default_profile_reuse(), ProfileReuse::kNever);
  setenv("CLEAVE_PROFILE_REUSE", "sometimes", 1);
  try {
    default_profile_reuse();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CLEAVE_PROFILE_REUSE"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sometimes"), std::string::npos);
  }
  unsetenv("CLEAVE_PROFILE_REUSE");
  EXPECT_EQ(default_profile_reuse(), ProfileReuse::kCheck);
  if (before) setenv("CLEAVE_PROFILE_REUSE", saved.c_str(), 1);
}

TEST(SameHostSpeed, WithinAFactorEitherWayOnTheSameThreads) {
  const ProfileConditions then{1e-3, 2, 0.1};
  EXPECT_TRUE(same_host_speed(then, {1.25e-3, 2, 3.0}, 0.25));
  EXPECT_TRUE(same_host_speed(then, {0.8e-3, 2, 3.0}, 0.25));
  EXPECT_FALSE(same_host_speed(then, {1.26e-3, 2, 0.1}, 0.25));
  EXPECT_FALSE(same_host_speed(then, {0.79e-3, 2, 0.1}, 0.25));
  EXPECT_FALSE(same_host_speed(then, {1e-3, 1, 0.1}, 0.25)) << "another team";
}

// The real kernel: a positive time, and the caller's OpenMP thread count left alone.
TEST(ReferenceKernel, TimesAFixedProductOnAThreadOfItsOwn) {
  omp_set_num_threads(1);
  const ProfileConditions now = measure_profile_conditions(2);
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_GT(now.reference_seconds, 0.0);
  EXPECT_LT(now.reference_seconds, 1.0);
  EXPECT_EQ(now.threads, 2);
  EXPECT_TRUE(now.load_average >= 0 || now.load_average == -1);
}

}  // namespace
}  // namespace cleave
