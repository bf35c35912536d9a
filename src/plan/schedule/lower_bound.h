// A lower bound on the optimal makespan (DiviML section IV-B2) to judge any planner's result.
#pragma once

#include <cstdint>
#include <string>

#include "plan/schedule/milp.h"
#include "plan/task_graph.h"

namespace cleave {

struct LowerBoundOptions {
  MilpOptions subproblem;  ///< Each subgraph's MILP; its proven bound is used (valid at limits).
  /// Module split as in MILP-SPLIT (0: automatic, see MilpSplitOptions).
  int channels = 0;
  int max_module_tasks = 40;
  int min_module_tasks = 3;
  bool use_milp = true;  ///< false: only the closed-form bounds (critical path, work).
  /// For the whole bound: once spent, the MILPs stop and the recursion returns what it has
  /// (the closed forms of the whole graph at least), with LowerBoundResult::timed_out set.
  double time_limit_seconds = 60;
};

struct LowerBoundResult {
  double makespan = 0;       ///< Seconds: no schedule of the graph finishes earlier.
  double critical_path = 0;  ///< Longest path with every task at its fastest time.
  double work = 0;           ///< Fractional assignment balancing the devices' busy time.
  double recursive = 0;      ///< The module recursion of section IV-B2 (0 when not run).
  int modules = 0;
  int channels = 0;
  int subproblems = 0;      ///< MILPs solved.
  bool all_optimal = true;  ///< Every MILP was solved to optimality.
  /// time_limit_seconds ran out before the recursion finished: `makespan` is the best bound
  /// found by then (still valid, maybe weaker).
  bool timed_out = false;
  std::string objective = "latency";
  int64_t batch = 1;
  double throughput = 0;  ///< For batched graphs: batch / makespan, an upper bound.
  double seconds = 0;
};

/// Section IV-B2's recursion over a module chain M1, M2, ... with G2 = M2 u M3 u ...:
///   OPT(G) >= OPT(M1) + min over channel inputs b of OPT(dep(b) in G2)
///   OPT(G) >= OPT(G2) + min over channel outputs a of OPT(pre(a) in M1)
/// applied recursively to G2 and to the dependency sets, with the MILP's proven bound for the
/// subgraphs inside one module, and never below the closed-form bounds. The first inequality
/// drops its second term when some task of M1 reaches no channel (it may finish last), the
/// second when some task of G2 hangs off no channel input (it may start first). For batched
/// graphs the slices of a node form one module and every slice's edges are channels: at the
/// moment the first slice crosses into G2 none of G2 has started, and the last task of M1 is
/// followed by its slice's part of G2 (the slice-level form of the paper's batched bound).
LowerBoundResult makespan_lower_bound(const TaskGraph& graph,
                                      const LowerBoundOptions& options = {});

}  // namespace cleave
