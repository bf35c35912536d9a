// Whether a cached profile was timed on a host as fast as this one is now: a reference kernel's
// time and the load average, recorded with the profile and checked before it is reused.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace cleave {

class JsonField;

/// The state of the host when a profile was timed (or when a cached one is about to be reused).
struct ProfileConditions {
  double reference_seconds = 0;  ///< reference_kernel_seconds(threads).
  int threads = 1;               ///< The team that ran it: the profile's most threads.
  double load_average = -1;      ///< /proc/loadavg's 1-minute figure; -1 when unreadable.
};

/// The median time of a fixed f32 matrix product (`n` x `n` by `n` x `n`, oneDNN) on `threads`
/// OpenMP threads over `runs` runs after two untimed ones. measure_peak_rates' flop probe.
double matmul_seconds(int n, int threads, int runs);

/// The reference kernel: a 256 x 256 f32 matrix product (oneDNN) on `threads` OpenMP threads,
/// back to back for 0.15 s, on a thread of its own (the caller's OpenMP team and thread count are
/// left alone): the seconds per product over that window. Another process on one of the team's
/// cores, or a hypervisor that gives the cores less time, slows it as it slows the profile's
/// runs; a few products alone would not see a process on this host (a woken thread runs first),
/// and larger ones (384) fork and join too seldom to be slowed as a model's many nodes are.
double reference_kernel_seconds(int threads);

/// The 1-minute load average of /proc/loadavg; -1 when it cannot be read.
double load_average();

/// reference_kernel_seconds(threads) and load_average(), now.
ProfileConditions measure_profile_conditions(int threads);

/// How a cached profile is reused ($CLEAVE_PROFILE_REUSE).
enum class ProfileReuse {
  /// "check" (the default): reused when the reference kernel's time now is within the
  /// tolerance of the time recorded with the profile, else the profile is made again.
  kCheck,
  kAlways,  ///< "always": reused without a check (an entry with no recorded conditions too).
  kNever,   ///< "never": made again every time (and the cached entry replaced).
};

/// $CLEAVE_PROFILE_REUSE ("check", "always" or "never"), else kCheck. Throws Error naming the
/// variable when it is set to anything else.
ProfileReuse default_profile_reuse();

/// Whether a profile made under `recorded` fits a host that measures `now`: the reference times
/// within a factor of 1 + `tolerance` of each other, either way.
bool same_host_speed(const ProfileConditions& recorded, const ProfileConditions& now,
                     double tolerance);

/// What a profile did with its cache entry, for stderr and the commands' --json.
struct ProfileCacheUse {
  /// "measured" (no usable entry), "reused", or "re-measured" (an entry was set aside).
  std::string outcome;
  std::string reason;  ///< Why an entry was set aside, or reused unchecked; in words.
  std::optional<ProfileConditions> recorded;  ///< The entry's conditions, when it had some.
  std::optional<ProfileConditions> now;       ///< What the check measured, when it ran.
};

nlohmann::json conditions_to_json(const ProfileConditions& conditions);
/// Reads conditions_to_json's object; Error naming the field for a missing or bad value.
ProfileConditions conditions_from_json(const JsonField& field);
nlohmann::json cache_use_to_json(const ProfileCacheUse& use);

}  // namespace cleave
