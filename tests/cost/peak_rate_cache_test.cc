// cached_peak_rates: rates kept on disk per CPU, ISA and thread count; a damaged file is
// measured again with a warning.
#include "cost/peak_rate_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace cleave {
namespace {

namespace fs = std::filesystem;

// Stands in for the probe: rates that depend on the thread count, and a count of calls.
struct FakeProbe {
  int calls = 0;
  PeakRates operator()(int threads) {
    ++calls;
    PeakRates rates;
    for (int t = 1; t <= threads; ++t) rates.flops_per_second.push_back(1e9 * t + calls);
    rates.bytes_per_second = 2e10 + calls;
    rates.seconds_per_op = 2e-6;
    return rates;
  }
};

class PeakRateCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_.directory = (fs::temp_directory_path() /
                        ("cleave_peak_rates_" + std::to_string(::getpid()) + "_" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                           .string();
    fs::remove_all(cache_.directory);
    cache_.warn = [this](const std::string& line) { warnings_.push_back(line); };
  }
  void TearDown() override { fs::remove_all(cache_.directory); }

  PeakRates rates(int threads) {
    return cached_peak_rates(threads, cache_, [this](int t) { return probe_(t); });
  }
  fs::path file(int threads) const {
    return fs::path(cache_.directory) / (peak_rate_cache_key(threads) + ".json");
  }
  void write(int threads, const std::string& text) const { std::ofstream(file(threads)) << text; }

  PeakRateCache cache_;
  FakeProbe probe_;
  std::vector<std::string> warnings_;
};

TEST_F(PeakRateCacheTest, FirstCallMeasuresAndWritesTheFile) {
  const PeakRates first = rates(2);
  EXPECT_EQ(probe_.calls, 1);
  EXPECT_TRUE(fs::exists(file(2)));
  EXPECT_EQ(first.flops_per_second.size(), 2u);
}

TEST_F(PeakRateCacheTest, CacheHitSkipsTheProbe) {
  const PeakRates first = rates(2);
  const PeakRates again = rates(2);
  EXPECT_EQ(probe_.calls, 1);
  EXPECT_EQ(again.flops_per_second, first.flops_per_second);
  EXPECT_EQ(again.bytes_per_second, first.bytes_per_second);
  EXPECT_EQ(again.seconds_per_op, first.seconds_per_op);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(PeakRateCacheTest, AnotherThreadCountIsMeasuredInItsOwnFile) {
  rates(1);
  const PeakRates two = rates(2);
  EXPECT_EQ(probe_.calls, 2);
  EXPECT_EQ(two.flops_per_second.size(), 2u);
  EXPECT_NE(peak_rate_cache_key(1), peak_rate_cache_key(2));
}

TEST_F(PeakRateCacheTest, BadJsonWarnsAndMeasuresAgain) {
  rates(2);
  write(2, "{\"format\": 1, \"flops");
  const PeakRates again = rates(2);
  EXPECT_EQ(probe_.calls, 2);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find(file(2).string()), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("measuring again"), std::string::npos) << warnings_[0];
  // Overwritten with the new measurement: the next call reads it.
  EXPECT_EQ(rates(2).flops_per_second, again.flops_per_second);
  EXPECT_EQ(probe_.calls, 2);
}

TEST_F(PeakRateCacheTest, NonPositiveRateWarnsAndMeasuresAgain) {
  rates(1);
  write(1,
        R"({"format": 1, "flops_per_second": [0], "bytes_per_second": 1e10,
            "seconds_per_op": 2e-6})");
  rates(1);
  EXPECT_EQ(probe_.calls, 2);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("flops_per_second[0]"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("positive"), std::string::npos) << warnings_[0];
}

TEST_F(PeakRateCacheTest, WrongThreadCountWarnsAndMeasuresAgain) {
  rates(2);
  write(2,
        R"({"format": 1, "flops_per_second": [1e9], "bytes_per_second": 1e10,
            "seconds_per_op": 2e-6})");
  EXPECT_EQ(rates(2).flops_per_second.size(), 2u);
  EXPECT_EQ(probe_.calls, 2);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("2 rates"), std::string::npos) << warnings_[0];
}

TEST_F(PeakRateCacheTest, UnwritableFolderStillReturnsTheMeasurement) {
  fs::create_directories(fs::path(cache_.directory).parent_path());
  std::ofstream(cache_.directory) << "a file where the folder should be";
  EXPECT_EQ(rates(1).flops_per_second.size(), 1u);
  EXPECT_EQ(probe_.calls, 1);
  fs::remove(cache_.directory);
}

}  // namespace
}  // namespace cleave
