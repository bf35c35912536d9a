// The report every way of running a model prints: its shared JSON fields and its text.
#include "pipeline/run_report.h"

#include <fmt/core.h>

#include <algorithm>

#include "support/timing.h"

namespace cleave {

nlohmann::json run_report_json(const RunSummary& summary) {
  const std::vector<double>& runs = summary.latencies_ms;
  nlohmann::json report;
  report["model"] = summary.model;
  report["latency_ms"] = {{"min", runs.empty() ? 0.0 : *std::min_element(runs.begin(), runs.end())},
                          {"median", runs.empty() ? 0.0 : median_of(runs)},
                          {"runs", runs}};
  report["layouts"] = {{"family", summary.layouts_family}};
  if (summary.plan) {
    const RunPlanSummary& plan = *summary.plan;
    report["plan"] = {{"strategy", plan.strategy},
                      {"workers", plan.workers},
                      {"threads_per_worker", plan.threads_per_worker},
                      {"samples", plan.samples},
                      {"predicted_ms", plan.predicted_ms}};
  }
  report["outputs"] = summary.outputs.is_null() ? nlohmann::json::array() : summary.outputs;
  if (!summary.trace_file.empty()) report["trace_file"] = summary.trace_file;
  return report;
}

std::string run_report_text(const nlohmann::json& report, const RunReportText& parts) {
  std::string text = parts.heading.empty()
                         ? fmt::format("model      {}\n", report["model"].get<std::string>())
                         : parts.heading;
  const nlohmann::json& latency = report["latency_ms"];
  text += fmt::format("latency    min {:.3f} ms, median {:.3f} ms over {} run(s), {}\n",
                      latency["min"].get<double>(), latency["median"].get<double>(),
                      latency["runs"].size(), parts.threads);
  for (const std::string& line : parts.before_plan) text += line;
  if (report.contains("plan")) {
    text += fmt::format("plan       {} {}: predicted {:.3f} ms{}\n",
                        report["plan"]["strategy"].get<std::string>(), parts.plan_where,
                        report["plan"]["predicted_ms"].get<double>(), parts.plan_tail);
  }
  for (const std::string& line : parts.after_plan) text += line;
  if (report.contains("trace_file"))
    text += fmt::format("trace      {}\n", report["trace_file"].get<std::string>());
  if (report.contains("gantt_file"))
    text += fmt::format("gantt      {}\n", report["gantt_file"].get<std::string>());
  for (const auto& entry : report["outputs"]) {
    text += fmt::format("output     {} {}{}\n", entry["name"].get<std::string>(),
                        entry["type"].get<std::string>(),
                        entry.contains("file") ? " -> " + entry["file"].get<std::string>() : "");
  }
  for (const std::string& line : parts.after_outputs) text += line;
  return text;
}

}  // namespace cleave
