// Convolution family choice: time the model in each family, keep the fastest, cache it.
#include "pipeline/layout_choice.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cost/cost_table.h"
#include "runtime/cpu_isa.h"
#include "runtime/random_inputs.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/timing.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

// Bump when kernels change enough that old measurements no longer hold.
constexpr int kCacheVersion = 3;

// Fastest latency in ms of one family; the executor is gone when this returns. The minimum,
// not the median: the variants run one after the other, and on a shared machine a burst of
// other work can slow one variant's whole series but can never speed it up.
double time_variant(const Graph& graph, ExecutorOptions options, ConvolutionFamily family,
                    const std::map<std::string, Tensor>& inputs, const LayoutChoiceOptions& choice,
                    int variants) {
  options.convolution_family = family;
  options.collect_stats = false;
  Executor executor(graph, options);
  for (int i = 0; i < choice.warmup; ++i) executor.run(inputs);
  std::vector<double> latencies;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(latencies.size()) < choice.min_runs ||
         (static_cast<int>(latencies.size()) < choice.max_runs &&
          seconds_since(start) < choice.budget_seconds / variants)) {
    const auto run_start = std::chrono::steady_clock::now();
    executor.run(inputs);
    latencies.push_back(seconds_since(run_start) * 1e3);
  }
  return *std::min_element(latencies.begin(), latencies.end());
}

std::string cache_key(const Graph& graph, const ExecutorOptions& options) {
  // The ISA is in the key: a family measured on AVX-512 says nothing about an AVX2 machine.
  return fmt::format("{}-t{}-{}-v{}", graph_fingerprint(graph), options.threads, isa_cache_key(),
                     kCacheVersion);
}

bool is_4d_conv(const Graph& graph, const Node& node) {
  return node.op_type == "Conv" && node.domain.empty() && node.inputs.size() >= 2 &&
         graph.value(node.inputs[0]).shape.rank() == 4;
}

LayoutChoice read_cache(const std::filesystem::path& file, const Graph& graph) {
  const nlohmann::json json = read_json_file(file.string(), "layout cache entry");
  const JsonField root(json, file.string());
  LayoutChoice choice;
  const JsonField family_field = root.at("family");
  std::optional<ConvolutionFamily> family = parse_convolution_family(family_field.string());
  if (!family) family_field.fail("a convolution family");
  choice.family = *family;
  const JsonField fastest = root.at("fastest_ms");
  fastest.expect_object();
  for (const auto& [name, ms] : fastest.json().items()) {
    std::optional<ConvolutionFamily> timed = parse_convolution_family(name);
    if (!timed) fastest.fail("convolution families as keys");
    // A negative or infinite time (an edited entry) would decide the layout on nothing.
    choice.fastest_ms[*timed] = fastest.at(name).non_negative();
  }
  // An entry from before Winograd existed for this graph would hide it.
  if (!choice.fastest_ms.count(choice.family) ||
      (winograd_can_apply(graph) && !choice.fastest_ms.count(ConvolutionFamily::kWinograd))) {
    throw Error("incomplete entry");
  }
  choice.measured = true;
  choice.cached = true;
  return choice;
}

}  // namespace

bool layouts_can_differ(const Graph& graph) {
  for (NodeId id : graph.node_ids()) {
    if (is_4d_conv(graph, graph.node(id))) return true;
  }
  return false;
}

bool winograd_can_apply(const Graph& graph) {
  // Below AVX-512 it would time the blocked family's kernels a second time.
  if (!isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core)) return false;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (!is_4d_conv(graph, node)) continue;
    const Shape& weights = graph.value(node.inputs[1]).shape;
    auto all_ones = [&](std::string_view key) {
      std::vector<int64_t> values = node.ints_attribute(key);
      return std::all_of(values.begin(), values.end(), [](int64_t v) { return v == 1; });
    };
    if (weights.rank() == 4 && weights.is_static() && weights.sizes()[2] == 3 &&
        weights.sizes()[3] == 3 && node.int_attribute("group", 1) == 1 && all_ones("strides") &&
        all_ones("dilations")) {
      return true;
    }
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
      choice = read_cache(cache, graph);
      if (choice_options.progress) {
        choice_options.progress(fmt::format("layouts: reused {}", cache.string()));
      }
      return choice;
    } catch (const std::exception& e) {
      // A damaged or outdated entry is measured again and overwritten.
      if (choice_options.progress) {
        choice_options.progress(fmt::format("layouts: cached entry not used: {}", e.what()));
      }
      choice = LayoutChoice();
    }
  }
  std::vector<ConvolutionFamily> families = {ConvolutionFamily::kBlocked};
  if (winograd_can_apply(graph)) families.push_back(ConvolutionFamily::kWinograd);
  families.push_back(ConvolutionFamily::kChannelsLast);
  for (ConvolutionFamily family : families) {
    if (choice_options.progress)
      choice_options.progress(fmt::format("layouts: timing {}", to_string(family)));
    double ms = time_variant(graph, options, family, inputs, choice_options,
                             static_cast<int>(families.size()));
    choice.fastest_ms[family] = ms;
    if (ms < choice.fastest_ms[choice.family]) choice.family = family;
  }
  choice.measured = true;
  if (choice_options.use_cache) {
    nlohmann::json fastest = nlohmann::json::object();
    for (const auto& [family, ms] : choice.fastest_ms) fastest[to_string(family)] = ms;
    nlohmann::json json = {{"family", to_string(choice.family)},
                           {"fastest_ms", fastest},
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

ConvolutionFamily measured_family(const Graph& graph, int threads,
                                  const std::function<void(const std::string&)>& progress) {
  if (!layouts_can_differ(graph)) return ConvolutionFamily::kBlocked;
  ExecutorOptions options;
  options.threads = threads;
  LayoutChoiceOptions choice_options;
  choice_options.progress = progress;
  return choose_layouts(graph, options, random_inputs(graph, 0), choice_options).family;
}

std::string describe(const LayoutChoice& choice) {
  std::string text = to_string(choice.family);
  if (!choice.measured) return text;
  auto winner = choice.fastest_ms.find(choice.family);
  if (winner == choice.fastest_ms.end()) return text;
  text += fmt::format(" ({} {:.3f} ms",
                      choice.cached ? "measured earlier:" : "measured:", winner->second);
  const char* separator = ";";
  for (const auto& [family, ms] : choice.fastest_ms) {
    if (family == choice.family) continue;
    text += fmt::format("{} {} {:.3f} ms", separator, to_string(family), ms);
    separator = ",";
  }
  return text + ")";
}

}  // namespace cleave
