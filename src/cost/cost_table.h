// What each node costs: static weights, an analytical roofline model, or a measured profile.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cost/core_contention.h"
#include "cost/profile_conditions.h"
#include "cost/profile_level.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "runtime/convolution_family.h"
#include "support/cpu_quota.h"

namespace cleave {

struct NodeCost {
  /// Seconds with 1, 2, ... intra-op threads (index t - 1). Static and analytical tables
  /// scale one measurement; a profile measures each thread count.
  std::vector<double> seconds;
  /// In-context profiles only: seconds on 1 thread while the other cores each run the same
  /// model at the same time (the condition of every plan whose workers compute at once).
  std::optional<double> busy_seconds;
  double output_bytes = 0;
  double weight_bytes = 0;
  double flops = 0;
};

/// Costs of every node (by NodeId; removed nodes have an empty entry).
struct CostTable {
  std::string source;  ///< "static", "analytical" or "profile".
  /// Profiles only, how node times were taken: "in-context" (inside whole sequential runs in
  /// order, scaled to those runs' median; busy-neighbour times too) or "alone" (scaled to the
  /// fastest of interleaved blocks of whole runs; no busy-neighbour times).
  std::string context;
  std::vector<NodeCost> nodes;
  /// Profiles only, by thread count (index t - 1): the median latency of whole sequential
  /// runs, and the factor the timed node seconds were multiplied by so that they sum to it.
  std::vector<double> run_seconds;
  std::vector<double> calibration;
  /// Profiles only, by thread count: blocks of whole runs timed while another process held
  /// one of the cores (set aside; see interleaved_run_seconds).
  std::vector<int> disturbed_blocks;
  /// In-context profiles only: the median 1-thread whole run beside the busy cores, and the
  /// number of cores that were kept busy.
  double busy_run_seconds = 0;
  int busy_neighbours = 0;
  /// Profiles only: the convolution family whose kernels were timed (unset: plain layouts,
  /// or a table not measured here). Executors that cannot measure for themselves run it.
  std::optional<ConvolutionFamily> convolution_family;
  /// Profiles only: the host's speed when the nodes were timed (cached with the table; a table
  /// cached before it was recorded has none).
  std::optional<ProfileConditions> conditions;
  /// Profiles only: whether this table was measured now or read from the cache, and why a
  /// cached one was set aside. Never cached with the table.
  ProfileCacheUse cache_use;
  /// Profiles only: the level check made where the table is used (profile_level.h): what the
  /// sequential plan measured against the table's prediction, and whether the times above were
  /// scaled by it. Never cached with the table (the cache keeps the times as profiled).
  std::optional<ProfileLevel> level;
  /// How this host's workers hand values to each other, as the plans made from this table
  /// price it (cpu_machine): a profile's table carries the host's calibration (measured where
  /// its node times are), any other the assumed constants. Never cached with the table.
  HostLinks host_links;

  /// Seconds of a node on `threads` intra-op threads; past the largest measured count the
  /// time stays at that count's (no speedup is assumed that was not measured).
  double seconds(NodeId node, int threads = 1) const;
  double total_seconds(int threads = 1) const;
  /// Whether nodes have busy-neighbour times (every timed node has one, or none does).
  bool has_busy_seconds() const;
  /// Seconds of a node on `threads` threads while the other cores compute: its busy-neighbour
  /// time scaled by its own speedup from 1 to `threads` threads (only 1 thread is measured
  /// busy) and by busy_level(); seconds(node, threads) for a table without busy-neighbour times.
  double busy_seconds(NodeId node, int threads = 1) const;
  /// What every busy-neighbour time is multiplied by: run_seconds[0] / busy_run_seconds where
  /// the busy run measured faster than the 1-thread run alone, else 1. Cores that compute at
  /// once never make each other faster; a busy run below the alone run caught the host at
  /// another speed than the alone run did (googlenet 0.80x alone, where the ranks then ran
  /// its task plans 1.21-1.31x the busy times' prediction: docs/results/distributed.md,
  /// 2026-12-01 06:10), and a plan is priced at the alone level then.
  double busy_level() const;
};

/// The Ramiel paper's static weights, `seconds_per_unit` each (threads do not help).
CostTable static_costs(const Graph& graph, double seconds_per_unit = 1e-4);

/// Sustained rates of this CPU, measured once (oneDNN matmul, memory copy, empty-op cost).
struct PeakRates {
  std::vector<double> flops_per_second;  ///< By thread count, index t - 1.
  double bytes_per_second = 0;
  double seconds_per_op = 0;  ///< Fixed overhead of running one node.
};
PeakRates measure_peak_rates(int max_threads);

/// Roofline: max(flops / peak flops, bytes moved / bandwidth) + per-op overhead.
CostTable analytical_costs(const Graph& graph, const PeakRates& rates);

/// How long a profile may wait, in all, for cores another process holds:
/// $CLEAVE_CORE_WAIT_SECONDS (a number of seconds, 0 or more), else 10. Throws Error naming the
/// variable when it is set to anything else.
double default_core_wait_seconds();

struct ProfileOptions {
  int max_threads = 2;
  int warmup = 2;
  int repeat = 10;
  bool blocked_layouts = true;
  /// The kernels timed; the plan's executor should run the same (choose_layouts).
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
  std::string cache_directory;  ///< Empty: ~/.cache/cleave/profiles (or $CLEAVE_CACHE_DIR).
  bool use_cache = true;
  /// How long, in all, the profile may wait for cores that another process holds before it
  /// times multi-thread runs anyway (core_contention.h).
  double quiet_wait_seconds = default_core_wait_seconds();
  /// Whether a team of this many threads would have its cores to itself now.
  std::function<bool(int threads)> cores_free = [](int threads) {
    return cleave::cores_free(threads);
  };
  /// Time nodes in context (CostTable::context "in-context": within whole sequential runs
  /// scaled to their median, and on 1 thread beside busy cores), cached under its own key;
  /// false: the older "alone" profile.
  bool in_context = true;
  /// Whether a cached table is reused as it is, checked against the host's speed first, or
  /// never (default_profile_reuse).
  ProfileReuse reuse = default_profile_reuse();
  /// The check: a cached table is made again when the reference kernel's time now differs from
  /// the recorded one by more than this factor (0.25: 1.25x slower or faster).
  double reference_tolerance = 0.25;
  /// The host's speed now, for a team of this many threads (measure_profile_conditions); a
  /// test gives fixed times.
  std::function<ProfileConditions(int threads)> host_conditions = [](int threads) {
    return measure_profile_conditions(threads);
  };
  /// The check is skipped when the load average was below this when the table was made and is
  /// below it now (the reference kernel costs every `run --plan auto` 0.15 s); 0: always check.
  double quiet_load_average = 0.5 * usable_cores();
  /// The 1-minute load average now (load_average); a test gives fixed figures.
  std::function<double()> load_now = [] { return load_average(); };
  /// The level check of a reused table, or of every table (profile_level.h;
  /// $CLEAVE_PROFILE_LEVEL).
  LevelCheckOptions level;
  /// Progress lines; without it, only a cached table set aside is told (on stderr).
  std::function<void(const std::string&)> progress;
};

/// Default profile options for up to `max_threads` intra-op threads.
ProfileOptions profile_options(int max_threads);

/// Times every node on this machine with 1..max_threads intra-op threads (median of
/// `repeat` runs of the whole graph, seeded random inputs) and caches the table on disk,
/// keyed by the graph's content and the options, so later plans reuse it. In context (the
/// default): each thread count's node times come from whole runs in order, scaled so that they
/// sum to those runs' median (at least `repeat` runs and 0.2 s), and the 1-thread times are
/// taken again while max_threads - 1 other threads (at least 1) each run the same model over
/// and over (`busy_seconds`, what a multi-worker plan's nodes take here). Alone (v6): timing
/// each node costs time of its own, and a run costs more than its nodes (inputs, allocation,
/// the gaps between nodes), so whole runs are timed apart (interleaved_run_seconds, 3 to 8 blocks
/// of about `repeat` / 2 runs) and each thread count's node times are scaled to sum to that
/// (`run_seconds`, `calibration`).
CostTable profile_costs(const Graph& graph, const ProfileOptions& options);

/// How interleaved_run_seconds spends its time.
struct InterleavedTiming {
  int blocks = 3;           ///< Blocks every entry gets.
  int max_blocks = 3;       ///< More, up to this, for an entry whose two fastest blocks disagree.
  double agreement = 0.05;  ///< Relative gap between an entry's two fastest block medians.
  int runs_per_block = 3;
  double min_block_seconds = 0;  ///< A block calls its run until it has lasted this long.
  /// When set, asked before and after each block of an entry whether the host is quiet for
  /// it (it may wait for that); a block with a "no" on either side is disturbed.
  std::function<bool(std::size_t entry)> quiet;
};

/// What interleaved_run_seconds measured, per entry.
struct InterleavedResult {
  std::vector<double> seconds;        ///< The time of one call.
  std::vector<int> blocks_timed;      ///< Blocks timed, disturbed ones included.
  std::vector<int> blocks_disturbed;  ///< Blocks that `quiet` called disturbed.
};

/// The time of one call of each of `runs`, taken in rounds of blocks that interleave them,
/// `runs_per_block` calls each, or more until the block has lasted `min_block_seconds`: per
/// entry, the lowest of its block medians. On a shared host a moment of other load can take a
/// core away (a 2-thread run then goes at 1-thread speed); such a block is outvoted by an
/// undisturbed one of the same entry instead of setting its time, and the minimum duration
/// spreads a small model's blocks far enough apart for that. A disturbance can outlast the
/// first `blocks` rounds, so an entry whose two fastest block medians are more than
/// `agreement` apart keeps getting blocks, up to `max_blocks`: its time then rests on two
/// blocks that agree. A disturbance that lasts through every block makes them agree at the
/// wrong speed; `quiet` is how to see it: blocks it calls disturbed neither set an entry's time
/// nor count towards agreement, unless the entry has no other block (then its fastest one).
/// `seconds_now` reads a clock in seconds (steady_clock when empty).
InterleavedResult interleaved_run_seconds(const std::vector<std::function<void()>>& runs,
                                          const InterleavedTiming& timing,
                                          const std::function<double()>& seconds_now = {});

nlohmann::json cost_table_to_json(const CostTable& table, const Graph& graph);
CostTable cost_table_from_json(const nlohmann::json& json, const Graph& graph,
                               const std::string& origin);

/// What a roofline charges a node for memory traffic: its inputs (weights included) read once
/// and its outputs written once (`cost.output_bytes`).
double bytes_moved(const Graph& graph, NodeId id, const NodeCost& cost);

/// Where cached measurements of one kind ("profiles", "layouts") live:
/// $CLEAVE_CACHE_DIR/<kind>, else ~/.cache/cleave/<kind>.
std::string default_cache_directory(std::string_view kind);

/// A stable hash of a graph's structure, shapes and initializer bytes (cache keys).
std::string graph_fingerprint(const Graph& graph);
/// As graph_fingerprint, for a graph some of whose initializers were left unread (no bytes):
/// `unread(id, add)` passes such an initializer's bytes to `add`, in pieces, so the result
/// equals the fingerprint of the fully read graph without holding its weights.
std::string graph_fingerprint(
    const Graph& graph,
    const std::function<void(ValueId, const std::function<void(const std::byte*, std::size_t)>&)>&
        unread);

}  // namespace cleave
