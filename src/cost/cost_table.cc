// Cost tables: static weights, roofline estimates, and measured per-node profiles cached on disk.
#include "cost/cost_table.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "analysis/flops.h"
#include "analysis/static_cost.h"
#include "cost/context_profile.h"
#include "cost/peak_rate_cache.h"
#include "cost/profile_cache.h"
#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "runtime/winograd_budget.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/timing.h"

namespace cleave {

namespace fs = std::filesystem;

namespace {

// FNV-1a over 64-bit words in four independent lanes, then over the lanes, the tail and the
// length: enough to tell models apart in a cache, with no dependency. Every run hashes every
// weight to find its cached layouts; byte-wise FNV-1a, one multiply waiting on the last,
// took 1.0-1.2 s of vgg11's start (507 MB) on a busy host, this 0.12-0.18 s.
struct Fingerprint {
  static constexpr uint64_t kBasis = 1469598103934665603ull;
  static constexpr uint64_t kPrime = 1099511628211ull;
  static constexpr std::size_t kBlock = 32;
  std::array<uint64_t, 4> lanes = {kBasis, kBasis ^ 1, kBasis ^ 2, kBasis ^ 3};
  std::array<unsigned char, kBlock> pending{};  // A block's first bytes, until it is whole.
  std::size_t pending_size = 0;
  uint64_t length = 0;

  void add(const void* data, std::size_t size) {
    auto bytes = static_cast<const unsigned char*>(data);
    length += size;
    if (pending_size > 0) {
      const std::size_t take = std::min(size, kBlock - pending_size);
      std::memcpy(pending.data() + pending_size, bytes, take);
      pending_size += take;
      bytes += take;
      size -= take;
      if (pending_size < kBlock) return;
      mix(pending.data());
      pending_size = 0;
    }
    for (; size >= kBlock; bytes += kBlock, size -= kBlock) mix(bytes);
    std::memcpy(pending.data(), bytes, size);
    pending_size = size;
  }
  void add(std::string_view text) { add(text.data(), text.size()); }

  void mix(const unsigned char* block) {
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
      uint64_t word = 0;
      std::memcpy(&word, block + lane * sizeof(word), sizeof(word));
      lanes[lane] = (lanes[lane] ^ word) * kPrime;
    }
  }
  uint64_t state() const {
    uint64_t hash = kBasis;
    const auto fold = [&hash](const void* data, std::size_t size) {
      auto bytes = static_cast<const unsigned char*>(data);
      for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * kPrime;
    };
    fold(lanes.data(), sizeof(lanes));
    fold(pending.data(), pending_size);
    fold(&length, sizeof(length));
    return hash;
  }
};

std::string cache_directory(const ProfileOptions& options) {
  if (!options.cache_directory.empty()) return options.cache_directory;
  return default_cache_directory("profiles");
}

void fill_sizes(const Graph& graph, NodeId id, NodeCost& cost) {
  cost.output_bytes = static_cast<double>(node_output_bytes(graph, id).value_or(0));
  cost.weight_bytes = static_cast<double>(node_parameter_bytes(graph, id));
  cost.flops = static_cast<double>(node_flops(graph, id).value_or(0));
}

}  // namespace

double bytes_moved(const Graph& graph, NodeId id, const NodeCost& cost) {
  double input_bytes = 0;
  for (ValueId input : graph.node(id).inputs) {
    if (input == kNoValue) continue;
    const Value& v = graph.value(input);
    if (v.shape.is_static())
      input_bytes += static_cast<double>(v.shape.element_count() * element_size(v.dtype));
  }
  return input_bytes + cost.output_bytes;
}

double CostTable::seconds(NodeId node, int threads) const {
  const auto& measured = nodes.at(node).seconds;
  if (measured.empty()) return 0;
  std::size_t index = std::clamp<std::size_t>(threads, 1, measured.size()) - 1;
  return measured[index];
}

double CostTable::total_seconds(int threads) const {
  double total = 0;
  for (std::size_t id = 0; id < nodes.size(); ++id)
    total += seconds(static_cast<NodeId>(id), threads);
  return total;
}

bool CostTable::has_busy_seconds() const {
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const NodeCost& cost) { return cost.busy_seconds.has_value(); });
}

double CostTable::busy_level() const {
  if (!(busy_run_seconds > 0) || run_seconds.empty()) return 1.0;
  return std::max(1.0, run_seconds.front() / busy_run_seconds);
}

double CostTable::busy_seconds(NodeId node, int threads) const {
  const NodeCost& cost = nodes.at(node);
  if (!cost.busy_seconds) return seconds(node, threads);
  const double busy = *cost.busy_seconds * busy_level();
  const double alone = seconds(node, 1);
  return alone > 0 ? busy * seconds(node, threads) / alone : busy;
}

CostTable static_costs(const Graph& graph, double seconds_per_unit) {
  CostTable table;
  table.source = "static";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    NodeCost& cost = table.nodes[id];
    cost.seconds = {static_cast<double>(static_node_weight(graph, id)) * seconds_per_unit};
    fill_sizes(graph, id, cost);
  }
  return table;
}

namespace {

PeakRates measure_rates(int max_threads) {
  PeakRates rates;
  const int n = 512;
  for (int threads = 1; threads <= max_threads; ++threads)
    rates.flops_per_second.push_back(2.0 * n * n * n / matmul_seconds(n, threads, 7));
  std::vector<char> source(64 << 20, 1), target(64 << 20);
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(target.data(), source.data(), source.size());
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // A copy reads and writes every byte.
  rates.bytes_per_second = 2.0 * source.size() / median_of(times);
  rates.seconds_per_op = 2e-6;
  return rates;
}

}  // namespace

// Once per CPU, ISA and thread count, kept on disk (peak_rate_cache.h), and read once per
// process: the copy probe holds 128 MiB while it runs (twice a server CPU's last-level cache),
// so `cleave plan --costs analytical` asks before it loads the weights, and the planner's own
// call then finds the rates in memory.
PeakRates measure_peak_rates(int max_threads) {
  static std::mutex mutex;
  static PeakRates measured;  // For the most threads asked so far.
  const std::lock_guard<std::mutex> lock(mutex);
  const auto threads = static_cast<std::size_t>(std::max(1, max_threads));
  if (measured.flops_per_second.size() < threads)
    measured = cached_peak_rates(static_cast<int>(threads), {}, measure_rates);
  PeakRates rates = measured;
  rates.flops_per_second.resize(threads);
  return rates;
}

CostTable analytical_costs(const Graph& graph, const PeakRates& rates) {
  if (rates.flops_per_second.empty()) throw Error("analytical costs need measured peak rates");
  CostTable table;
  table.source = "analytical";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    NodeCost& cost = table.nodes[id];
    fill_sizes(graph, id, cost);
    const double moved = bytes_moved(graph, id, cost);
    for (double flops_per_second : rates.flops_per_second) {
      cost.seconds.push_back(
          std::max(cost.flops / flops_per_second, moved / rates.bytes_per_second) +
          rates.seconds_per_op);
    }
  }
  return table;
}

std::string default_cache_directory(std::string_view kind) {
  if (const char* dir = std::getenv("CLEAVE_CACHE_DIR")) return (fs::path(dir) / kind).string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/tmp") / ".cache" / "cleave" / kind).string();
}

std::string graph_fingerprint(const Graph& graph) {
  return graph_fingerprint(graph, nullptr);
}

std::string graph_fingerprint(
    const Graph& graph,
    const std::function<void(ValueId, const std::function<void(const std::byte*, std::size_t)>&)>&
        unread) {
  Fingerprint hash;
  hash.add(print_graph(graph, 0));
  for (ValueId id : graph.initializers()) {
    const TensorData& data = *graph.value(id).initializer;
    if (data.bytes) {
      hash.add(data.bytes->data(), data.bytes->size());
    } else if (unread) {
      unread(id, [&](const std::byte* piece, std::size_t size) { hash.add(piece, size); });
    }
  }
  return fmt::format("{:016x}", hash.state());
}

double default_core_wait_seconds() {
  const char* text = std::getenv("CLEAVE_CORE_WAIT_SECONDS");
  if (!text) return 10.0;
  char* end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds < 0) {
    throw Error(fmt::format(
        "CLEAVE_CORE_WAIT_SECONDS: expected a number of seconds, 0 or more, got \"{}\"", text));
  }
  return seconds;
}

ProfileOptions profile_options(int max_threads) {
  ProfileOptions options;
  options.max_threads = max_threads;
  return options;
}

InterleavedResult interleaved_run_seconds(const std::vector<std::function<void()>>& runs,
                                          const InterleavedTiming& timing,
                                          const std::function<double()>& seconds_now) {
  const std::function<double()> now = seconds_now ? seconds_now : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  // Per entry, its block medians in ascending order (few: a sorted insert is enough); the
  // disturbed ones apart.
  std::vector<std::vector<double>> block_medians(runs.size());
  std::vector<std::vector<double>> disturbed_medians(runs.size());
  const auto settled = [&](const std::vector<double>& medians) {
    return medians.size() >= 2 && medians[1] <= medians[0] * (1 + timing.agreement);
  };
  const auto quiet = [&](std::size_t entry) { return !timing.quiet || timing.quiet(entry); };
  const auto insert_sorted = [](std::vector<double>& medians, double median) {
    medians.insert(std::upper_bound(medians.begin(), medians.end(), median), median);
  };
  const int max_blocks = std::max(timing.blocks, timing.max_blocks);
  for (int block = 0; block < max_blocks; ++block) {
    bool timed_any = false;
    for (std::size_t entry = 0; entry < runs.size(); ++entry) {
      std::vector<double>& medians = block_medians[entry];
      if (block >= timing.blocks && settled(medians)) continue;
      timed_any = true;
      const bool quiet_before = quiet(entry);
      std::vector<double> samples;
      const double block_start = now();
      while (static_cast<int>(samples.size()) < timing.runs_per_block ||
             now() - block_start < timing.min_block_seconds) {
        const double start = now();
        runs[entry]();
        samples.push_back(now() - start);
      }
      const bool quiet_after = quiet(entry);
      insert_sorted(quiet_before && quiet_after ? medians : disturbed_medians[entry],
                    median_of(samples));
    }
    if (!timed_any) break;
  }
  InterleavedResult result;
  for (std::size_t entry = 0; entry < runs.size(); ++entry) {
    const std::vector<double>& medians =
        block_medians[entry].empty() ? disturbed_medians[entry] : block_medians[entry];
    result.seconds.push_back(medians.empty() ? std::numeric_limits<double>::infinity()
                                             : medians[0]);
    const auto disturbed = static_cast<int>(disturbed_medians[entry].size());
    result.blocks_timed.push_back(static_cast<int>(block_medians[entry].size()) + disturbed);
    result.blocks_disturbed.push_back(disturbed);
  }
  return result;
}

namespace {

ExecutorOptions profile_executor_options(const ProfileOptions& options, int threads) {
  ExecutorOptions executor_options;
  executor_options.threads = threads;
  executor_options.blocked_layouts = options.blocked_layouts;
  executor_options.convolution_family = options.convolution_family;
  return executor_options;
}

// A team of two or more threads is timed only while its cores are free: another process on
// one of them makes every run wait for its turn there. The wait has a budget for the whole
// profile.
struct FreeCoreWait {
  const ProfileOptions& options;
  double waited = 0;  // Seconds from a first sign of another process to free cores or giving up.
  int held_checks = 0;

  // Whether the cores of a team of `threads` are free, after waiting for them if need be.
  bool operator()(int threads) {
    if (threads < 2 || options.cores_free(threads)) return true;
    ++held_checks;
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    bool free = false;
    while (waited + elapsed() < options.quiet_wait_seconds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (options.cores_free(threads)) {
        free = true;
        break;
      }
    }
    waited += elapsed();
    return free;
  }
};

void report_whole_runs(const ProfileOptions& options, const FreeCoreWait& wait_for_free_cores,
                       const InterleavedResult& timed) {
  options.progress(fmt::format("profile: blocks timed per thread count: {}",
                               fmt::join(timed.blocks_timed, ", ")));
  if (wait_for_free_cores.held_checks > 0) {
    options.progress(fmt::format(
        "profile: another process held a core at {} check(s): waited {:.2f} s in all for "
        "free cores; blocks set aside per thread count: {}",
        wait_for_free_cores.held_checks, wait_for_free_cores.waited,
        fmt::join(timed.blocks_disturbed, ", ")));
  }
  for (std::size_t entry = 0; entry < timed.seconds.size(); ++entry) {
    if (timed.blocks_disturbed[entry] < timed.blocks_timed[entry]) continue;
    options.progress(fmt::format(
        "profile: warning: every block at {} thread(s) ran while another process held a "
        "core, so its times are too slow (cached all the same: profile again with "
        "--no-cache when the host is quieter)",
        entry + 1));
  }
}

// Seconds per whole run at 1..max_threads threads, timed in interleaved blocks; the blocks set
// aside go into `table`.
std::vector<double> time_whole_runs(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                                    const ProfileOptions& options,
                                    FreeCoreWait& wait_for_free_cores, CostTable& table) {
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<std::function<void()>> runs;
  for (int threads = 1; threads <= options.max_threads; ++threads) {
    executors.push_back(
        std::make_unique<Executor>(graph, profile_executor_options(options, threads)));
    Executor* executor = executors.back().get();
    for (int i = 0; i < options.warmup; ++i) executor->run(inputs);
    runs.push_back([executor, &inputs] { executor->run(inputs); });
  }
  InterleavedTiming timing;
  timing.blocks = 3;
  timing.max_blocks = 8;
  timing.agreement = 0.05;
  timing.runs_per_block = std::max(3, (options.repeat + 1) / 2);
  timing.min_block_seconds = 0.15;
  if (options.progress) {
    options.progress(fmt::format(
        "profile: timing whole runs at 1..{} thread(s), {} interleaved blocks of {} runs "
        "(or {} s) each, up to {} until the two fastest agree within {:.0f}%",
        options.max_threads, timing.blocks, timing.runs_per_block, timing.min_block_seconds,
        timing.max_blocks, timing.agreement * 100));
  }
  timing.quiet = [&](std::size_t entry) {
    return wait_for_free_cores(static_cast<int>(entry) + 1);
  };
  InterleavedResult timed = interleaved_run_seconds(runs, timing);
  table.disturbed_blocks = timed.blocks_disturbed;
  if (options.progress) report_whole_runs(options, wait_for_free_cores, timed);
  return timed.seconds;
}

// Each node's seconds at `threads` threads: its median over the repeats, scaled so the nodes
// sum to the whole run's time.
void time_nodes(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                const ProfileOptions& options, FreeCoreWait& wait_for_free_cores, int threads,
                double run, CostTable& table) {
  std::vector<std::vector<double>> samples(graph.node_capacity());
  ExecutorOptions timed = profile_executor_options(options, threads);
  timed.collect_stats = true;
  Executor timing(graph, timed);
  timing.run(inputs);  // Prepares kernels; not counted.
  wait_for_free_cores(threads);
  std::vector<double> previous = timing.stats().node_seconds;
  for (int i = 0; i < options.repeat; ++i) {
    timing.run(inputs);
    const auto& totals = timing.stats().node_seconds;
    for (NodeId id : graph.node_ids()) samples[id].push_back(totals[id] - previous[id]);
    previous = totals;
  }
  double summed = 0;
  for (NodeId id : graph.node_ids()) summed += median_of(samples[id]);
  const double factor = summed > 0 ? run / summed : 1.0;
  for (NodeId id : graph.node_ids())
    table.nodes[id].seconds.push_back(median_of(samples[id]) * factor);
  table.run_seconds.push_back(run);
  table.calibration.push_back(factor);
  if (options.progress) {
    options.progress(fmt::format(
        "profile: {} thread(s): {:.3f} ms per run in {} nodes (timed nodes summed to {:.3f} "
        "ms, scaled by {:.3f})",
        threads, run * 1e3, graph.node_count(), summed * 1e3, factor));
  }
}

// In context: each thread count's node times from whole runs in order, scaled to their
// median; then the 1-thread times again beside cores that each run the model.
void time_nodes_in_context(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                           const ProfileOptions& options, FreeCoreWait& wait_for_free_cores,
                           CostTable& table) {
  ContextRuns runs;
  runs.warmup = options.warmup;
  runs.repeat = options.repeat;
  for (int threads = 1; threads <= options.max_threads; ++threads) {
    wait_for_free_cores(threads);
    const ContextTiming timed =
        time_in_context(graph, profile_executor_options(options, threads), inputs, runs);
    for (NodeId id : graph.node_ids()) table.nodes[id].seconds.push_back(timed.node_seconds[id]);
    table.run_seconds.push_back(timed.run_seconds);
    table.calibration.push_back(timed.calibration);
    if (options.progress) {
      options.progress(fmt::format(
          "profile: {} thread(s), in context: {:.3f} ms per run (median of {} runs; nodes "
          "scaled by {:.3f})",
          threads, timed.run_seconds * 1e3, timed.runs, timed.calibration));
    }
  }
  // The other cores of the plan's workers; at least one, so that a 1-thread profile still
  // prices a plan of two 1-thread workers.
  runs.busy_neighbours = std::max(1, options.max_threads - 1);
  const ContextTiming busy =
      time_in_context(graph, profile_executor_options(options, 1), inputs, runs);
  for (NodeId id : graph.node_ids()) table.nodes[id].busy_seconds = busy.node_seconds[id];
  table.busy_run_seconds = busy.run_seconds;
  table.busy_neighbours = runs.busy_neighbours;
  if (options.progress) {
    options.progress(fmt::format(
        "profile: 1 thread beside {} busy core(s): {:.3f} ms per run (median of {} runs), "
        "{:.2f}x alone{}",
        runs.busy_neighbours, busy.run_seconds * 1e3, busy.runs,
        table.run_seconds.front() > 0 ? busy.run_seconds / table.run_seconds.front() : 0.0,
        table.busy_level() > 1 ? " (faster than alone: plans are priced at the alone level)" : ""));
  }
}

}  // namespace

CostTable profile_costs(const Graph& graph, const ProfileOptions& options) {
  // v6: node times calibrated to whole runs, timed in interleaved blocks until two agree,
  // multi-thread blocks only while their cores are free. The ISA is in the key, so a profile
  // of another CPU (or of this one under another cap) is not used.
  // The Winograd family's kernels follow its weight budget and small-map rule, so a Winograd
  // profile names them.
  std::string family =
      options.blocked_layouts ? to_string(options.convolution_family) : std::string("plain");
  if (options.blocked_layouts && options.convolution_family == ConvolutionFamily::kWinograd)
    family = winograd_family_key() + "-" + family;
  // In context (v7): whole runs in order and beside busy cores, under a key of its own.
  std::string key =
      fmt::format("{}-t{}-r{}-{}-{}-{}", graph_fingerprint(graph), options.max_threads,
                  options.repeat, isa_cache_key(), family, options.in_context ? "v7ctx" : "v6");
  fs::path cache = fs::path(cache_directory(options)) / (key + ".json");
  ProfileCacheUse use;
  if (std::optional<CostTable> cached = read_cached_profile(cache.string(), graph, options, use)) {
    // The host's level may have moved since the table was made, within the reuse check's
    // tolerance or unchecked (CLEAVE_PROFILE_REUSE=always): the sequential plan timed now says
    // by how much, and every time follows it.
    if (options.level.when != LevelCheck::kOff) {
      check_profile_level(graph, profile_executor_options(options, options.max_threads), *cached,
                          options.level, options.progress);
    }
    return *cached;
  }
  CostTable table;
  table.source = "profile";
  // The host's speed as the nodes are timed: the check's own measurement when it just made one.
  table.conditions = use.now ? *use.now : options.host_conditions(options.max_threads);
  table.cache_use = use;
  table.context = options.in_context ? "in-context" : "alone";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) fill_sizes(graph, id, table.nodes[id]);
  std::map<std::string, Tensor> inputs = random_inputs(graph, 0);
  FreeCoreWait wait_for_free_cores{options};
  const auto start = std::chrono::steady_clock::now();
  if (options.in_context) {
    time_nodes_in_context(graph, inputs, options, wait_for_free_cores, table);
  } else {
    const std::vector<double> run_seconds =
        time_whole_runs(graph, inputs, options, wait_for_free_cores, table);
    for (int threads = 1; threads <= options.max_threads; ++threads) {
      time_nodes(graph, inputs, options, wait_for_free_cores, threads, run_seconds[threads - 1],
                 table);
    }
  }
  if (options.progress) {
    options.progress(fmt::format(
        "profile: measured in {:.2f} s",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  }
  // A cache that cannot be written costs a re-measurement next time, not this run.
  std::error_code ignored;
  fs::create_directories(cache.parent_path(), ignored);
  try {
    write_file_atomically(cache.string(), cost_table_to_json(table, graph).dump(1));
  } catch (const Error& e) {
    if (options.progress) options.progress(fmt::format("profile: cache not written: {}", e.what()));
  }
  // Cached as profiled; then, when asked, at the level of the sequential plan timed in rounds.
  if (options.level.when == LevelCheck::kAlways) {
    check_profile_level(graph, profile_executor_options(options, options.max_threads), table,
                        options.level, options.progress);
  }
  return table;
}

}  // namespace cleave
