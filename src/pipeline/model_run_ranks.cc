// `mpirun cleave run`: the run's settings handed to the ranks (pipeline/rank_run.cc).
//
// Its own object, so that a program that never runs on ranks (the sanitizer build's tests
// link without distributed/) does not pull run_on_ranks in with the rest of model_run.
#include <fmt/core.h>

#include "frontend/model_plan.h"
#include "pipeline/model_run.h"
#include "pipeline/rank_run.h"
#include "support/error.h"

namespace cleave {

int run_model_on_ranks(const ModelRunSettings& settings) {
  if (settings.plan == "pipeline") {
    throw Error(
        "under mpirun, --plan takes a plan file or auto (pipelined stages on ranks are a plan "
        "file: `cleave plan --strategy pipeline --machine M --samples N -o P`)");
  }
  if (!settings.machine.empty() && settings.plan != "auto")
    throw Error(fmt::format("--machine: needs --plan auto, got --plan {}", settings.plan));
  RankRunSettings ranks;
  ranks.model = settings.model;
  ranks.plan = settings.plan;
  ranks.auto_plan.machine = settings.machine;
  ranks.auto_plan.costs = settings.costs;
  ranks.auto_plan.check = !settings.no_auto_check;
  ranks.shapes = settings.shapes;
  ranks.optimize = !settings.no_optimize;
  ranks.fuse_exported_forms =
      settings.no_optimize && settings.plan != "auto" && plan_fuses_exported_forms(settings.plan);
  ranks.plain_layouts = settings.plain_layouts;
  ranks.layouts = settings.layouts;
  ranks.threads = settings.threads_per_worker;
  ranks.fixed_threads = threads_fixed_by_user(settings.fixed_threads);
  ranks.warmup = settings.warmup;
  ranks.repeat = settings.repeat;
  ranks.samples = settings.samples;
  ranks.json = settings.json;
  ranks.output_dir = settings.output_dir;
  ranks.files_read = files_read(settings);
  ranks.trace_file = settings.trace_file;
  ranks.rank_timeout_seconds = settings.rank_timeout;
  ranks.read_whole_model = settings.read_whole_model;
  ranks.keep_loaded_weights = settings.keep_loaded_weights;
  if (settings.verbose)
    ranks.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  ranks.inputs = [&settings](const Graph& graph, int sample) {
    return model_run_inputs(graph, settings, settings.seed + static_cast<uint64_t>(sample));
  };
  return run_on_ranks(ranks);
}

}  // namespace cleave
