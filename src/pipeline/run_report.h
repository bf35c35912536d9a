// The report every way of running a model prints (`run`, `mpirun ... run`, `run-split`): the
// fields they share made by one function, and one text printer.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cleave {

/// The plan a run ran, in the report's words.
struct RunPlanSummary {
  std::string strategy;
  int workers = 1;             ///< Workers (threads of this process, or ranks).
  int threads_per_worker = 1;  ///< Intra-op threads each worker's kernels were planned for.
  int samples = 1;             ///< Samples one run pushes through the plan.
  double predicted_ms = 0;
};

/// The fields every run reports.
struct RunSummary {
  std::string model;
  std::vector<double> latencies_ms;  ///< One per timed run.
  std::string layouts_family;        ///< The kernels' convolution family ("plain" without).
  std::optional<RunPlanSummary> plan;
  nlohmann::json outputs;  ///< write_run_outputs's list.
  std::string trace_file;  ///< The Chrome trace written, or empty.
};

/// The shared part of a run's JSON report: "model", "latency_ms" {min, median, runs},
/// "layouts" {family}, "outputs", with a plan "plan" {strategy, workers, threads_per_worker,
/// samples, predicted_ms}, with a trace "trace_file". Each command adds its own keys.
nlohmann::json run_report_json(const RunSummary& summary);

/// What a command adds to the text of its report, each line complete with its '\n'.
struct RunReportText {
  std::string heading;  ///< The first line; empty: "model      " and the report's model.
  std::string threads;  ///< How the run's threads ran, ending the latency line.
  std::vector<std::string> before_plan;
  std::string plan_where;  ///< What follows the plan's strategy ("on 2 worker(s) ...").
  std::string plan_tail;   ///< What follows the plan's prediction.
  std::vector<std::string> after_plan;
  std::vector<std::string> after_outputs;
};

/// The report as text, a labelled line per field: model, latency, the command's lines, plan,
/// the command's lines, trace and gantt files, outputs, the command's last lines.
std::string run_report_text(const nlohmann::json& report, const RunReportText& text);

}  // namespace cleave
