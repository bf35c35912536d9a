// The command line shared by generated C++ programs (one process, or one rank of several).
#pragma once

#include <chrono>
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

/// The threads of a one-process program on a host in this state, as `cleave run --plan` runs
/// its plan (plan_threads_for): the plan's while the cores other processes leave free hold
/// them, else first fewer intra-op threads per worker, down to one, then the workers folded
/// onto the free cores (`threads` below the workers: WorkerPermits). `fixed` keeps the plan's.
PlanThreads program_threads(const StaticProgramTables& tables, bool fixed, const HostLoad& load);

/// The process's resident-memory high-water mark.
std::size_t process_peak_rss_bytes();

/// The one timing loop of a generated program's main (StaticProgram, SampleStreamProgram):
/// threads for the host's load unless fixed (noted in `extra`), `options.warmup`
/// untimed runs, then `options.repeat` timed ones; returns each timed run's milliseconds.
template <class Program>
std::vector<double> time_program_runs(Program& program, const StaticProgramTables& tables,
                                      const ProgramMainOptions& options, const void* const* inputs,
                                      void* const* outputs, nlohmann::json& extra) {
  // The plan's threads only while other processes leave the cores free: a team whose thread
  // waits for a core makes every barrier wait (docs/results/load.md). Sampled once the weights
  // and inputs are read, as `cleave run` does.
  if (!threads_fixed_by_user(options.fixed_threads)) {
    const HostLoad load = sample_lasting_host_load();
    const PlanThreads threads = program_threads(tables, false, load);
    program.set_threads(threads);
    extra["ran_threads_per_worker"] = threads.threads_per_worker;
    extra["threads"] = threads.threads;
    extra["host_load"] = {{"other_runnable", load.other_runnable}, {"cores", load.cores}};
  }
  for (int i = 0; i < options.warmup; ++i) program.run(inputs, outputs);
  std::vector<double> latencies;
  for (int i = 0; i < options.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    program.run(inputs, outputs);
    latencies.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return latencies;
}

}  // namespace cleave
