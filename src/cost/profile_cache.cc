// The profile cache's reuse decision: a cached table is read, checked and reused, or set aside.
#include "cost/profile_cache.h"

#include <fmt/core.h>

#include <exception>
#include <filesystem>
#include <optional>
#include <string>

#include "support/json_file.h"

namespace cleave {

namespace fs = std::filesystem;

namespace {

// A line every user should see (a cached profile set aside): to the progress lines when there
// are some, else to stderr.
void tell(const ProfileOptions& options, const std::string& line) {
  if (options.progress) {
    options.progress(line);
  } else {
    fmt::print(stderr, "cleave: {}\n", line);
  }
}

// Why a table recorded under `recorded` is not reused on a host that measures `now`.
std::string speed_difference(const ProfileConditions& recorded, const ProfileConditions& now) {
  return fmt::format(
      "the reference kernel takes {:.3f} ms on {} thread(s) now against {:.3f} ms when the "
      "profile was made ({:.2f}x; load average {:.2f} now, {:.2f} then)",
      now.reference_seconds * 1e3, now.threads, recorded.reference_seconds * 1e3,
      now.reference_seconds / recorded.reference_seconds, now.load_average, recorded.load_average);
}

// A load average that says the host was idle enough for a table to be reused unchecked.
bool quiet(double load_average, const ProfileOptions& options) {
  return load_average >= 0 && load_average < options.quiet_load_average;
}

}  // namespace

std::optional<CostTable> read_cached_profile(const std::string& path, const Graph& graph,
                                             const ProfileOptions& options, ProfileCacheUse& use) {
  const fs::path cache = path;
  use.outcome = "measured";
  if (!options.use_cache || !fs::exists(cache)) return std::nullopt;
  use.outcome = "re-measured";
  if (options.reuse == ProfileReuse::kNever) {
    use.reason = "CLEAVE_PROFILE_REUSE=never";
    tell(options, fmt::format("profile: cached table not used ({}), measuring again", use.reason));
    return std::nullopt;
  }
  CostTable table;
  try {
    table =
        cost_table_from_json(read_json_file(cache.string(), "cost table"), graph, cache.string());
  } catch (const std::exception& e) {
    // A stale or damaged cache entry is re-measured and overwritten.
    use.reason = e.what();
    tell(options, fmt::format("profile: cached table not used, measuring again: {}", e.what()));
    return std::nullopt;
  }
  use.recorded = table.conditions;
  if (options.reuse == ProfileReuse::kCheck) {
    if (!table.conditions) {
      use.reason = "it has no record of the host's speed when it was made (an older cache entry)";
      tell(options, fmt::format("profile: cached table {} not used, measuring again: {}",
                                cache.string(), use.reason));
      return std::nullopt;
    }
    // Quiet when the table was made and quiet now: nothing to tell apart, and the reference
    // kernel would add 0.15 s to every command that reuses the table. The 1-minute average lags
    // a burst of load that began just before the profile; the kernel is what sees that.
    const double load = options.load_now();
    if (quiet(table.conditions->load_average, options) && quiet(load, options)) {
      use.outcome = "reused";
      use.reason =
          fmt::format("load average {:.2f} then and {:.2f} now, both below {:.2f}: not checked",
                      table.conditions->load_average, load, options.quiet_load_average);
      if (options.progress)
        options.progress(fmt::format("profile: reused {} ({})", cache.string(), use.reason));
      table.cache_use = use;
      return table;
    }
    use.now = options.host_conditions(table.conditions->threads);
    if (!same_host_speed(*table.conditions, *use.now, options.reference_tolerance)) {
      use.reason = speed_difference(*table.conditions, *use.now);
      tell(options, fmt::format("profile: the host's speed differs from when the cached table {} "
                                "was made, measuring again: {} (CLEAVE_PROFILE_REUSE=always "
                                "reuses it)",
                                cache.string(), use.reason));
      return std::nullopt;
    }
  }
  use.outcome = "reused";
  if (options.progress) {
    options.progress(
        use.now ? fmt::format("profile: reused {} (reference kernel {:.3f} ms now, {:.3f} ms then)",
                              cache.string(), use.now->reference_seconds * 1e3,
                              use.recorded->reference_seconds * 1e3)
                : fmt::format("profile: reused {}", cache.string()));
  }
  table.cache_use = use;
  return table;
}

}  // namespace cleave
