// Greedy: earliest finish time in topological order, appending (no insertion).
#include "plan/schedule/greedy.h"

#include "plan/earliest_finish.h"

namespace cleave {

Plan plan_greedy(const TaskGraph& graph, const GreedyOptions& options) {
  return plan_earliest_finish(graph, {.upward_rank_order = false,
                                      .insertion = false,
                                      .planner = "greedy",
                                      .time_limit_seconds = options.time_limit_seconds});
}

}  // namespace cleave
