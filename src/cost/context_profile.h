// In-context node times: inside whole sequential runs in order, alone or beside busy cores.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/executor_interface.h"

namespace cleave {

/// How time_in_context runs.
struct ContextRuns {
  int warmup = 2;            ///< Untimed runs first (kernels prepared, caches warm).
  int repeat = 10;           ///< Timed whole runs, at least.
  double min_seconds = 0.2;  ///< More timed runs until they have lasted this long...
  int max_runs = 400;        ///< ...but never more than this many.
  int busy_neighbours = 0;   ///< Threads that each run the same model over and over meanwhile.
};

/// Node times in context, scaled so that they sum to the median whole run.
struct ContextTiming {
  std::vector<double> node_seconds;  ///< Per NodeId: median over the runs, scaled.
  double run_seconds = 0;            ///< Median wall time of one whole run.
  double calibration = 1;            ///< The factor the node medians were scaled by.
  int runs = 0;                      ///< Whole runs timed.
};

/// The CPUs each of `count` busy neighbours is pinned to, given the CPUs this process may use
/// (`allowed`) and the host's online CPUs (`online`): none (the scheduler spreads them) when the
/// process may use a core for each and the timed thread; else each on one online CPU outside
/// `allowed`, in turn. An mpirun rank is bound to one core: neighbours there would share the
/// timed thread's core and time-slice it (2.1-2.7x alone on a Xeon, where another rank's
/// process computing on the other core slowed a run 0.97x: docs/results/distributed.md).
/// None when the host has no other CPU.
std::vector<std::vector<int>> busy_neighbour_cpus(const std::vector<int>& allowed,
                                                  const std::vector<int>& online, int count);

/// Times whole sequential runs of `graph` in order with `options` (its threads and kernels;
/// node times from the executor's own timing, ExecutorOptions::collect_stats) on `inputs`.
/// With `runs.busy_neighbours` > 0, that many threads each run their own 1-thread executor of
/// the same graph in a loop from before the first timed run to after the last: the condition
/// of a plan whose workers compute at once. A neighbour's error is rethrown here.
ContextTiming time_in_context(const Graph& graph, const ExecutorOptions& options,
                              const SampleInputs& inputs, const ContextRuns& runs);

}  // namespace cleave
