// `cleave bench`: sequential vs planned parallel latency, interleaved in one run, with Ramiel's
// tables.
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "cli/option_limits.h"
#include "frontend/model_plan.h"
#include "pipeline/family_bench.h"
#include "pipeline/model_bench.h"
#include "support/cpu_quota.h"

namespace cleave::cli {

namespace {

int run_bench(const ModelBenchSettings& settings) {
  if (settings.families) {
    const FamilyBench bench = run_family_bench(settings);
    fmt::print("{}",
               settings.json ? bench.report.dump(2) + "\n" : family_bench_text(settings, bench));
    return 0;
  }
  const ModelBench bench = run_model_bench(settings);
  if (settings.json)
    fmt::print("{}\n", bench.report.dump(2));
  else
    fmt::print("{}", model_bench_text(settings, bench));
  return bench.equal ? 0 : 1;
}

}  // namespace

void register_bench(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<ModelBenchSettings>();
  CLI::App* command = app.add_subcommand(
      "bench", "Time sequential and planned parallel runs of a model side by side");
  command->add_option("model", settings->model, "ONNX model file")->required();
  command->add_option("--shape", settings->shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
  command
      ->add_option("--workers", settings->workers,
                   "Cores to use (default: the cores this process may use, its cgroup CPU "
                   "quota included)")
      ->default_val(usable_cores())
      ->check(integer_in(1, kMaxWorkers));
  command->add_option("--warmup", settings->warmup, "Untimed rounds first")
      ->default_val(3)
      ->check(integer_in(0, kMaxRounds));
  command->add_option("--repeat", settings->repeat, "Timed rounds")
      ->default_val(20)
      ->check(integer_in(1, kMaxRounds));
  command->add_option("--costs", settings->costs, "profile, static or analytical")
      ->check(CLI::IsMember({"profile", "static", "analytical"}))
      ->default_val("profile");
  command
      ->add_option("--strategy", settings->strategy,
                   "Planner of the parallel variant: as `cleave plan --strategy`, or pipeline "
                   "(the model cut into --workers stages, --samples samples streamed through "
                   "them)")
      ->check(CLI::IsMember(model_strategies()))
      ->default_val("auto");
  CLI::Option* split = command->add_option(
      "--split", settings->split,
      "Also time a `cleave split` folder of the model (its partitioned graph "
      "and plan.json, one worker per machine), checked against the whole model");
  CLI::Option* families =
      command
          ->add_flag("--families", settings->families,
                     "Time the fastest predicted plan of each family of auto's candidate table "
                     "in one interleaved run, beside its prediction")
          ->excludes(split);
  command
      ->add_option("--machine", settings->machine,
                   "With --families: a machine file of devices every family plans on (the "
                   "spatial row among them), one worker per device on this host's threads")
      ->needs(families);
  command
      ->add_option("--samples", settings->samples,
                   "Samples per run, with --families (data-parallel and pipelined rows) or "
                   "--strategy pipeline (every variant runs them)")
      ->default_val(1)
      ->check(integer_in(1, kMaxSamples));
  command->add_flag("--json", settings->json, "Print the report as JSON");
  command->callback([settings, &action] { action = [settings] { return run_bench(*settings); }; });
}

}  // namespace cleave::cli
