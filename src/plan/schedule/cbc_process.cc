// CBC on the MILP planner's program: its command line, the outcome's trip from the solver's
// child process back to cleave, and progress lines.
#include "plan/schedule/cbc_process.h"

#include <fmt/core.h>
#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>

#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "support/isolated.h"

namespace cleave::milp_detail {
namespace {

CbcOutcome run_cbc(CbcModel& model, const MilpOptions& options, double seconds, int columns) {
  CbcSolverUsefulData solver_data;
  solver_data.noPrinting_ = options.verbosity < 2;
  solver_data.useSignalHandler_ = false;
  CbcMain0(model, solver_data);
  const std::vector<std::string> argument_text = {
      "cleave",
      "-log",
      options.verbosity >= 2 ? "1" : "0",
      "-timeMode",
      "elapsed",
      "-seconds",
      fmt::format("{}", seconds),
      "-ratioGap",
      fmt::format("{}", std::max(0.0, options.relative_gap)),
      "-allowableGap",
      "1e-9",
      "-threads",
      fmt::format("{}", std::max(1, options.threads)),
      "-solve",
      "-quit"};
  std::vector<const char*> arguments;
  for (const std::string& text : argument_text) arguments.push_back(text.c_str());
  CbcMain1(
      static_cast<int>(arguments.size()), arguments.data(), model, [](CbcModel*, int) { return 0; },
      solver_data);
  CbcOutcome outcome;
  outcome.infeasible = model.isProvenInfeasible();
  outcome.proven_optimal = model.isProvenOptimal();
  const double* best = model.bestSolution();
  outcome.has_best = best != nullptr;
  if (best != nullptr) {
    outcome.best.assign(best, best + columns);
    outcome.objective = model.getObjValue();
  }
  outcome.bound = model.getBestPossibleObjValue();
  return outcome;
}

std::vector<char> encode(const CbcOutcome& outcome) {
  const double header[] = {outcome.infeasible ? 1.0 : 0.0, outcome.proven_optimal ? 1.0 : 0.0,
                           outcome.has_best ? 1.0 : 0.0, outcome.objective, outcome.bound};
  std::vector<char> bytes(sizeof header + outcome.best.size() * sizeof(double));
  std::memcpy(bytes.data(), header, sizeof header);
  if (!outcome.best.empty()) {
    std::memcpy(bytes.data() + sizeof header, outcome.best.data(),
                outcome.best.size() * sizeof(double));
  }
  return bytes;
}

CbcOutcome decode(const std::vector<char>& bytes) {
  double header[5];
  if (bytes.size() < sizeof header || (bytes.size() - sizeof header) % sizeof(double) != 0) {
    throw Error(
        fmt::format("milp: the solver process returned {} bytes, not an outcome", bytes.size()));
  }
  std::memcpy(header, bytes.data(), sizeof header);
  CbcOutcome outcome;
  outcome.infeasible = header[0] != 0;
  outcome.proven_optimal = header[1] != 0;
  outcome.has_best = header[2] != 0;
  outcome.objective = header[3];
  outcome.bound = header[4];
  outcome.best.resize((bytes.size() - sizeof header) / sizeof(double));
  if (!outcome.best.empty()) {
    std::memcpy(outcome.best.data(), bytes.data() + sizeof header,
                outcome.best.size() * sizeof(double));
  }
  return outcome;
}

// Progress lines on stderr for long solves, and a hard stop at the time limit (CBC checks its
// own limit only between some phases).
class ProgressReporter : public CbcEventHandler {
 public:
  ProgressReporter(Clock::time_point start, double scale, double time_limit, bool print)
      : start_(start), scale_(scale), time_limit_(time_limit), print_(print) {}
  ProgressReporter(const ProgressReporter& other) = default;

  CbcAction event(CbcEvent event) override {
    if (event != node && event != solution && event != heuristicSolution && event != treeStatus) {
      return noAction;
    }
    const double elapsed = seconds_since(start_);
    if (print_ && elapsed >= 1.0 && elapsed - last_print_ >= 1.0) {
      last_print_ = elapsed;
      const bool has_incumbent = model_->bestSolution() != nullptr;
      const double incumbent = model_->getObjValue() * scale_;
      const double bound = model_->getBestPossibleObjValue() * scale_;
      std::string line = fmt::format("milp: {:6.1f} s  nodes {:>8}  bound {:.6g} s", elapsed,
                                     model_->getNodeCount(), bound);
      if (has_incumbent) {
        line += fmt::format("  incumbent {:.6g} s  gap {:.2f}%", incumbent,
                            incumbent > 0 ? 100.0 * (incumbent - bound) / incumbent : 0.0);
      } else {
        line += "  no incumbent yet";
      }
      fmt::print(stderr, "{}\n", line);
    }
    if (elapsed > time_limit_ + 0.5) return stop;
    return noAction;
  }
  CbcEventHandler* clone() const override { return new ProgressReporter(*this); }

 private:
  Clock::time_point start_;
  double scale_;
  double time_limit_;
  bool print_;
  double last_print_ = 0;
};

}  // namespace

std::optional<CbcOutcome> solve_in_child(
    Program& program, const MilpOptions& options,
    const std::vector<std::pair<std::string, double>>& start_values, Clock::time_point begin,
    std::string* failure) {
  OsiClpSolverInterface solver;
  program.builder.load(solver);
  solver.messageHandler()->setLogLevel(0);
  solver.setHintParam(OsiDoReducePrint, true, OsiHintTry);
  CbcModel model(solver);
  model.messageHandler()->setLogLevel(options.verbosity >= 2 ? 1 : 0);
  ProgressReporter reporter(begin, program.scale, options.time_limit_seconds,
                            options.verbosity >= 1);
  model.passInEventHandler(&reporter);
  if (!start_values.empty()) model.setMIPStart(start_values);
  const double remaining = std::max(0.01, options.time_limit_seconds - seconds_since(begin));
  const int columns = program.builder.columns();
  const std::optional<std::vector<char>> bytes =
      run_isolated([&] { return encode(run_cbc(model, options, remaining, columns)); },
                   1.5 * remaining + 10.0, failure);
  if (!bytes) return std::nullopt;
  return decode(*bytes);
}

}  // namespace cleave::milp_detail
