// An emulated slower rank: CLEAVE_EMULATED_SPEEDS read per rank, and the pauses it owes and pays.
#include "distributed/emulated_speed.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "support/error.h"

namespace cleave {
namespace {

// Records every sleep asked for and sleeps `overshoot` longer than asked.
struct FakeSleep {
  std::vector<double> asked;
  double overshoot = 0;
  EmulatedSpeed::Sleep sleep() {
    return [this](double seconds) {
      asked.push_back(seconds);
      return seconds + overshoot;
    };
  }
};

class EmulatedSpeedEnvironment : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("CLEAVE_EMULATED_SPEEDS"); }

  std::string refusal(const char* value, int rank, int ranks) {
    setenv("CLEAVE_EMULATED_SPEEDS", value, 1);
    try {
      EmulatedSpeed::from_environment(rank, ranks);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(EmulatedSpeed, HalfSpeedPausesAsLongAsTheTaskComputed) {
  FakeSleep fake;
  EmulatedSpeed pace(0.5, fake.sleep());
  pace.after_compute(2e-3);
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_DOUBLE_EQ(fake.asked[0], 2e-3);
  EXPECT_DOUBLE_EQ(pace.paused_seconds(), 2e-3);
}

TEST(EmulatedSpeed, AQuarterSpeedPausesThreeTimesTheCompute) {
  FakeSleep fake;
  EmulatedSpeed pace(0.25, fake.sleep());
  pace.after_compute(1e-3);
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_DOUBLE_EQ(fake.asked[0], 3e-3);
}

TEST(EmulatedSpeed, ShortPausesAreCarriedToTheNextTaskAndSettledAtTheEnd) {
  FakeSleep fake;
  EmulatedSpeed pace(0.5, fake.sleep());
  pace.after_compute(40e-6);
  pace.after_compute(40e-6);
  EXPECT_TRUE(fake.asked.empty()) << "80 us owed is under one sleep's resolution";
  pace.after_compute(40e-6);
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_NEAR(fake.asked[0], 120e-6, 1e-12);
  pace.after_compute(10e-6);
  pace.settle();
  ASSERT_EQ(fake.asked.size(), 2u);
  EXPECT_NEAR(fake.asked[1], 10e-6, 1e-12);
  EXPECT_NEAR(pace.paused_seconds(), 130e-6, 1e-12);
}

TEST(EmulatedSpeed, AnOvershootIsCountedOffTheNextPause) {
  FakeSleep fake;
  fake.overshoot = 50e-6;
  EmulatedSpeed pace(0.5, fake.sleep());
  pace.after_compute(1e-3);  // Sleeps 1.05 ms: 50 us ahead.
  pace.after_compute(1e-3);
  ASSERT_EQ(fake.asked.size(), 2u);
  EXPECT_NEAR(fake.asked[1], 0.95e-3, 1e-12);
}

TEST(EmulatedSpeed, FullSpeedNeverSleeps) {
  FakeSleep fake;
  EmulatedSpeed pace(1.0, fake.sleep());
  pace.after_compute(5e-3);
  pace.settle();
  EXPECT_TRUE(fake.asked.empty());
  EXPECT_EQ(pace.paused_seconds(), 0);
}

TEST_F(EmulatedSpeedEnvironment, EachRankReadsItsOwnEntry) {
  setenv("CLEAVE_EMULATED_SPEEDS", "1,0.5,0.25", 1);
  EXPECT_EQ(EmulatedSpeed::from_environment(0, 3).speed(), 1.0);
  EXPECT_EQ(EmulatedSpeed::from_environment(1, 3).speed(), 0.5);
  EXPECT_EQ(EmulatedSpeed::from_environment(2, 3).speed(), 0.25);
}

TEST_F(EmulatedSpeedEnvironment, UnsetOrEmptyIsFullSpeed) {
  EXPECT_EQ(EmulatedSpeed::from_environment(1, 2).speed(), 1.0);
  setenv("CLEAVE_EMULATED_SPEEDS", "", 1);
  EXPECT_EQ(EmulatedSpeed::from_environment(1, 2).speed(), 1.0);
}

TEST_F(EmulatedSpeedEnvironment, ACountOtherThanTheRanksIsRefused) {
  EXPECT_NE(refusal("1,0.5", 0, 3).find("2 speed(s) for 3 rank(s)"), std::string::npos);
}

TEST_F(EmulatedSpeedEnvironment, ASpeedOutsideAHundredthToOneIsRefusedByRank) {
  const std::string zero = refusal("1,0", 0, 2);
  EXPECT_NE(zero.find("rank 1's speed"), std::string::npos) << zero;
  EXPECT_NE(zero.find("got '0'"), std::string::npos) << zero;
  EXPECT_NE(refusal("1.5,1", 1, 2).find("got '1.5'"), std::string::npos);
  EXPECT_NE(refusal("-0.5,1", 1, 2).find("got '-0.5'"), std::string::npos);
  EXPECT_NE(refusal("1,1e-300", 1, 2).find("from 0.01 to 1"), std::string::npos);
}

TEST_F(EmulatedSpeedEnvironment, WhatIsNoNumberIsRefused) {
  EXPECT_NE(refusal("1,half", 0, 2).find("got 'half'"), std::string::npos);
  EXPECT_NE(refusal("1,0.5x", 0, 2).find("got '0.5x'"), std::string::npos);
  EXPECT_NE(refusal("1,", 0, 2).find("got ''"), std::string::npos);
  EXPECT_NE(refusal("1,nan", 0, 2).find("got 'nan'"), std::string::npos);
}

}  // namespace
}  // namespace cleave
