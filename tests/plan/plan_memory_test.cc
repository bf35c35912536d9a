// Activation memory per worker over a plan's predicted schedule.
#include "plan/plan_memory.h"

#include <gtest/gtest.h>

#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;

// a -> b -> d, a -> c -> d; outputs of 100, 200 and 300 bytes.
const char* const kDiamond = R"({
  "devices": [{"name": "p"}, {"name": "q"}],
  "bandwidth": [[0, 1000], [1000, 0]],
  "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100},
            {"name": "b", "time": [4, 1], "output_bytes": 200},
            {"name": "c", "time": [2, 2], "output_bytes": 300},
            {"name": "d", "time": [1, 1]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]
})";

Plan scheduled(const std::vector<PlannedTask>& tasks, double makespan) {
  Plan plan;
  plan.tasks = tasks;
  plan.makespan = makespan;
  return plan;
}

TEST(PlanMemory, OneWorkerHoldsEveryValueUntilItsLastReaderEnds) {
  const TaskGraph graph = graph_from_text(kDiamond);
  // a [0,1], b [1,5], c [5,7], d [7,8]: a, b and c are all held while c runs.
  const Plan plan = scheduled({{0, 0, 0, 1}, {1, 0, 1, 5}, {2, 0, 5, 7}, {3, 0, 7, 8}}, 8);
  EXPECT_EQ(peak_activation_bytes_per_worker(plan, graph), (std::vector<double>{600, 0}));
}

TEST(PlanMemory, ASentValueLeavesItsProducerAndLivesWithItsReaders) {
  const TaskGraph graph = graph_from_text(kDiamond);
  // p: a [0,1], c [1,3], d [4,5]; q: b [2,3]. p holds a and c, then c and b's copy; q holds
  // a's copy and b.
  const Plan plan = scheduled({{0, 0, 0, 1}, {1, 1, 2, 3}, {2, 0, 1, 3}, {3, 0, 4, 5}}, 5);
  EXPECT_EQ(peak_activation_bytes_per_worker(plan, graph), (std::vector<double>{500, 300}));
}

TEST(PlanMemory, AnOutputNoTaskReadsIsHeldToTheEnd) {
  const TaskGraph graph = graph_from_text(R"({
  "devices": [{"name": "p"}],
  "tasks": [{"name": "a", "time": [1], "output_bytes": 100},
            {"name": "b", "time": [1], "output_bytes": 50}],
  "edges": [["a", "b"]]
})");
  // a [0,1] read by b [1,2]: a goes as b ends, b's output stays: never both beyond b's run.
  const Plan plan = scheduled({{0, 0, 0, 1}, {1, 0, 1, 2}}, 2);
  EXPECT_EQ(peak_activation_bytes_per_worker(plan, graph), (std::vector<double>{150}));
}

}  // namespace
}  // namespace cleave
