// `cleave bench --families`: the best runnable plan of each family of auto's table, timed in one
// interleaved run beside its prediction.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "frontend/model_plan.h"
#include "pipeline/model_bench.h"
#include "pipeline/plan_and_run.h"

namespace cleave {

/// One family's row: its fastest predicted plan and, when it runs here, its timed runs.
struct FamilyBenchRow {
  std::string family;  ///< As PlanCandidate::family.
  std::string configuration;
  double predicted_seconds = 0;
  std::vector<double> ms;    ///< Per interleaved round; empty when not measured.
  std::string not_measured;  ///< Why this command cannot run the family; empty when measured.
  bool fastest = false;      ///< The lowest median of the measured rows.
  bool chosen = false;       ///< Auto's choice by prediction (always measured).
  /// What `run --plan auto` runs: the choice, or what its timed check keeps (always measured;
  /// a row of its own where the table's best of each family does not hold it).
  bool auto_runs = false;
  CandidateCosts costs = {};  ///< What the prediction used (its PlanCandidate::costs).
};

/// The families compared and the report.
struct FamilyBench {
  /// Measured rows by prediction (then the plan auto runs where no row holds it, the pipeline
  /// and the split), then the others.
  std::vector<FamilyBenchRow> rows;
  nlohmann::json report;  ///< As `--json` prints it.
  double planning_ms = 0;
  /// The spatial row's largest |split - whole| over the outputs of one run, against the
  /// sequential row's (unset without both).
  std::optional<double> spatial_max_abs_difference;
  /// Auto's timed check (time_auto_check), where `run --plan auto` makes one.
  std::optional<AutoCheck> auto_check;
  /// For several samples: how `run --plan auto` then decided on its pipelined stages (timed, or
  /// why not) and what it kept; empty where no stages were offered.
  std::string pipeline_check;
};

/// Plans the candidate table once (auto), takes the fastest prediction of each family present
/// (hybrid plans apart from even task splits) and times them interleaved: `settings.warmup`
/// rounds, then `settings.repeat` rounds alternating the order. With `settings.machine` the
/// spatial split is timed among them (its outputs checked against the sequential row's), and
/// so are pipelined stages on its devices (auto's own task plan of them). Before the timed
/// rounds, auto's timed check runs as `run --plan auto` makes it, timed by `timer` (a test gives
/// fake times), and so is its offer of pipelined stages; what it keeps is marked
/// FamilyBenchRow::auto_runs.
FamilyBench run_family_bench(const ModelBenchSettings& settings,
                             const RunTimer& timer = time_one_run);

/// The comparison as text, as `cleave bench --families` prints it.
std::string family_bench_text(const ModelBenchSettings& settings, const FamilyBench& bench);

}  // namespace cleave
