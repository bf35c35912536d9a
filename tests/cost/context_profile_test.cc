// Where the profiler's busy neighbours run: spread by the scheduler, or off a rank's one core.
#include "cost/context_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/pinning.h"

namespace cleave {
namespace {

using Cpus = std::vector<std::vector<int>>;

TEST(BusyNeighbourCpus, AProcessWithACoreForEachLeavesThemToTheScheduler) {
  EXPECT_EQ(busy_neighbour_cpus({0, 1}, {0, 1}, 1), Cpus());
  EXPECT_EQ(busy_neighbour_cpus({0, 1, 2, 3}, {0, 1, 2, 3}, 3), Cpus());
}

TEST(BusyNeighbourCpus, ARankBoundToOneCorePutsItsNeighbourOnAnother) {
  EXPECT_EQ(busy_neighbour_cpus({0}, {0, 1}, 1), Cpus({{1}}));
  EXPECT_EQ(busy_neighbour_cpus({1}, {0, 1}, 1), Cpus({{0}}));
}

TEST(BusyNeighbourCpus, NeighboursTakeTheOtherCpusInTurn) {
  EXPECT_EQ(busy_neighbour_cpus({2}, {0, 1, 2, 3}, 3), Cpus({{0}, {1}, {3}}));
  EXPECT_EQ(busy_neighbour_cpus({0, 1}, {0, 1, 2}, 3), Cpus({{2}, {2}, {2}}));
}

TEST(BusyNeighbourCpus, AHostOfOneCpuOrNoNeighbourPinsNothing) {
  EXPECT_EQ(busy_neighbour_cpus({0}, {0}, 1), Cpus());
  EXPECT_EQ(busy_neighbour_cpus({0}, {0, 1}, 0), Cpus());
}

TEST(OnlineCpus, HoldsEveryCpuThisProcessMayUse) {
  const std::vector<int> online = online_cpus();
  ASSERT_FALSE(online.empty());
  EXPECT_TRUE(std::is_sorted(online.begin(), online.end()));
  for (int cpu : allowed_cpus())
    EXPECT_NE(std::find(online.begin(), online.end(), cpu), online.end()) << cpu;
}

// Bound to one CPU (as mpirun binds a rank), the process still sees the host's others.
TEST(OnlineCpus, SeesTheHostsOtherCpusFromAThreadBoundToOne) {
  const std::vector<int> online = online_cpus();
  if (online.size() < 2) GTEST_SKIP() << "one CPU";
  ThreadPinScope pin({online.front()});
  if (allowed_cpus() != std::vector<int>{online.front()}) GTEST_SKIP() << "binding is forbidden";
  EXPECT_EQ(online_cpus(), online);
  const Cpus cpus = busy_neighbour_cpus(allowed_cpus(), online_cpus(), 1);
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_NE(cpus[0][0], online.front());
}

}  // namespace
}  // namespace cleave
