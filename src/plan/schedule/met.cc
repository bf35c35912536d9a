// MET: the baseline that looks only at each task's own execution time.
#include "plan/schedule/met.h"

#include "plan/list_schedule.h"

namespace cleave {

Plan plan_met(const TaskGraph& graph, const MetOptions&) {
  const std::vector<int> priority = upward_rank_order(graph);
  const std::vector<int> assignment = fastest_feasible_assignment(graph, priority, "met");
  return AppendScheduler(graph, priority).to_plan(assignment, "met");
}

}  // namespace cleave
