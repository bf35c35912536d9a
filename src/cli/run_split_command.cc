// `cleave run-split DIR`: runs a spatial split on MPI ranks (src/pipeline/split_run.cc).
#include <memory>

#include "cli/commands.h"
#include "cli/option_limits.h"
#include "ir/graph.h"
#include "pipeline/split_run.h"
#include "runtime/wait_policy.h"

namespace cleave::cli {

void register_run_split(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<SplitRunSettings>();
  CLI::App* command = app.add_subcommand(
      "run-split",
      "Run a split written by `cleave split` on MPI ranks: mpirun -np N cleave run-split DIR");
  command
      ->add_option("dir", settings->folder,
                   "Folder written by `cleave split` (manifest.json, partitioned.onnx, plan.json)")
      ->required();
  command->add_option("--input", settings->inputs,
                      "name=file.npy for a graph input (repeatable); others get seeded random "
                      "values, the same on every rank");
  command->add_option("--seed", settings->seed, "Seed of the random inputs")->default_val(0);
  command->add_option("--model", settings->model,
                      "The model that was split: refuse DIR when its fingerprint differs");
  command
      ->add_option("--output-dir", settings->output_dir,
                   "Rank 0 writes every graph output as DIR/<name>.npy")
      ->check(path_given());
  command->add_option("--warmup", settings->warmup, "Untimed runs first")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  command->add_option("--repeat", settings->repeat, "Timed runs")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--samples", settings->samples,
                   "Samples streamed through the ranks per repeat (sample s's random inputs "
                   "seeded with --seed + s); the report gives the throughput")
      ->default_val(1)
      ->check(integer_in(1, kMaxSamples));
  command->add_option("--threads", settings->threads, "Intra-op threads per rank")
      ->default_val(1)
      ->check(CLI::Range(1, 1024));
  command->add_flag("--fixed-threads", settings->fixed_threads,
                    "Use --threads as given even when other processes hold the cores (also: "
                    "CLEAVE_FIXED_THREADS set); by default a host's ranks share the free ones");
  command
      ->add_option("--rank-timeout", settings->rank_timeout_seconds,
                   "Seconds a rank waits for a message or a peer before every rank stops")
      ->default_val(60)
      ->check(timeout_seconds());
  command
      ->add_option("--layouts", settings->layouts,
                   "Convolution family of every sub-model: blocked, winograd or channels-last "
                   "(as `cleave run --layouts`)")
      ->check(CLI::IsMember({"blocked", "winograd", "channels-last"}))
      ->default_val("blocked");
  command->add_flag("--json", settings->json, "Print the report as JSON");
  command
      ->add_option("--trace", settings->trace_file,
                   "Rank 0 writes the last run's tasks on every rank as Chrome-trace JSON")
      ->check(path_given());
  command->callback([settings, &action] {
    settings->fixed_threads = threads_fixed_by_user(settings->fixed_threads);
    action = [settings] { return run_split_on_ranks(*settings); };
  });
}

}  // namespace cleave::cli
