// Gantt charts of predicted (or traced) plan timelines, as standalone SVG.
#pragma once

#include <string>

#include "plan/plan.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"

namespace cleave {

/// One row per worker with its tasks as labelled boxes (hover for name and times), transfers
/// between workers as thin lines from the producer's finish to the data's arrival, a time axis
/// in milliseconds and a legend.
std::string gantt_svg(const Plan& plan, const TaskGraph& graph, const Simulation& simulation,
                      std::string title);
/// Writes gantt_svg(...) atomically (temporary file in the same folder, then rename).
void write_gantt_svg(const std::string& path, const Plan& plan, const TaskGraph& graph,
                     const Simulation& simulation, const std::string& title);

}  // namespace cleave
