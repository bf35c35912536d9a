// The host hand-off calibration: the fit on synthetic chain timings, and its cache file.
#include "cost/hand_off_calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/error.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// What chains would take on a host whose links are `links`, nodes 1 us (small) and 20 us (large)
// on the sequential executor.
std::vector<ChainTiming> timings_of(const HostLinks& links) {
  struct Chain {
    int tasks;
    double bytes;
    double node;
  };
  std::vector<ChainTiming> timings;
  for (const auto& [tasks, bytes, node] :
       std::vector<Chain>{{8, 64.0, 1e-6}, {32, 64.0, 1e-6}, {12, 262144.0, 20e-6}}) {
    ChainTiming timing;
    timing.tasks = tasks;
    timing.value_bytes = bytes;
    timing.sequential_seconds = tasks * node;
    timing.one_worker_seconds =
        timing.sequential_seconds + links.run_seconds + tasks * links.task_seconds;
    const double remote = bytes > 4096 ? bytes / links.bandwidth : 0.0;
    timing.alternating_seconds = timing.one_worker_seconds + (tasks - 1) * (links.latency + remote);
    timings.push_back(timing);
  }
  return timings;
}

HostLinks made_up_links() {
  HostLinks links;
  links.latency = 0.7e-6;
  links.bandwidth = 30e9;
  links.task_seconds = 0.3e-6;
  links.run_seconds = 12e-6;
  return links;
}

TEST(HandOffFit, RecoversTheCostsTheTimingsWereMadeWith) {
  const HostLinks truth = made_up_links();
  const HostLinks fitted = fit_host_links(timings_of(truth));
  EXPECT_NEAR(fitted.latency, truth.latency, 1e-12);
  EXPECT_NEAR(fitted.bandwidth, truth.bandwidth, 1e-6 * truth.bandwidth);
  EXPECT_NEAR(fitted.task_seconds, truth.task_seconds, 1e-12);
  EXPECT_NEAR(fitted.run_seconds, truth.run_seconds, 1e-12);
  EXPECT_EQ(fitted.source, kCalibratedHostLinks);
}

TEST(HandOffFit, AReaderThatPaysNothingForRemoteLinesGetsTheLargestBandwidth) {
  HostLinks truth = made_up_links();
  std::vector<ChainTiming> timings = timings_of(truth);
  // The large chain's hops cost only the latency.
  ChainTiming& large = timings.back();
  large.alternating_seconds = large.one_worker_seconds + (large.tasks - 1) * truth.latency;
  EXPECT_DOUBLE_EQ(fit_host_links(timings).bandwidth, 1e13);
}

TEST(HandOffFit, ACheaperThreadExecutorIsNoNegativeCost) {
  HostLinks truth = made_up_links();
  std::vector<ChainTiming> timings = timings_of(truth);
  for (ChainTiming& timing : timings) {
    timing.one_worker_seconds = timing.sequential_seconds * 0.9;
    timing.alternating_seconds = timing.one_worker_seconds * 0.9;
  }
  const HostLinks fitted = fit_host_links(timings);
  EXPECT_EQ(fitted.task_seconds, 0);
  EXPECT_EQ(fitted.latency, 0);
  EXPECT_GE(fitted.run_seconds, 0);
}

TEST(HandOffFit, OneChainLengthIsRefused) {
  std::vector<ChainTiming> timings = timings_of(made_up_links());
  timings[1].tasks = timings[0].tasks;
  try {
    fit_host_links(timings);
    FAIL() << "one length fitted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("at least two lengths"));
  }
}

TEST(HandOffFit, NoLargeValueChainIsRefused) {
  std::vector<ChainTiming> timings = timings_of(made_up_links());
  timings.pop_back();
  EXPECT_THROW(fit_host_links(timings), Error);
}

TEST(HandOffFit, ANonPositiveTimeIsRefusedWithItsChain) {
  std::vector<ChainTiming> timings = timings_of(made_up_links());
  timings[1].alternating_seconds = 0;
  try {
    fit_host_links(timings);
    FAIL() << "a zero time fitted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a chain of 32 tasks"));
  }
}

class HandOffCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_.directory = (fs::temp_directory_path() /
                        ("cleave_hand_off_" + std::to_string(::getpid()) + "_" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                           .string();
    fs::remove_all(cache_.directory);
    cache_.warn = [this](const std::string& line) { warnings_.push_back(line); };
  }
  void TearDown() override { fs::remove_all(cache_.directory); }

  HostLinks links() {
    return calibrated_host_links(cache_, [this] {
      ++measurements_;
      return timings_of(made_up_links());
    });
  }
  fs::path file() const { return fs::path(cache_.directory) / (hand_off_cache_key() + ".json"); }
  void write(const std::string& text) const {
    fs::create_directories(cache_.directory);
    std::ofstream(file()) << text;
  }

  PeakRateCache cache_;
  std::vector<std::string> warnings_;
  int measurements_ = 0;
};

TEST_F(HandOffCacheTest, TheFirstUseMeasuresAndLaterOnesReadTheFile) {
  const HostLinks first = links();
  EXPECT_EQ(measurements_, 1);
  ASSERT_TRUE(fs::exists(file()));
  const HostLinks again = links();
  EXPECT_EQ(measurements_, 1);
  EXPECT_DOUBLE_EQ(again.latency, first.latency);
  EXPECT_DOUBLE_EQ(again.bandwidth, first.bandwidth);
  EXPECT_DOUBLE_EQ(again.task_seconds, first.task_seconds);
  EXPECT_DOUBLE_EQ(again.run_seconds, first.run_seconds);
  EXPECT_EQ(again.source, kCalibratedHostLinks);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(HandOffCacheTest, TheFileKeepsTheTimingsItWasFittedTo) {
  links();
  std::ifstream in(file());
  const nlohmann::json json = nlohmann::json::parse(in);
  EXPECT_EQ(json["timings"].size(), 3u);
  EXPECT_EQ(json["timings"][1]["tasks"], 32);
  EXPECT_TRUE(json.contains("spin_count"));
}

TEST_F(HandOffCacheTest, AFileThatIsNotJsonIsMeasuredAgainWithAWarning) {
  write("{not json");
  const HostLinks measured = links();
  EXPECT_EQ(measurements_, 1);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_THAT(warnings_[0], HasSubstr(file().string()));
  EXPECT_THAT(warnings_[0], HasSubstr("measuring again"));
  EXPECT_NEAR(measured.latency, made_up_links().latency, 1e-12);
  // Overwritten with the new measurement: read without a warning next time.
  links();
  EXPECT_EQ(measurements_, 1);
  EXPECT_EQ(warnings_.size(), 1u);
}

TEST_F(HandOffCacheTest, ANegativeLatencyIsMeasuredAgainNamingTheField) {
  nlohmann::json json = host_links_to_json(made_up_links(), {});
  json["latency_seconds"] = -1;
  write(json.dump());
  links();
  EXPECT_EQ(measurements_, 1);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_THAT(warnings_[0], HasSubstr("latency_seconds"));
}

// The probe runs its chains on the real executors: one timing per chain, each positive.
TEST(HandOffProbe, TimesEveryChainOnThisHost) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "needs two cores";
  HandOffProbe probe;
  probe.small_tasks = {2, 3};
  probe.large_tasks = 2;
  probe.large_bytes = 8192;
  probe.rounds = 1;
  const std::vector<ChainTiming> timings = measure_hand_off(probe);
  ASSERT_EQ(timings.size(), 3u);
  EXPECT_EQ(timings[1].tasks, 3);
  EXPECT_EQ(timings[2].value_bytes, 8192);
  for (const ChainTiming& timing : timings) {
    EXPECT_GT(timing.sequential_seconds, 0);
    EXPECT_GT(timing.one_worker_seconds, 0);
    EXPECT_GT(timing.alternating_seconds, 0);
  }
}

// On one core the two workers would take turns: the probe refuses rather than fit that.
TEST(HandOffProbe, OneCoreIsRefusedWithTheCount) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  std::string message;
  try {
    measure_hand_off();
  } catch (const Error& e) {
    message = e.what();
  }
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_THAT(message, HasSubstr("needs two cores"));
  EXPECT_THAT(message, HasSubstr("may use 1"));
}

TEST(HandOffText, NamesTheSourceAndEveryNumber) {
  HostLinks links = made_up_links();
  links.source = kCalibratedHostLinks;
  EXPECT_EQ(host_links_text(links),
            "calibrated host hand-off: latency 0.7 us, 30 GB/s, 0.3 us per task, 12 us per run");
}

}  // namespace
}  // namespace cleave
