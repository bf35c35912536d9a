// The one spin of in-process waits (the thread executor's hand-off, generated programs'
// channels): it stops when the awaited thing is done, else after the policy's count.
#include <gtest/gtest.h>

#include "runtime/wait_policy.h"

namespace cleave {
namespace {

TEST(SpinWait, NeverSpinsPastLibgompsDefault) {
  EXPECT_GE(wait_spin_count(), 0);
  EXPECT_LE(wait_spin_count(), kLibgompSpinCount);
  EXPECT_LE(wait_spin_count(), spin_count_in_effect());
}

TEST(SpinWait, StopsAtTheFirstCheckThatIsDone) {
  if (wait_spin_count() < 3) GTEST_SKIP() << "spin count " << wait_spin_count();
  long calls = 0;
  EXPECT_TRUE(spin_until([&] { return ++calls == 3; }));
  EXPECT_EQ(calls, 3);
}

TEST(SpinWait, GivesUpAfterThePolicysCountOfChecks) {
  long calls = 0;
  EXPECT_FALSE(spin_until([&] {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, wait_spin_count());
}

}  // namespace
}  // namespace cleave
