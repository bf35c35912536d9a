// Convolution family choice: time the model in each family, keep the fastest, cache it.
#include "frontend/layout_choice.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "cost/cost_table.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/random_inputs.h"
#include "runtime/winograd_budget.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/timing.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

// A family's own margin: its entry in `margins`, else `margin`.
double margin_of(ConvolutionFamily family, double margin, const FamilyMargins& margins) {
  auto found = margins.find(family);
  return found == margins.end() ? margin : found->second;
}

// Bump when kernels change enough that old measurements no longer hold.
// v5: the Winograd family runs 3x3 convolutions on small maps direct (winograd_map_pays).
// v6: a lone BatchNormalization runs as a scale and shift (batch_norm_scale_shift.h).
// v7: the Winograd family's small maps depend on the thread count (oneDNN's kernel: 6x6 and
// 7x7 maps of 1-12 M multiply-adds at 2 threads and more) and cleave's own kernel runs
// 512-channel maps to 8x8 direct (winograd_pays).
// v8: at 1 thread the runs are timed in process CPU time (times_in_cpu_time); v7's wall-time
// entries were measured on a loaded host as often as not.
// v9: a family near its bar runs rounds until they settle which side it is on (family_settled);
// v8's entries rest on 3-5 rounds per family that a loaded host moved across the margin. Each
// timed run follows an untimed run of its own executor (untimed_before_each).
// v10: Winograd's margin grows where its weights add more than the plain ones (winograd_margin).
// v11: Winograd's margin counts the largest scratchpad of its kernels too.
constexpr int kCacheVersion = 11;

// Times every other family against blocked in rounds, one timed run of each per round (after
// untimed_before_each untimed ones of the same executor) and the order alternating, so that a burst
// of other work on a shared machine lands on both alike; timing one family's whole series after the
// other's let one burst decide (resnet50 at 2 threads on a Zen 3 cached channels-last as 9% faster
// where paired runs put it 10% slower). Blocked's executor and one other's are alive at a time,
// each other family's rounds in turn with its share of the time: with every family's alive at once,
// fcn_resnet50's first run grew by 589 MiB, its Winograd and channels-last copies of the weights
// together; one at a time, by 451 (ONNX Runtime's peak: 450). Each round holds blocked's time and
// one other family's. Gemm and MatMul read their weights as loaded (pack_product_weights): they
// compute alike in every family, and the loaded bytes stay alive beside the rounds for the
// executor that runs afterwards, so a packed copy held them twice (vgg11's first run peaked at
// 1216 MiB, its classifier's 472 MiB loaded and packed; ONNX Runtime's peak: 1000).
std::vector<std::map<ConvolutionFamily, double>> time_in_rounds(
    const Graph& graph, ExecutorOptions options, const std::vector<ConvolutionFamily>& families,
    const FamilyMargins& margins, const std::map<std::string, Tensor>& inputs,
    const LayoutChoiceOptions& choice, std::size_t& activation_bytes) {
  // The two executors alive run in turn on this thread: their static buffer plans take one
  // arena, as large as the larger plan's (retinanet's 22 MiB each).
  options.shared_arena = std::make_shared<SharedArena>();
  const auto prepare = [&](ConvolutionFamily family) {
    if (choice.progress) choice.progress(fmt::format("layouts: preparing {}", to_string(family)));
    options.convolution_family = family;
    options.collect_stats = false;
    options.pack_product_weights = false;
    auto executor = std::make_unique<Executor>(graph, options);
    for (int i = 0; i < choice.warmup; ++i) executor->run(inputs);
    return executor;
  };
  const std::unique_ptr<Executor> blocked = prepare(ConvolutionFamily::kBlocked);
  // Blocked's packed copies hold the weights its kernels packed for good: their loaded bytes
  // (shared by the caller's graph, blocked's copy of it and the idle copies, nobody else) go
  // until the rounds end, each brought back from blocked's copy while another family's kernel
  // packs it. Held beside blocked's copy and another family's, they made the first run of
  // wide_resnet50_2 peak at 804 MiB (ONNX Runtime's peak: 693).
  const LoadedBytesAside aside(blocked->graph(), blocked->weights_packed_for_good(),
                               2 + choice.idle_weight_copies);
  if (choice.progress && aside.weights() > 0) {
    choice.progress(
        fmt::format("layouts: {:.1f} MiB of loaded weights ({}) set aside while "
                    "the families are timed",
                    static_cast<double>(aside.bytes()) / (1 << 20), aside.weights()));
  }
  std::vector<std::map<ConvolutionFamily, double>> rounds;
  const double others = static_cast<double>(std::max<std::size_t>(families.size(), 2) - 1);
  const bool cpu_time = times_in_cpu_time(options.threads);
  for (ConvolutionFamily family : families) {
    if (family == ConvolutionFamily::kBlocked) continue;
    // What this family must beat: the margin, or a family timed before it that did better.
    const double bar =
        family_bar(relative_to_blocked(rounds), margin_of(family, kFamilyMargin, margins), margins);
    // The other family's first runs (kernels prepared, buffers from the free list, then a plan
    // before its Concat inputs are placed: retinanet's 52 and 44 MiB where a planned run takes
    // 22) are not one of blocked's: its arena goes until its next run.
    blocked->release_activation_memory();
    const std::unique_ptr<Executor> other = prepare(family);
    const std::pair<ConvolutionFamily, Executor*> pair[] = {
        {ConvolutionFamily::kBlocked, blocked.get()}, {family, other.get()}};
    const auto start = std::chrono::steady_clock::now();
    const auto round = [&](int count) {
      std::map<ConvolutionFamily, double> ms;
      for (std::size_t k = 0; k < 2; ++k) {
        const auto& [timed, executor] = pair[(k + static_cast<std::size_t>(count)) % 2];
        for (int i = 0; i < choice.untimed_before_each; ++i) executor->run(inputs);
        const auto run_start = std::chrono::steady_clock::now();
        const double cpu_start = process_cpu_seconds();
        executor->run(inputs);
        ms[timed] = (cpu_time ? process_cpu_seconds() - cpu_start : seconds_since(run_start)) * 1e3;
      }
      activation_bytes = std::max(activation_bytes, options.shared_arena->bytes());
      return std::make_pair(ms[ConvolutionFamily::kBlocked], ms[family]);
    };
    const std::vector<std::pair<double, double>> timed = time_family(
        round, [&] { return seconds_since(start); }, bar, others, choice);
    std::vector<double> ratios;
    for (const auto& [blocked_ms, family_ms] : timed) {
      rounds.push_back({{ConvolutionFamily::kBlocked, blocked_ms}, {family, family_ms}});
      if (blocked_ms > 0) ratios.push_back(family_ms / blocked_ms);
    }
    if (choice.progress) {
      const RatioInterval bounds = median_interval(ratios);
      choice.progress(fmt::format(
          "layouts: {} against blocked: median {:.3f} over {} rounds (bounds {:.3f}-{:.3f}, bar "
          "{:.3f}{}) in {:.2f} s",
          to_string(family), median_of(ratios), ratios.size(), bounds.low, bounds.high, bar,
          family_settled(ratios, bar) ? "" : ", unsettled", seconds_since(start)));
    }
  }
  if (choice.progress) {
    choice.progress(fmt::format("layouts: timed {} interleaved rounds", rounds.size()));
  }
  return rounds;
}

std::string cache_key(const Graph& graph, const ExecutorOptions& options) {
  // The ISA is in the key: a family measured on AVX-512 says nothing about an AVX2 machine;
  // so are the Winograd budget and small-map rule, which decide what the Winograd family's run
  // computes.
  return fmt::format("{}-t{}-{}-{}-v{}", graph_fingerprint(graph), options.threads, isa_cache_key(),
                     winograd_family_key(), kCacheVersion);
}

bool is_4d_conv(const Graph& graph, const Node& node) {
  return node.op_type == "Conv" && node.domain.empty() && node.inputs.size() >= 2 &&
         graph.value(node.inputs[0]).shape.rank() == 4;
}

LayoutChoice read_cache(const std::filesystem::path& file, const Graph& graph, int threads) {
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
  if (std::optional<JsonField> relative = root.find("relative_to_blocked")) {
    relative->expect_object();
    for (const auto& [name, ratio] : relative->json().items()) {
      std::optional<ConvolutionFamily> timed = parse_convolution_family(name);
      if (!timed) relative->fail("convolution families as keys");
      choice.relative[*timed] = relative->at(name).non_negative();
    }
  }
  if (std::optional<JsonField> ratios = root.find("ratios")) {
    ratios->expect_object();
    for (const auto& [name, values] : ratios->json().items()) {
      std::optional<ConvolutionFamily> timed = parse_convolution_family(name);
      if (!timed) ratios->fail("convolution families as keys");
      const JsonField list = ratios->at(name);
      std::vector<double>& into = choice.ratios[*timed];
      for (std::size_t i = 0; i < list.size(); ++i) into.push_back(list.at(i).non_negative());
    }
  }
  // An entry from before Winograd existed for this graph would hide it.
  if (!choice.fastest_ms.count(choice.family) ||
      (winograd_can_apply(graph, threads) &&
       !choice.fastest_ms.count(ConvolutionFamily::kWinograd))) {
    throw Error("incomplete entry");
  }
  choice.measured = true;
  choice.cached = true;
  if (std::optional<JsonField> clock = root.find("clock"))
    choice.cpu_time = clock->string() == "cpu";
  return choice;
}

}  // namespace

bool times_in_cpu_time(int threads) {
  return threads == 1;
}

bool layouts_can_differ(const Graph& graph) {
  for (NodeId id : graph.node_ids()) {
    if (is_4d_conv(graph, graph.node(id))) return true;
  }
  return false;
}

bool winograd_can_apply(const Graph& graph, int threads) {
  // Without a Winograd kernel it would time the blocked family's kernels a second time.
  if (!winograd_available()) return false;
  const conv_detail::WinogradRun run = winograd_run(threads);
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (!is_4d_conv(graph, node)) continue;
    const Shape& weights = graph.value(node.inputs[1]).shape;
    auto all_ones = [&](std::string_view key) {
      std::vector<int64_t> values = node.ints_attribute(key);
      return std::all_of(values.begin(), values.end(), [](int64_t v) { return v == 1; });
    };
    // A map too small for Winograd runs direct in its family too.
    if (weights.rank() == 4 && weights.is_static() && weights.sizes()[2] == 3 &&
        weights.sizes()[3] == 3 && node.int_attribute("group", 1) == 1 && all_ones("strides") &&
        all_ones("dilations") && winograd_map_pays(graph, node, run)) {
      return true;
    }
  }
  return false;
}

std::map<ConvolutionFamily, std::vector<double>> ratios_to_blocked(
    const std::vector<std::map<ConvolutionFamily, double>>& rounds) {
  std::map<ConvolutionFamily, std::vector<double>> ratios;
  for (const auto& round : rounds) {
    auto blocked = round.find(ConvolutionFamily::kBlocked);
    if (blocked == round.end() || !(blocked->second > 0)) continue;
    for (const auto& [family, ms] : round) ratios[family].push_back(ms / blocked->second);
  }
  return ratios;
}

std::map<ConvolutionFamily, double> relative_to_blocked(
    const std::vector<std::map<ConvolutionFamily, double>>& rounds) {
  std::map<ConvolutionFamily, double> medians;
  for (const auto& [family, values] : ratios_to_blocked(rounds))
    medians[family] = median_of(values);
  return medians;
}

RatioInterval median_interval(std::vector<double> ratios, double error) {
  const auto n = static_cast<int>(ratios.size());
  // P(Binomial(n, 1/2) <= j - 1) for j = 1, 2, ...: the chance that j or more of the n ratios
  // fall below the median, so that x_(j) lies above it (and alike for x_(n+1-j)).
  double tail = 0;
  double term = std::pow(0.5, n);  // P(Binomial(n, 1/2) = 0)
  int j = 0;
  for (int k = 0; 2 * k + 1 < n; ++k) {
    tail += term;
    if (tail > error) break;
    j = k + 1;
    term *= static_cast<double>(n - k) / (k + 1);
  }
  if (j == 0) {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  std::sort(ratios.begin(), ratios.end());
  return {ratios[static_cast<std::size_t>(j - 1)], ratios[static_cast<std::size_t>(n - j)]};
}

double family_bar(const std::map<ConvolutionFamily, double>& relative, double margin,
                  const FamilyMargins& margins) {
  double bar = 1.0 - margin;
  for (const auto& [family, ratio] : relative) {
    if (family != ConvolutionFamily::kBlocked && ratio < 1.0 - margin_of(family, margin, margins))
      bar = std::min(bar, ratio);
  }
  return bar;
}

double winograd_margin(const WinogradSelection& selection, double margin) {
  if (!(selection.plain_weight_bytes > 0)) return margin;
  const double added = selection.kept_bytes() + selection.kept_scratchpad_bytes();
  return margin * std::max(1.0, added / selection.plain_weight_bytes);
}

FamilyMargins family_margins(const Graph& graph, int threads, const WinogradKernel& kernel) {
  FamilyMargins margins;
  const double winograd =
      winograd_margin(select_winograd(graph, winograd_budget_from_environment(), threads, kernel));
  if (winograd != kFamilyMargin) margins[ConvolutionFamily::kWinograd] = winograd;
  return margins;
}

bool family_settled(const std::vector<double>& ratios, double bar, double error) {
  const RatioInterval interval = median_interval(ratios, error);
  return interval.high < bar || interval.low > bar;
}

ConvolutionFamily pick_settled_family(
    const std::map<ConvolutionFamily, std::vector<double>>& ratios, double margin,
    const FamilyMargins& margins) {
  ConvolutionFamily best = ConvolutionFamily::kBlocked;
  double best_median = 1.0;
  for (const auto& [family, values] : ratios) {
    if (family == ConvolutionFamily::kBlocked || values.empty()) continue;
    const double median = median_of(values);
    const double bar = std::min(1.0 - margin_of(family, margin, margins), best_median);
    // Against blocked the median decides, as it did before rounds were bounded: at load 2-4
    // efficientnet_v2_s's Winograd rounds (0.90-1.00) stayed unsettled in one fresh choice of
    // three and blocked, its slowest family, was kept.
    if (median < bar && (best == ConvolutionFamily::kBlocked || family_settled(values, bar))) {
      best = family;
      best_median = median;
    }
  }
  return best;
}

std::vector<std::pair<double, double>> time_family(
    const std::function<std::pair<double, double>(int)>& round,
    const std::function<double()>& elapsed, double bar, double others,
    const LayoutChoiceOptions& choice) {
  const double share = choice.budget_seconds / others;
  const double unsettled_share = choice.unsettled_budget_seconds / others;
  std::vector<std::pair<double, double>> timed;
  std::vector<double> ratios;
  for (int count = 0;; ++count) {
    const double seconds = elapsed();
    const bool due = count < choice.min_runs || (count < choice.max_runs && seconds < share);
    // Near the bar a few rounds of a loaded host land on either side of it (resnet101 at 1
    // thread chose blocked and Winograd in turn); the rounds go on until they say which.
    if (!due && (count >= choice.unsettled_max_runs || seconds >= share + unsettled_share ||
                 family_settled(ratios, bar))) {
      break;
    }
    const auto [blocked_ms, family_ms] = timed.emplace_back(round(count));
    if (blocked_ms > 0) ratios.push_back(family_ms / blocked_ms);
  }
  return timed;
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
      choice = read_cache(cache, graph, options.threads);
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
  if (winograd_can_apply(graph, options.threads)) families.push_back(ConvolutionFamily::kWinograd);
  families.push_back(ConvolutionFamily::kChannelsLast);
  const FamilyMargins margins = family_margins(graph, options.threads);
  const std::vector<std::map<ConvolutionFamily, double>> rounds = time_in_rounds(
      graph, options, families, margins, inputs, choice_options, choice.rounds_activation_bytes);
  for (const auto& round : rounds) {
    for (const auto& [family, ms] : round) {
      auto [entry, first] = choice.fastest_ms.emplace(family, ms);
      if (!first) entry->second = std::min(entry->second, ms);
    }
  }
  choice.relative = relative_to_blocked(rounds);
  choice.ratios = ratios_to_blocked(rounds);
  choice.ratios.erase(ConvolutionFamily::kBlocked);
  choice.family = pick_settled_family(choice.ratios, kFamilyMargin, margins);
  choice.measured = true;
  choice.cpu_time = times_in_cpu_time(options.threads);
  if (choice_options.use_cache) {
    nlohmann::json fastest = nlohmann::json::object();
    for (const auto& [family, ms] : choice.fastest_ms) fastest[to_string(family)] = ms;
    nlohmann::json relative = nlohmann::json::object();
    for (const auto& [family, ratio] : choice.relative) relative[to_string(family)] = ratio;
    nlohmann::json ratios = nlohmann::json::object();
    for (const auto& [family, values] : choice.ratios) ratios[to_string(family)] = values;
    nlohmann::json json = {
        {"family", to_string(choice.family)},        {"fastest_ms", fastest},
        {"relative_to_blocked", relative},           {"ratios", ratios},
        {"clock", choice.cpu_time ? "cpu" : "wall"}, {"threads", options.threads}};
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
  const char* unit = choice.cpu_time ? "CPU ms" : "ms";
  text += fmt::format(" ({} {:.3f} {}",
                      choice.cached ? "measured earlier:" : "measured:", winner->second, unit);
  const char* separator = ";";
  for (const auto& [family, ms] : choice.fastest_ms) {
    if (family == choice.family) continue;
    text += fmt::format("{} {} {:.3f} {}", separator, to_string(family), ms, unit);
    separator = ",";
  }
  separator = "; median against blocked in interleaved rounds:";
  for (const auto& [family, ratio] : choice.relative) {
    if (family == ConvolutionFamily::kBlocked) continue;
    text += fmt::format("{} {} {:.3f}", separator, to_string(family), ratio);
    auto ratios = choice.ratios.find(family);
    if (ratios != choice.ratios.end() && !ratios->second.empty()) {
      const RatioInterval bounds = median_interval(ratios->second);
      text += std::isfinite(bounds.low)
                  ? fmt::format(" ({} rounds, {:.3f}-{:.3f})", ratios->second.size(), bounds.low,
                                bounds.high)
                  : fmt::format(" ({} rounds)", ratios->second.size());
    }
    separator = ",";
  }
  return text + ")";
}

}  // namespace cleave
