// Planning a stream run (firing costs and filter placement), and the plan-then-execute driver.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "stream/executor.h"
#include "stream/stream_ir.h"

namespace cleave {

/// The stream planners of the registry (plan/registry.h, family kStream), in table order:
/// the names `cleave stream run --placement` takes.
std::vector<std::string> stream_planner_names();

/// Balances nodes over `workers` by cost (longest first onto the least loaded worker): the
/// placement's kGreedy method, without hand-offs.
std::vector<int> place_stream(const std::vector<double>& node_cost, int workers);

/// Places the nodes of `setup` on `options.workers` workers before the run. Firing costs are
/// `options.firing_seconds`, or measured by firing each model filter when it is empty; a
/// given `options.placement` is evaluated, else the stream planner `options.method` names
/// chooses one. Error naming the program for costs or a placement of the wrong size, or a
/// node placed outside the workers.
StreamPlan plan_stream(const StreamProgram& program, const StreamSetup& setup,
                       const StreamRunOptions& options);

/// Plans, then executes: prepare_stream, plan_stream, execute_stream.
StreamRunResult run_stream(const StreamProgram& program, const std::vector<Tensor>& inputs,
                           const StreamRunOptions& options = {});

}  // namespace cleave
