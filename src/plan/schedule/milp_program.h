// Internal to the MILP planner: the DiviML program's columns and rows, one function per
// condition of the paper (the formulation is described at the top of plan/milp.cc).
#pragma once

#include <fmt/core.h>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/schedule/milp_problem.h"

namespace cleave::milp_detail {

// Column-and-row collector for the program.
class ProgramBuilder {
 public:
  int add_column(double lower, double upper, double cost, bool integer) {
    lower_.push_back(lower);
    upper_.push_back(upper);
    cost_.push_back(cost);
    integer_.push_back(integer);
    return static_cast<int>(lower_.size()) - 1;
  }
  void add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
    std::map<int, double> merged;
    for (const auto& [column, value] : terms) merged[column] += value;
    std::vector<int> columns;
    std::vector<double> values;
    for (const auto& [column, value] : merged) {
      if (value == 0) continue;
      columns.push_back(column);
      values.push_back(value);
    }
    rows_.appendRow(static_cast<int>(columns.size()), columns.data(), values.data());
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }
  int columns() const { return static_cast<int>(lower_.size()); }
  /// The name the loaded solver knows column `column` by.
  static std::string solver_name(int column) { return fmt::format("C{:07d}", column); }
  int rows() const { return static_cast<int>(row_lower_.size()); }
  bool integer(int column) const { return integer_[column]; }

  void load(OsiClpSolverInterface& solver) {
    rows_.setDimensions(rows(), columns());
    CoinPackedMatrix by_column;
    by_column.setExtraGap(0.0);
    by_column.setExtraMajor(0.0);
    by_column.reverseOrderedCopyOf(rows_);
    solver.loadProblem(by_column, lower_.data(), upper_.data(), cost_.data(), row_lower_.data(),
                       row_upper_.data());
    // Column names stay the solver's defaults ("C0000012"): with names set, CBC 2.10's
    // post-processing crashes (null pointer in ClpPresolve), so the MIP start uses those.
    for (int column = 0; column < columns(); ++column) {
      if (integer_[column]) solver.setInteger(column);
    }
  }

 private:
  std::vector<double> lower_, upper_, cost_;
  std::vector<bool> integer_;
  CoinPackedMatrix rows_{false, 0, 0};
  std::vector<double> row_lower_, row_upper_;
};

// The slices of one node (a weight group) that condition 5 counts together.
struct SliceGroups {
  int count = 0;
  std::vector<int> group_of_task;
  std::vector<std::vector<int>> members;
};

SliceGroups make_slice_groups(const TaskGraph& graph);

// The program and the columns each condition refers to. Times are in scaled units: seconds
// divided by `scale`, so that the horizon is the big M.
struct Program {
  ProgramBuilder builder;
  double scale = 1;
  double big_m = 0;
  std::vector<std::vector<int>> x;  // [task][device], -1 where the task may not run
  std::vector<int> start;           // per task
  int makespan = -1;
  // With priced message ends: [task][device] 1 where a reader of the task runs on that other
  // device (the task's worker sends it a message), -1 where none can; per edge 1 where its ends
  // run on different devices (the reader copies the message), -1 where not priced.
  std::vector<std::vector<int>> sends;
  std::vector<int> cut;
  // On a shared link (milp_medium.h): [task][device] 1 where the task's worker sends that device
  // a message across the medium, -1 where none can; `medium_any` 1 where any does.
  std::vector<std::vector<int>> medium;
  int medium_any = -1;
  std::vector<std::pair<std::pair<int, int>, int>> order_columns;      // condition 7
  std::map<std::pair<int, std::size_t>, int> residency;                // condition 6
  std::map<std::tuple<int, std::size_t, int64_t>, int> share_columns;  // condition 5
  int ordered_pairs = 0;
  int disjunctive_pairs = 0;

  double scaled(double seconds) const { return seconds / scale; }
};

// The assignment, start and makespan columns. Devices too slow to finish a task within the
// horizon get no column; nullopt when that leaves some task without a device.
std::optional<Program> add_columns(const Problem& problem, const HeadsAndTails& bounds,
                                   double horizon, double lower, double big_m);
// Condition 1, and the ready times of the restrictions.
void add_assignment_rows(Program& program, const Problem& problem);
// Condition 2, and each device busy at most C.
void add_makespan_rows(Program& program, const Problem& problem, const HeadsAndTails& bounds);
// Condition 3: precedence with communication.
void add_precedence_rows(Program& program, const Problem& problem);
// Condition 7 for the pairs the transitive closure leaves unordered.
void add_order_rows(Program& program, const Problem& problem, const HeadsAndTails& bounds);
// Condition 6: weights within memory, one copy per weight group and device.
void add_memory_rows(Program& program, const Problem& problem);
// Condition 5: a device's share of a sliced node is a supported batch size.
void add_share_rows(Program& program, const Problem& problem, const SliceGroups& groups);
// Section VI: interchangeable devices ordered by the chosen quantity.
void add_symmetry_rows(Program& program, const Problem& problem,
                       const std::vector<std::vector<int>>& classes, SymmetryBreaking symmetry);

// The warm start as values of every column, by the solver's column names (CBC's MIP start).
std::vector<std::pair<std::string, double>> mip_start(const Program& program,
                                                      const Problem& problem, const Schedule& warm,
                                                      const SliceGroups& groups);

}  // namespace cleave::milp_detail
