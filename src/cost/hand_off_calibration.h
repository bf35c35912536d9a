// This host's hand-off costs between worker threads, measured on the thread executor and cached.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cost/peak_rate_cache.h"
#include "machine/machine.h"

namespace cleave {

/// HostLinks::source of a calibrated host.
inline constexpr const char* kCalibratedHostLinks = "calibrated host hand-off";

/// Median run times of one chain of Relu nodes (each value `value_bytes`), run three ways: on
/// the sequential executor (what a profile times), on the thread executor with the chain on
/// worker 0 (worker 1 runs one side node), and with its nodes alternating between the workers
/// (every value handed to the other worker, which waits for it).
struct ChainTiming {
  int tasks = 0;
  double value_bytes = 0;
  double sequential_seconds = 0;
  double one_worker_seconds = 0;
  double alternating_seconds = 0;
};

/// Fits HostLinks to chain timings. Small values (at most 4 KiB): one_worker - sequential =
/// run_seconds + tasks x task_seconds (least squares over at least two chain lengths), and
/// alternating - one_worker = (tasks - 1) x latency. Large values: what a hop costs beyond the
/// latency is the reader's price for lines in the other core's cache, bytes / bandwidth
/// (values are shared by pointer, never copied). Negative fits are 0 (bandwidth: at most
/// 1e13 B/s, "no measurable cost"). Throws Error naming what is missing.
HostLinks fit_host_links(const std::vector<ChainTiming>& timings);

/// What measure_hand_off runs.
struct HandOffProbe {
  std::vector<int> small_tasks = {8, 24};  ///< Chain lengths of small values.
  double small_bytes = 64;
  int large_tasks = 12;
  double large_bytes = 256 * 1024;
  int rounds = 9;  ///< Interleaved rounds; each times every configuration three times.
};

/// Times the chains of `probe` on this host's thread executor (two workers pinned to the first
/// two cores it may use), interleaved, medians. Needs two cores: throws Error on one.
std::vector<ChainTiming> measure_hand_off(const HandOffProbe& probe = {});

/// The cache file name of this host's hand-off: host_cache_key, and the OpenMP spin count in
/// effect (a waiting worker spins that long before it sleeps; the latency depends on it).
std::string hand_off_cache_key();

/// The cached form (host_links_to_json) of this host's fitted links and the timings they came
/// from, from `cache`'s folder (default: the rates' folder), else measured and written there.
nlohmann::json host_hand_off_json(
    const PeakRateCache& cache = {},
    const std::function<std::vector<ChainTiming>()>& measure = [] { return measure_hand_off(); });

/// This host's fitted links from `cache`'s folder (default: the rates' folder), else
/// `measure()` fitted and written there. A damaged file is warned about and measured again.
HostLinks calibrated_host_links(
    const PeakRateCache& cache = {},
    const std::function<std::vector<ChainTiming>()>& measure = [] { return measure_hand_off(); });

/// The fitted links and the timings they came from, as cached and as `cleave info --hand-off
/// --json` prints them.
nlohmann::json host_links_to_json(const HostLinks& links, const std::vector<ChainTiming>& timings);
/// Reads host_links_to_json's form; throws Error naming `origin` and the field.
HostLinks host_links_from_json(const nlohmann::json& json, const std::string& origin);

/// One line: "calibrated host hand-off: latency 0.4 us, 42 GB/s, 0.2 us per task, 9 us per run".
std::string host_links_text(const HostLinks& links);

}  // namespace cleave
