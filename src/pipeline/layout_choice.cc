// Layout choice: time the model in both convolution layouts, keep the faster, cache it.
#include "pipeline/layout_choice.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "cost/cost_table.h"
#include "onnx/atomic_file.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

// Bump when kernels change enough that old measurements no longer hold.
constexpr int kCacheVersion = 2;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Fastest latency in ms of one layout family; the executor is gone when this returns. The
// minimum, not the median: the variants run one after the other, and on a shared machine a
// burst of other work can slow one variant's whole series but can never speed it up.
double time_variant(const Graph& graph, ExecutorOptions options, bool channels_last,
                    const std::map<std::string, Tensor>& inputs,
                    const LayoutChoiceOptions& choice) {
  options.channels_last = channels_last;
  options.collect_stats = false;
  Executor executor(graph, options);
  for (int i = 0; i < choice.warmup; ++i) executor.run(inputs);
  std::vector<double> latencies;
  const auto start = std::chrono::steady_clock::now();
  // Each variant gets half the budget.
  while (static_cast<int>(latencies.size()) < choice.min_runs ||
         (static_cast<int>(latencies.size()) < choice.max_runs &&
          seconds_since(start) < choice.budget_seconds / 2)) {
    const auto run_start = std::chrono::steady_clock::now();
    executor.run(inputs);
    latencies.push_back(seconds_since(run_start) * 1e3);
  }
  return *std::min_element(latencies.begin(), latencies.end());
}

std::string cache_key(const Graph& graph, const ExecutorOptions& options) {
  return fmt::format("{}-t{}-v{}", graph_fingerprint(graph), options.threads, kCacheVersion);
}

}  // namespace

bool layouts_can_differ(const Graph& graph) {
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.op_type != "Conv" || !node.domain.empty() || node.inputs.empty()) continue;
    if (graph.value(node.inputs[0]).shape.rank() == 4) return true;
  }
  return false;
}

LayoutChoice choose_layouts(const Graph& graph, const ExecutorOptions& options,
                            const std::map<std::string, Tensor>& inputs,
                            const LayoutChoiceOptions& choice_options) {
  LayoutChoice choice;
  if (!options.blocked_layouts || !layouts_can_differ(graph)) return choice;
  const fs::path cache =
      fs::path(choice_options.cache_directory.empty() ? default_cache_directory("layouts")
                                                      : choice_options.cache_directory) /
      (cache_key(graph, options) + ".json");
  if (choice_options.use_cache && fs::exists(cache)) {
    try {
      std::ifstream in(cache);
      nlohmann::json json = nlohmann::json::parse(in);
      choice.channels_last = json.at("channels_last").get<bool>();
      choice.blocked_ms = json.at("blocked_ms").get<double>();
      choice.channels_last_ms = json.at("channels_last_ms").get<double>();
      choice.measured = true;
      choice.cached = true;
      if (choice_options.progress) {
        choice_options.progress(fmt::format("layouts: reused {}", cache.string()));
      }
      return choice;
    } catch (const std::exception&) {
      // A damaged entry is measured again and overwritten.
    }
  }
  if (choice_options.progress) choice_options.progress("layouts: timing 16-channel blocks");
  choice.blocked_ms = time_variant(graph, options, false, inputs, choice_options);
  if (choice_options.progress) choice_options.progress("layouts: timing channels-last");
  choice.channels_last_ms = time_variant(graph, options, true, inputs, choice_options);
  choice.channels_last = choice.channels_last_ms < choice.blocked_ms;
  choice.measured = true;
  if (choice_options.use_cache) {
    nlohmann::json json = {{"channels_last", choice.channels_last},
                           {"blocked_ms", choice.blocked_ms},
                           {"channels_last_ms", choice.channels_last_ms},
                           {"threads", options.threads}};
    try {
      fs::create_directories(cache.parent_path());
      write_file_atomically(cache.string(), json.dump(2) + "\n");
    } catch (const std::exception&) {
      // An unwritable cache only costs the measurement next time.
    }
  }
  return choice;
}

std::string describe(const LayoutChoice& choice) {
  const char* name = choice.channels_last ? "channels-last" : "16-channel blocks";
  if (!choice.measured) return name;
  return fmt::format("{} ({} {:.3f} ms vs {:.3f} ms {})", name,
                     choice.cached ? "measured earlier:" : "measured:",
                     choice.channels_last ? choice.channels_last_ms : choice.blocked_ms,
                     choice.channels_last ? choice.blocked_ms : choice.channels_last_ms,
                     choice.channels_last ? "blocked" : "channels-last");
}

}  // namespace cleave
