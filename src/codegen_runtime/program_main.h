// The command line shared by generated C++ programs (one process, or one rank of several).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen_runtime/static_program.h"
#include "runtime/tensor.h"
#include "runtime/wait_policy.h"

namespace cleave {

struct ProgramMainOptions {
  std::map<std::string, std::string> inputs;
  std::string output_dir;
  std::string weights;
  int warmup = 0;
  int repeat = 1;
  uint64_t seed = 0;
  bool json = false;
  /// One-process programs only (--fixed-threads): keep the plan's intra-op threads even when
  /// other processes hold the cores (as CLEAVE_FIXED_THREADS does).
  bool fixed_threads = false;
  double rank_timeout = 60;  ///< Rank programs only (--rank-timeout).
};

/// Parses `cleave run`'s options (--input, --output-dir, --warmup, --repeat, --seed, --json)
/// and --weights; --rank-timeout too when `ranks`, else --fixed-threads. Sets `help` for --help/-h.
/// Throws Error naming the option for anything else or a bad value.
ProgramMainOptions parse_program_options(int argc, char** argv, bool ranks, bool& help);

/// The usage text of a generated executable called `name`.
std::string program_usage(const std::string& name, bool ranks);

/// The inputs of one run, in graph input order: --input files, else `cleave run --seed S`'s
/// seeded values. Throws Error naming an input of the wrong type or shape or a name the model
/// lacks.
std::vector<Tensor> program_inputs(const StaticProgramTables& tables,
                                   const ProgramMainOptions& options);

/// One plain tensor per graph output, in order, to run into.
std::vector<Tensor> program_output_buffers(const StaticProgramTables& tables);

/// Writes the outputs (--output-dir) and prints the report as `cleave run` does (--json: the
/// report, `extra` merged in). Returns the exit code. A run of a stream of several samples
/// (`sample_outputs`, per sample) also writes every sample's outputs as sample_K/NAME.npy and
/// reports the samples and the samples per second, as `mpirun cleave run --samples` does (and
/// each sample's latency where `extra` has "sample_latency_ms").
int report_program_run(const StaticProgramTables& tables, const ProgramMainOptions& options,
                       const std::vector<Tensor>& outputs, const std::vector<double>& latencies,
                       std::size_t baseline_rss, const nlohmann::json& extra,
                       const std::vector<std::vector<Tensor>>& sample_outputs = {});

/// A stream's per-sample latencies as the report gives them (`cleave run --samples`'s
/// "sample_latency_ms"): median, max and every sample's, in milliseconds, from `seconds`.
nlohmann::json sample_latency_json(const std::vector<double>& seconds);

/// Intra-op threads per worker for a one-process program on a host in this state: the plan's
/// while the cores other processes leave free hold them, else fewer, down to one (as `cleave
/// run --plan` does, plan_threads_for). A generated program cannot fold its workers onto fewer
/// threads: each keeps its own. `fixed` keeps the plan's.
int program_threads_per_worker(const StaticProgramTables& tables, bool fixed, const HostLoad& load);

/// The process's resident-memory high-water mark.
std::size_t process_peak_rss_bytes();

}  // namespace cleave
