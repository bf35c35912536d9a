// Kahn's order with priorities and left-out nodes, and the cycle named when there is one.
#include "support/topological_order.h"

#include <gtest/gtest.h>

namespace cleave {
namespace {

using Lists = std::vector<std::vector<int>>;

Lists reverse(const Lists& successors) {
  Lists predecessors(successors.size());
  for (std::size_t node = 0; node < successors.size(); ++node) {
    for (int next : successors[node]) predecessors[next].push_back(static_cast<int>(node));
  }
  return predecessors;
}

// 3 -> 1 -> 0 and 2 alone: smallest ready index first.
TEST(TopologicalOrder, SmallestReadyIndexFirst) {
  const Lists successors = {{}, {0}, {}, {1}};
  EXPECT_EQ(topological_order(successors), (std::vector<int>{2, 3, 1, 0}));
}

TEST(TopologicalOrder, PriorityDecidesAmongReadyNodes) {
  const Lists successors = {{2}, {2}, {}};
  EXPECT_EQ(topological_order(successors, {5, 1, 0}), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(topological_order(successors, {1, 5, 0}), (std::vector<int>{0, 1, 2}));
}

TEST(TopologicalOrder, LeavesOutNodesNotIncluded) {
  const Lists successors = {{1}, {}, {1}};  // node 2 is removed, its edge does not count
  EXPECT_EQ(topological_order(successors, {}, {true, true, false}), (std::vector<int>{0, 1}));
}

TEST(TopologicalOrder, RepeatedEdgesCountOnce) {
  const Lists successors = {{1, 1}, {}};
  EXPECT_EQ(topological_order(successors), (std::vector<int>{0, 1}));
}

// 0 -> 1 -> 2 -> 3 -> 1, and 3 -> 4: 1, 2, 3 are on the cycle, 4 behind it.
TEST(FindCycle, NamesTheNodesOnTheCycleFromTheSmallest) {
  const Lists successors = {{1}, {2}, {3}, {1, 4}, {}};
  const std::vector<int> order = topological_order(successors);
  EXPECT_EQ(order, (std::vector<int>{0}));
  EXPECT_EQ(find_cycle(reverse(successors), order), (std::vector<int>{1, 2, 3}));
}

TEST(FindCycle, ANodeBehindTheCycleIsNotOnIt) {
  // 4 -> 0 -> 1 -> 0: the smallest blocked node 0 is on the cycle, and 4 comes first in order.
  const Lists successors = {{1}, {0}, {}, {}, {0}};
  const std::vector<int> order = topological_order(successors);
  EXPECT_EQ(order, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(find_cycle(reverse(successors), order), (std::vector<int>{0, 1}));
}

TEST(FindCycle, SelfLoop) {
  const Lists successors = {{}, {1}};
  const std::vector<int> order = topological_order(successors);
  EXPECT_EQ(find_cycle(reverse(successors), order), (std::vector<int>{1}));
}

TEST(FindCycle, EmptyForAnAcyclicGraph) {
  const Lists successors = {{1}, {}};
  EXPECT_TRUE(find_cycle(reverse(successors), topological_order(successors)).empty());
}

}  // namespace
}  // namespace cleave
