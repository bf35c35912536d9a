// HEFT: earliest finish time in upward-rank order, with insertion into idle gaps.
#include "plan/schedule/heft.h"

#include "plan/earliest_finish.h"

namespace cleave {

Plan plan_heft(const TaskGraph& graph, const HeftOptions& options) {
  return plan_earliest_finish(graph, {.upward_rank_order = true,
                                      .insertion = options.insertion,
                                      .planner = "heft",
                                      .time_limit_seconds = options.time_limit_seconds});
}

}  // namespace cleave
