// `cleave bench --families`: the best runnable plan of each family of auto's table, timed in one
// interleaved run beside its prediction.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "frontend/model_plan.h"
#include "pipeline/model_bench.h"

namespace cleave {

/// One family's row: its fastest predicted plan and, when it runs here, its timed runs.
struct FamilyBenchRow {
  std::string family;  ///< As PlanCandidate::family.
  std::string configuration;
  double predicted_seconds = 0;
  std::vector<double> ms;     ///< Per interleaved round; empty when not measured.
  std::string not_measured;   ///< Why this command cannot run the family; empty when measured.
  bool fastest = false;       ///< The lowest median of the measured rows.
  bool chosen = false;        ///< Auto's choice by prediction (always measured).
  CandidateCosts costs = {};  ///< What the prediction used (its PlanCandidate::costs).
};

/// The families compared and the report.
struct FamilyBench {
  std::vector<FamilyBenchRow> rows;  ///< Measured rows by prediction, then the others.
  nlohmann::json report;             ///< As `--json` prints it.
  double planning_ms = 0;
  /// The spatial row's largest |split - whole| over the outputs of one run, against the
  /// sequential row's (unset without both).
  std::optional<double> spatial_max_abs_difference;
};

/// Plans the candidate table once (auto), takes the fastest prediction of each family present
/// (hybrid plans apart from even task splits) and times them interleaved: `settings.warmup`
/// rounds, then `settings.repeat` rounds alternating the order. With `settings.machine` the
/// spatial split is timed among them (its outputs checked against the sequential row's);
/// pipelined stages on a machine's devices are listed with the command that runs them.
FamilyBench run_family_bench(const ModelBenchSettings& settings);

/// The comparison as text, as `cleave bench --families` prints it.
std::string family_bench_text(const ModelBenchSettings& settings, const FamilyBench& bench);

}  // namespace cleave
