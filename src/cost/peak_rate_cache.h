// The CPU's measured peak rates kept on disk, so that a later `plan --costs analytical` does
// not run the 128 MiB copy probe again.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "cost/cost_table.h"

namespace cleave {

/// Where measured peak rates are kept between processes, and who hears of a file not used.
struct PeakRateCache {
  std::string directory;  ///< Empty: default_cache_directory("rates").
  /// Told when a cached file is damaged and measured again; empty: a line to stderr.
  std::function<void(const std::string&)> warn;
};

/// "<CPU model>-<ISA>": how every host measurement's file name (no folder) starts, so that
/// one of another CPU or another ISA cap (isa_cache_key) is never used.
std::string host_cache_key();

/// The file name (no folder) of the rates at `max_threads` threads on this CPU: host_cache_key
/// and the thread count, so that rates of another thread count are never used.
std::string peak_rate_cache_key(int max_threads);

/// The JSON of `file_name` in `cache`'s folder when `check` (which throws Error naming what is
/// wrong) accepts it; else `measure()`'s, written there for later processes. A damaged file is
/// reported through `cache.warn` ("cached <what> not used, measuring again: ...") and
/// overwritten; a folder that cannot be written costs only the measurement next time.
nlohmann::json cached_host_measurement(
    const std::string& file_name, const PeakRateCache& cache, const std::string& what,
    const std::function<void(const nlohmann::json&, const std::string& origin)>& check,
    const std::function<nlohmann::json()>& measure);

/// The peak rates at 1..max_threads threads (what measure_peak_rates returns, whose process-wide
/// memo reads them from here, default folder) from `cache`'s file for this CPU, ISA and thread
/// count; else `measure(max_threads)`, written there for later processes. A damaged file
/// (bad JSON, a missing or non-positive rate, another thread count) is reported through
/// `cache.warn`, measured again and overwritten; a folder that cannot be written costs only
/// the measurement next time.
PeakRates cached_peak_rates(int max_threads, const PeakRateCache& cache,
                            const std::function<PeakRates(int)>& measure);

}  // namespace cleave
