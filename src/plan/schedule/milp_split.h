// MILP-SPLIT: solve the modules of a modular graph with the MILP and combine them (DiviML IV-B).
#pragma once

#include "plan/plan.h"
#include "plan/schedule/milp.h"
#include "plan/schedule/modules.h"
#include "plan/task_graph.h"

namespace cleave {

struct MilpSplitOptions {
  /// Options of every module solve; its time limit caps each solve.
  MilpOptions module;
  /// For the whole split: each solve gets at most an equal share of the time left among the
  /// solves still to do, so time a quick solve leaves over goes to the later ones.
  double time_limit_seconds = 600;
  /// Channels between modules: 1 cuts at bridges and articulation points (exact), c > 1 takes
  /// the (c+1)-edge-connected components; 0 picks the smallest c in 1..4 whose largest module
  /// has at most max_module_tasks tasks (or the one with the smallest largest module).
  int channels = 0;
  int max_module_tasks = 40;
  int min_module_tasks = 3;  ///< Smaller multi-channel components join a neighbour.
  /// Module solves of the single-channel DP run in this many processes at once (0: one per
  /// core); they are independent, and each keeps the time share it would have one after
  /// another.
  int parallel_solves = 0;
};

/// The module split MILP-SPLIT (and the lower bound) use under these options.
ModuleSplit choose_modules(const TaskGraph& graph, int channels, int max_module_tasks,
                           int min_module_tasks);

/// Single-channel chains (not batched): the MILP solves every module for every pair of input
/// and output devices, and a dynamic program over modules and device pairs combines them:
/// best(t, v) = min over u of [min over v' of best(t-1, v') + link(v', u)] + OPT(t, u, v),
/// optimal when every module solve is. An articulation point joins two modules through a
/// zero-time copy on the same device. Multi-channel (and batched) splits, or a DP result that
/// overflows a device's memory: modules are solved one after another in order, each given the
/// arrival times of its inputs from the modules before, the time its devices become free and
/// the memory they already hold (a heuristic). Unless the result is exact, HEFT's plan is
/// returned instead when it is shorter (notes.fallback = "heft", notes.split_makespan). notes:
/// modules, channels, single_channel, module_solves, solver_failures, status ("optimal" when
/// the DP was exact and every solve optimal).
Plan plan_milp_split(const TaskGraph& graph, const MilpSplitOptions& options = {});

}  // namespace cleave
