// The backoff of a rank's sleeping wait: its pauses, and the polls of a wait of a given length.
#include "support/wait_backoff.h"

#include <gtest/gtest.h>

namespace cleave {
namespace {

TEST(WaitBackoff, PausesGrowByTenMicrosecondsToTwoHundred) {
  EXPECT_DOUBLE_EQ(wait_pause_seconds(1), 10e-6);
  EXPECT_DOUBLE_EQ(wait_pause_seconds(7), 70e-6);
  EXPECT_DOUBLE_EQ(wait_pause_seconds(20), 200e-6);
  EXPECT_DOUBLE_EQ(wait_pause_seconds(500), 200e-6);
}

// The first poll, and one after each pause until the pauses cover the wait: 10 + 20 + 30 us
// cover 60 us in 4 polls, 61 us needs a fourth pause; the ramp to 200 us covers 2.1 ms in 21
// polls, and 5 ms takes 15 pauses of 200 us more (2.9 ms).
TEST(WaitBackoff, PollsOfASleepingWait) {
  EXPECT_EQ(sleeping_wait_polls(0), 1);
  EXPECT_EQ(sleeping_wait_polls(10e-6), 2);
  EXPECT_EQ(sleeping_wait_polls(60e-6), 4);
  EXPECT_EQ(sleeping_wait_polls(61e-6), 5);
  EXPECT_EQ(sleeping_wait_polls(2.1e-3), 21);
  EXPECT_EQ(sleeping_wait_polls(2.1e-3 + 1e-6), 22);
  EXPECT_EQ(sleeping_wait_polls(5e-3), 36);
}

// The closed form agrees with adding up the pauses one by one, over waits up to 10 ms.
TEST(WaitBackoff, PollsAgreeWithThePausesAddedUp) {
  for (int microseconds = 1; microseconds <= 10000; microseconds += 7) {
    const double wait = microseconds * 1e-6;
    double slept = 0;
    int polls = 1;
    for (int sleeps = 1; slept < wait - 1e-12; ++sleeps, ++polls)
      slept += wait_pause_seconds(sleeps);
    EXPECT_EQ(sleeping_wait_polls(wait), polls) << microseconds << " us";
  }
}

}  // namespace
}  // namespace cleave
