// `cleave profile`: time every node of a model on this machine and cache the cost table.
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/layout_choice.h"
#include "support/atomic_output.h"

namespace cleave::cli {

namespace {

struct ProfileSettings {
  ModelSettings model;
  int max_threads = 2;
  int repeat = 10;
  bool no_cache = false;
  std::string output;
  bool json = false;
  int top = 15;
  bool force_threads = false;
};

int run_profile(ProfileSettings settings) {
  if (!settings.output.empty()) require_file_target(settings.output);
  // Timing more threads than cores measures contention, not the op; it also takes long.
  std::string note;
  settings.max_threads = cap_threads_at_cores(settings.max_threads, settings.force_threads, &note);
  if (!note.empty()) fmt::print(stderr, "profile: --max-threads: {}\n", note);
  Graph graph = load_model_for(settings.model);
  CostChoice choice;
  choice.max_threads = settings.max_threads;
  choice.repeat = settings.repeat;
  choice.use_cache = !settings.no_cache;
  choice.progress = log_to_stderr(true);
  // The table as profiled (and as -o writes it), not scaled to the host's level now.
  choice.level_check = false;
  // The family a 1-thread-per-worker plan runs in (a single-thread choice).
  choice.family = measured_family(graph, 1, choice.progress);
  fmt::print(stderr, "convolutions: {}\n", to_string(*choice.family));
  CostTable costs = choose_costs(graph, choice);
  nlohmann::json json = cost_table_to_json(costs, graph);
  if (!settings.output.empty()) write_file_atomically(settings.output, json.dump(1));
  if (settings.json) {
    // What became of the cached table (not a part of the table: -o writes none).
    json["profile_cache"] = cache_use_to_json(costs.cache_use);
    fmt::print("{}\n", json.dump(2));
    return 0;
  }
  for (int t = 1; t <= settings.max_threads; ++t) {
    fmt::print("{} thread(s): {:.3f} ms summed over {} nodes\n", t, costs.total_seconds(t) * 1e3,
               graph.node_count());
  }
  std::vector<NodeId> ids = graph.node_ids();
  std::sort(ids.begin(), ids.end(),
            [&](NodeId a, NodeId b) { return costs.seconds(a) > costs.seconds(b); });
  fmt::print("\n{:<40} {:<20} {:>10} {:>10}\n", "node", "op", "ms @1",
             fmt::format("ms @{}", settings.max_threads));
  for (std::size_t i = 0; i < ids.size() && static_cast<int>(i) < settings.top; ++i) {
    fmt::print("{:<40} {:<20} {:>10.3f} {:>10.3f}\n", graph.node(ids[i]).name,
               graph.node(ids[i]).op_type, costs.seconds(ids[i], 1) * 1e3,
               costs.seconds(ids[i], settings.max_threads) * 1e3);
  }
  return 0;
}

}  // namespace

void register_profile(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<ProfileSettings>();
  CLI::App* command =
      app.add_subcommand("profile", "Time every node on this machine and cache the cost table");
  command->add_option("model", settings->model.model, "ONNX model file")->required();
  add_model_load_options(command, settings->model);
  command
      ->add_option("--max-threads", settings->max_threads,
                   "Profile with 1..N intra-op threads (capped at the cores present)")
      ->default_val(2)
      ->check(thread_count());
  command->add_flag("--force-threads", settings->force_threads,
                    "Time --max-threads counts above the cores present too");
  command->add_option("--repeat", settings->repeat, "Timed runs per thread count")
      ->default_val(10)
      ->check(integer_in(1, kMaxRounds));
  command->add_flag("--no-cache", settings->no_cache, "Measure even if a cached table exists");
  command->add_option("-o,--output", settings->output, "Write the cost table as JSON")
      ->check(path_given());
  command->add_option("--top", settings->top, "Nodes listed")->default_val(15);
  command->add_flag("--json", settings->json, "Print the cost table as JSON");
  command->callback(
      [settings, &action] { action = [settings] { return run_profile(*settings); }; });
}

}  // namespace cleave::cli
