// `cleave run`'s driver: load, prepare, the timed runs, and the report of what they did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/plan_and_run.h"
#include "pipeline/session.h"
#include "runtime/trace.h"
#include "runtime/wait_policy.h"
#include "support/atomic_output.h"

namespace cleave {

/// What `cleave run` was asked to do (its options).
struct ModelRunSettings {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string output_dir;
  uint64_t seed = 0;
  int threads = 1;
  bool fixed_threads = false;
  int warmup = 0;
  int repeat = 1;
  bool stats = false;
  bool json = false;
  bool no_optimize = false;
  bool plain_layouts = false;
  std::string layouts = "auto";
  bool verbose = false;
  std::string plan;  ///< Empty: sequential executor.
  /// A machine file whose devices auto may split the model over (RunRecipe::machine); --plan
  /// auto only.
  std::string machine;
  std::string costs = "profile";
  int workers = 2;
  int threads_per_worker = 1;
  int samples = 1;
  std::string trace_file;
  std::string gantt_file;
  bool no_auto_check = false;
  double rank_timeout = 60;
  bool read_whole_model = false;
  bool keep_loaded_weights = false;
};

/// What a run reads (model, plan, --input files), so that no output replaces it.
std::vector<std::string> files_read(const ModelRunSettings& settings);

/// A sample's graph inputs: the --input files, and seeded random values for the others.
std::map<std::string, Tensor> model_run_inputs(const Graph& graph, const ModelRunSettings& settings,
                                               uint64_t seed);

/// Under mpirun, each rank runs its worker's tasks of a plan file (src/distributed/).
int run_model_on_ranks(const ModelRunSettings& settings);

/// The timed runs and what was decided for them.
struct ModelRun {
  std::shared_ptr<Session> session;
  std::shared_ptr<PreparedShape> shape;  ///< The input shape the runs ran.
  PreparedRun& prepared() { return shape->run; }
  const PreparedRun& prepared() const { return shape->run; }
  std::vector<Tensor> outputs;    ///< Of the last run.
  std::vector<double> latencies;  ///< Milliseconds per timed run.
  HostLoad host_load;
  int threads = 1;               ///< Intra-op threads the sequential executor ran.
  int claim_threads = 0;         ///< RunRecipe::claim_threads.
  std::size_t baseline_rss = 0;  ///< Peak RSS before the model was loaded.
};

/// Loads and prepares the model, then the warm-up and timed runs (errors name the model).
ModelRun run_model_timed(const ModelRunSettings& settings);

/// Per op (or per "op implementation") type: summed seconds per run and node count.
struct OpTime {
  std::string op;
  double seconds = 0;
  int nodes = 0;
};

/// What `cleave run` reports: the JSON, and what its text adds.
struct ModelRunReport {
  nlohmann::json json;
  bool plan_fitted = false;  ///< The plan ran on other counts than its own (host load).
  std::vector<OpTime> op_times;
  std::vector<OpTime> implementation_times;
};

/// The report of `run`; writes the trace and Gantt files, and the outputs into `output_folder`
/// (may be null), committing it.
ModelRunReport model_run_report(const ModelRunSettings& settings, const ModelRun& run,
                                AtomicFolder* output_folder);

/// The report as text, as `cleave run` prints it.
std::string model_run_text(const ModelRunSettings& settings, const ModelRun& run,
                           const ModelRunReport& report);

}  // namespace cleave
