// Internal to the MILP planner: CBC run on a program in a child process, with progress lines
// and a hard stop at the time limit.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/schedule/milp_program.h"

namespace cleave::milp_detail {

// What a CBC run left behind, as it crosses from the solver's process to cleave's.
struct CbcOutcome {
  bool infeasible = false;
  bool proven_optimal = false;
  bool has_best = false;
  double objective = 0;  // scaled units
  double bound = 0;
  std::vector<double> best;  // per column, when has_best
};

// Solves `program` with CBC in a child process: Debian's CBC keeps its assertions, and one
// failing (seen: CbcModel::reducedCostFix on an 11-task module) would otherwise abort cleave.
// `start_values` is the MIP start (empty: none); CBC gets what is left of the time limit counted
// from `begin`. Returns nullopt, with the reason in `failure`, when the child died or overran.
std::optional<CbcOutcome> solve_in_child(
    Program& program, const MilpOptions& options,
    const std::vector<std::pair<std::string, double>>& start_values, Clock::time_point begin,
    std::string* failure);

}  // namespace cleave::milp_detail
