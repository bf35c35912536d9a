// Measured choice of convolution family: channel blocks, with Winograd, or channels-last.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace cleave {

/// Which convolution family a model runs in, and the latencies that decided it.
struct LayoutChoice {
  ConvolutionFamily family = ConvolutionFamily::kBlocked;
  bool measured = false;  ///< False when nothing can differ (no 4-D Conv) or blocked layouts
                          ///< are off; fastest_ms is then empty.
  bool cached = false;    ///< Read from the cache instead of measured now.
  bool cpu_time = false;  ///< Timed in process CPU time (times_in_cpu_time), not wall time.
  std::map<ConvolutionFamily, double> fastest_ms;  ///< Fastest run of each family timed.
  /// Each family's latency over blocked's, the median over interleaved rounds; what decided.
  std::map<ConvolutionFamily, double> relative;
};

/// How much faster than blocked another family must be to be chosen: within it, the
/// difference is what this VM's noise moves, and blocked is the family measured most.
inline constexpr double kFamilyMargin = 0.02;

struct LayoutChoiceOptions {
  int warmup = 2;  ///< Untimed runs of each variant (preparation, in-place Concat).
  /// Interleaved rounds (a timed run of blocked and one of the other family) per family other
  /// than blocked, at least ...
  int min_runs = 3;
  int max_runs = 10;            ///< ... and at most, while its share of the time below lasts.
  double budget_seconds = 2.0;  ///< Shared equally among the families other than blocked.
  bool use_cache = true;
  std::string cache_directory;                       ///< Empty: default_cache_directory("layouts").
  std::function<void(const std::string&)> progress;  ///< One line per step; may be empty.
};

/// Whether the layout choice times each run in process CPU time rather than wall time: at one
/// thread, where a run's CPU time is its latency less what other processes took from it (on a
/// quiet host the same). Five fresh choices of wide_resnet50_2 under the AVX2 cap at load 12
/// put Winograd at 0.70-1.05 of blocked in wall time and 0.90-1.02 in CPU time, channels-last
/// at 0.97-1.29 and 0.93-1.12 (docs/results/heldout-speed.md, 2026-11-30 11:25 UTC). With more
/// threads the CPU time would count the team's waiting, so the wall clock stays.
bool times_in_cpu_time(int threads);

/// Whether any convolution could run in another family: a Conv with a 4-D input.
bool layouts_can_differ(const Graph& graph);
/// Whether a Conv has the shape oneDNN's Winograd kernel takes (3x3, stride 1, no dilation or
/// groups, 4-D), a map on which Winograd pays on a team of `threads` (winograd_map_pays), and
/// the effective ISA has a Winograd kernel (oneDNN 2.6: AVX512_CORE; cleave's own on AVX2);
/// only then is the Winograd family timed.
bool winograd_can_apply(const Graph& graph, int threads);

/// Each family's latency relative to kBlocked's in every round (`rounds[i]` holds blocked's
/// run in round i and those of the families timed beside it), the median over the rounds that
/// hold the family: a burst of other work that slows one run moves one ratio, not the answer.
std::map<ConvolutionFamily, double> relative_to_blocked(
    const std::vector<std::map<ConvolutionFamily, double>>& rounds);

/// The family with the lowest relative latency, provided it is below 1 - margin; else kBlocked.
ConvolutionFamily pick_family(const std::map<ConvolutionFamily, double>& relative,
                              double margin = kFamilyMargin);

/// Times the graph on `inputs` in each family that can differ (`options` as given otherwise),
/// in interleaved rounds with every family's executor alive, and picks by pick_family.
/// The answer is cached on disk, keyed by the graph's content and the thread count, so later
/// runs of the same model start at once and agree with each other.
LayoutChoice choose_layouts(const Graph& graph, const ExecutorOptions& options,
                            const std::map<std::string, Tensor>& inputs,
                            const LayoutChoiceOptions& choice_options = {});

/// The family choose_layouts picks for `threads` intra-op threads, timed on seeded random
/// inputs (and cached, so that `cleave plan`, `cleave profile` and `cleave run` agree);
/// kBlocked when nothing can differ.
ConvolutionFamily measured_family(const Graph& graph, int threads,
                                  const std::function<void(const std::string&)>& progress = {});

/// "winograd (measured: 25.7 ms; blocked 31.4 ms, channels-last 30.1 ms)" and the like, with
/// "CPU" before "ms" when the runs were timed in CPU time.
std::string describe(const LayoutChoice& choice);

}  // namespace cleave
