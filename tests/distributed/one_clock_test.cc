// The shifts that put every rank's trace on one clock (no MPI needed).
#include <gtest/gtest.h>

#include "distributed/rank_part.h"

namespace cleave {
namespace {

TEST(OneClock, EachRankCountsFromTheEarliestRanksStart) {
  // Rank 1's clock runs 2 s ahead of rank 0's, and it started 5 s later on its own clock (3 s
  // later on rank 0's); rank 2's is 1 s behind, and it started 0.5 s before rank 0.
  const std::vector<double> shifts = one_clock_shifts({100, 105, 98.5}, {0, 2, -1});
  ASSERT_EQ(shifts.size(), 3u);
  EXPECT_DOUBLE_EQ(shifts[0], 0.5);
  EXPECT_DOUBLE_EQ(shifts[1], 3.5);
  EXPECT_DOUBLE_EQ(shifts[2], 0);
}

TEST(OneClock, RanksOnOneClockThatStartedTogetherAreNotMoved) {
  EXPECT_EQ(one_clock_shifts({7, 7}, {0, 0}), (std::vector<double>{0, 0}));
  EXPECT_TRUE(one_clock_shifts({}, {}).empty());
}

}  // namespace
}  // namespace cleave
