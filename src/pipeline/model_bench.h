// `cleave bench`'s driver: sequential vs planned parallel latency, interleaved, and its report.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/static_cost.h"
#include "runtime/convolution_family.h"
#include "runtime/executor_interface.h"

namespace cleave {

/// What `cleave bench` was asked to do (its options).
struct ModelBenchSettings {
  std::string model;
  std::vector<std::string> shapes;
  int workers = 2;
  int warmup = 3;
  int repeat = 20;
  std::string costs = "profile";
  std::string strategy = "auto";
  std::string split;      ///< A `cleave split` folder of the model, timed beside the others.
  bool families = false;  ///< Time the best plan of each family instead (family_bench.h).
  int samples = 1;        ///< Samples per run, with `families` (data-parallel, pipelines).
  /// With `families`: a machine file whose devices the model is split over (the spatial row,
  /// one worker per device on this host's threads).
  std::string machine;
  bool json = false;
};

/// One timed variant: its name and milliseconds per interleaved run.
struct BenchVariantTimes {
  std::string name;
  std::vector<double> ms;
};

/// The timed comparison and its report.
struct ModelBench {
  nlohmann::json report;  ///< As `--json` prints it.
  std::size_t nodes = 0;
  StaticCostReport shape;
  ConvolutionFamily family{};
  double predicted_ms = 0;  ///< The chosen plan's makespan.
  double planning_ms = 0;
  std::vector<BenchVariantTimes> variants;  ///< Sequential, intra-op, plan, then the split.
  bool equal = false;                       ///< Every checked variant matched the sequential run.
  std::vector<std::string> checked;         ///< The plans whose outputs were checked.
  bool has_split = false;
  std::size_t split_nodes = 0;
  int split_machines = 0;
  double split_error = 0;  ///< Max |split - whole|.
  double split_scale = 0;  ///< Max |whole|.
};

/// Runs every executor on `inputs` (one entry per sample) in `warmup` untimed rounds, then
/// `repeat` rounds of two untimed and one timed run each, the order reversed every other round
/// so that the machine's drift affects every variant alike, and each round with only its
/// executor's threads alive (time_in_rounds); `ms[v]` gets executor v's milliseconds per round.
void time_interleaved(const std::vector<ExecutorInterface*>& executors,
                      const std::vector<SampleInputs>& inputs, int warmup, int repeat,
                      std::vector<std::vector<double>>& ms);

/// Loads and plans the model, times the variants interleaved and checks their outputs
/// (errors name the model or the split folder).
ModelBench run_model_bench(const ModelBenchSettings& settings);

/// The report as text, as `cleave bench` prints it.
std::string model_bench_text(const ModelBenchSettings& settings, const ModelBench& bench);

}  // namespace cleave
