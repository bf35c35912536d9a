// A profile's level checked where it is used: the sequential plan timed now against the table's
// own prediction of it, and the whole table scaled by the ratio.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string>
#include <vector>

namespace cleave {

class Graph;
struct CostTable;
struct ExecutorOptions;

/// What the level check measured and did (CostTable::level; the plan's notes, `--explain`).
struct ProfileLevel {
  int threads = 1;               ///< The sequential plan's intra-op threads: the profile's most.
  double predicted_seconds = 0;  ///< The table's own prediction of it (run_seconds), unscaled.
  double measured_seconds = 0;   ///< The median of the timed rounds (0: none usable).
  std::vector<double> rounds_seconds;  ///< Each round's timed run, in order.
  double factor = 1;                   ///< What every time of the table was multiplied by.
  bool applied = false;                ///< Whether the table was scaled.
  std::string reason;                  ///< Why it was not, in words (empty when it was).
};

/// Which profiles profile_costs checks the level of.
enum class LevelCheck {
  kOff,     ///< "off": none; every table is used as profiled.
  kReused,  ///< "check" (the default): a table read from the cache.
  /// "always": a table measured by the same command too, so that its level is that of the
  /// sequential plan timed in rounds as the benches time it, not of the profile's runs back to
  /// back.
  kAlways,
};

/// $CLEAVE_PROFILE_LEVEL: "check" (the default), "always" or "off". Throws Error naming the
/// variable when it is set to anything else.
LevelCheck default_level_check();

/// How check_profile_level runs. The defaults bound it to a few runs: at least `min_rounds`,
/// then more until about `max_seconds` of runs (a round is two untimed runs and one timed, so
/// three times its timed run is counted) or `max_rounds`.
struct LevelCheckOptions {
  /// Which tables profile_costs checks ($CLEAVE_PROFILE_LEVEL, default_level_check).
  LevelCheck when = default_level_check();
  int min_rounds = 3;
  int max_rounds = 5;
  double max_seconds = 0.5;
  /// A factor past this either way (or a zero, negative or non-finite measurement) leaves the
  /// table unscaled with a warning: the host then differs too much from when the profile was
  /// made for one factor to say by how much (the reuse check makes such a profile again).
  double max_factor = 1.5;
  /// One round of the sequential plan: the seconds of its timed run. Empty: profile_costs times
  /// the table's sequential executor as every bench times a variant (time_in_rounds: a thread
  /// of its own, two untimed runs, one timed); a test gives scripted times.
  std::function<double()> time_round;
};

/// Times `options.time_round` (bounded as LevelCheckOptions says) and, when the median is a
/// usable time within max_factor of the table's prediction of the sequential plan at its most
/// threads (run_seconds.back()), multiplies every time of `table` by measured / predicted
/// (scale_cost_table). The result is also kept in `table.level`; a measurement left unused is
/// told through `warn`.
ProfileLevel check_profile_level(CostTable& table, const LevelCheckOptions& options,
                                 const std::function<void(const std::string&)>& warn);

/// check_profile_level on `graph`'s sequential executor with `executor` options (the profile's
/// kernels at its most threads) when options.time_round is empty; the level is told through
/// `progress`, a measurement left unused on stderr without it.
ProfileLevel check_profile_level(const Graph& graph, const ExecutorOptions& executor,
                                 CostTable& table, LevelCheckOptions options,
                                 const std::function<void(const std::string&)>& progress);

/// Every time of `table` (node seconds at every thread count, busy-neighbour seconds, the whole
/// runs') multiplied by `factor`; byte and flop counts and the hand-off links are left alone.
void scale_cost_table(CostTable& table, double factor);

/// One line for `plan --explain` and the progress lines.
std::string level_text(const ProfileLevel& level);
nlohmann::json level_to_json(const ProfileLevel& level);

}  // namespace cleave
