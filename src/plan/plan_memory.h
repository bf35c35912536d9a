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

/// Per stage of a pipeline (stage k on worker k; `stage_of_task[t]` non-decreasing along the
/// task ids, which follow the edges), the most activation bytes its worker holds at once: one
/// sample through the stages in turn, each task for its time on its stage's worker, as
/// peak_activation_bytes_per_worker counts it; with `samples` > 1, each stage after the first
/// also holds the next sample's inputs, queued while it works on this one.
std::vector<double> pipeline_activation_bytes(const TaskGraph& graph,
                                              const std::vector<int>& stage_of_task, int samples);

}  // namespace cleave
