// Activation memory a plan holds on each worker over its predicted schedule.
#pragma once

#include <vector>

#include "plan/plan.h"

namespace cleave {

/// Per worker, the most bytes of task outputs it holds at once over the plan's predicted
/// schedule (PlannedTask start/finish): an output lives on its producer's worker from the
/// producer's start until the last consumer there finishes, or until the last consumer on
/// another worker starts (it has been sent by then); a copy lives on each other consuming
/// worker from the producer's finish until its last consumer there finishes. Outputs no task
/// reads (the graph's) live until the makespan. Weights are not counted
/// (weight_bytes_per_worker).
std::vector<double> peak_activation_bytes_per_worker(const Plan& plan, const TaskGraph& graph);

}  // namespace cleave
