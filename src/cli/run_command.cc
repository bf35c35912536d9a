// `cleave run`: computes a model's outputs on this CPU, times it, and reports memory and ops.
#include <fmt/core.h>

#include <memory>
#include <optional>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "distributed/mpi_session.h"
#include "pipeline/model_run.h"
#include "support/atomic_output.h"
#include "support/cpu_quota.h"
#include "support/error.h"

namespace cleave::cli {

namespace {

using RunSettings = ModelRunSettings;

int run_model(const RunSettings& settings) {
  if (settings.repeat < 1) throw Error("--repeat must be at least 1");
  if (!settings.plan.empty() && launched_by_mpi()) return run_model_on_ranks(settings);
  // Refused before the model runs (a file in the way); filled and moved into place at the end.
  std::optional<AtomicFolder> output_folder;
  if (!settings.output_dir.empty())
    output_folder.emplace(settings.output_dir,
                          FolderRules{FolderRules::Existing::kMerge, files_read(settings)});
  for (const std::string& file : {settings.trace_file, settings.gantt_file})
    if (!file.empty()) require_file_target(file);
  const ModelRun run = run_model_timed(settings);
  ModelRunReport report =
      model_run_report(settings, run, output_folder ? &*output_folder : nullptr);
  report.json["isa"] = isa_json();
  if (settings.json) {
    fmt::print("{}\n", report.json.dump(2));
    return 0;
  }
  fmt::print("{}", model_run_text(settings, run, report));
  return 0;
}

}  // namespace

void register_run(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<RunSettings>();
  CLI::App* command =
      app.add_subcommand("run", "Compute a model's outputs on this CPU and time it");
  command->add_option("model", settings->model, "ONNX model file")->required();
  command->add_option(
      "--input", settings->inputs,
      "name=file.npy for a graph input (repeatable); others get seeded random values");
  command->add_option("--shape", settings->shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
  command
      ->add_option("--output-dir", settings->output_dir,
                   "Write every graph output as DIR/<name>.npy")
      ->check(path_given());
  command->add_option("--seed", settings->seed, "Seed of the random inputs")->default_val(0);
  command
      ->add_option("--threads", settings->threads,
                   "Intra-op threads; without --plan, no more than the cores other processes "
                   "leave free when the run starts (at least 1)")
      ->default_val(1)
      ->check(thread_count());
  command->add_flag("--fixed-threads", settings->fixed_threads,
                    "Use --threads (or the plan's workers and threads) as given even when other "
                    "processes hold the cores (also: CLEAVE_FIXED_THREADS set)");
  command->add_option("--warmup", settings->warmup, "Untimed runs first")
      ->default_val(0)
      ->check(integer_in(0, kMaxRounds));
  command->add_option("--repeat", settings->repeat, "Timed runs")
      ->default_val(1)
      ->check(integer_in(1, kMaxRounds));
  command->add_flag("--stats", settings->stats,
                    "Report time per op type, and per op and implementation");
  command->add_flag("--json", settings->json, "Print the report as JSON");
  command->add_flag("--no-optimize", settings->no_optimize, "Skip the graph passes");
  command->add_flag("--plain-layouts", settings->plain_layouts,
                    "Keep every tensor in plain layout (no oneDNN blocking)");
  command
      ->add_option("--layouts", settings->layouts,
                   "Convolution family: auto (time each once per model and thread count, "
                   "cached), blocked (channel blocks: 16 on AVX-512, 8 on AVX2), winograd "
                   "(blocks, 3x3 stride-1 convolutions by Winograd) or channels-last")
      ->check(CLI::IsMember({"auto", "blocked", "winograd", "channels-last"}))
      ->default_val("auto");
  command->add_flag("-v,--verbose", settings->verbose, "Log each loading step");
  command->add_option("--plan", settings->plan,
                      "Run a plan in parallel: a plan.json from `cleave plan`, auto, or pipeline "
                      "(the model cut into --workers stages, --samples samples streamed "
                      "through them). Under mpirun: a plan file of one worker per rank, or auto "
                      "(rank 0 plans for the ranks; its choice, the runner-up of another family, "
                      "the spatial split where predicted within 1.25x of the choice, and "
                      "all-on-rank-0 are timed on the ranks and the fastest kept)");
  command->add_option("--machine", settings->machine,
                      "With --plan auto: a machine file of devices every family plans on "
                      "instead of --workers x --threads-per-worker, the model split over them "
                      "among them (one worker per device on this host's threads); under mpirun, "
                      "one device per rank (default: the ranks as equal devices of this host's "
                      "kind)");
  command
      ->add_option("--costs", settings->costs,
                   "Costs for --plan auto or pipeline: profile, static or analytical")
      ->check(CLI::IsMember({"profile", "static", "analytical"}))
      ->default_val("profile");
  command
      ->add_option("--workers", settings->workers,
                   "Workers for --plan auto (stages for pipeline; default: the cores this "
                   "process may use)")
      ->default_val(usable_cores())
      ->check(integer_in(1, kMaxWorkers));
  command
      ->add_option("--threads-per-worker", settings->threads_per_worker,
                   "Intra-op threads per worker for --plan auto or pipeline")
      ->default_val(1)
      ->check(thread_count());
  command
      ->add_option("--samples", settings->samples,
                   "Samples in flight for --plan auto (hyperclustering) or pipeline (streamed "
                   "through the stages); under mpirun, inputs "
                   "pushed through the ranks per repeat (a pipelined stream)")
      ->default_val(1)
      ->check(integer_in(1, kMaxSamples));
  command->add_flag("--no-auto-check", settings->no_auto_check,
                    "Keep --plan auto's predicted choice even when it is parallel (by default a "
                    "few timed runs against the sequential plan decide)");
  command
      ->add_option("--rank-timeout", settings->rank_timeout,
                   "Under mpirun: seconds a rank waits for a message or a peer before every rank "
                   "stops")
      ->default_val(60)
      ->check(timeout_seconds());
  command->add_flag("--read-whole-model", settings->read_whole_model,
                    "Under mpirun: every rank reads the whole model, then drops other ranks' "
                    "weights (by default, with --no-optimize, each reads only its own; for "
                    "measuring what that saves)");
  command->add_flag("--keep-loaded-weights", settings->keep_loaded_weights,
                    "Under mpirun: keep each weight as loaded after the kernels packed their "
                    "copy (by default it is freed; for measuring what that saves)");
  command
      ->add_option("--trace", settings->trace_file,
                   "Write the last parallel run as Chrome-trace JSON")
      ->check(path_given());
  command->add_option("--gantt", settings->gantt_file, "Write the last parallel run as a Gantt SVG")
      ->check(path_given());
  command->callback([settings, &action] { action = [settings] { return run_model(*settings); }; });
}

}  // namespace cleave::cli
