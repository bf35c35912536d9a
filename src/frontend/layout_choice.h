// Measured choice of convolution family: channel blocks, with Winograd, or channels-last.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"
#include "runtime/winograd_budget.h"

namespace cleave {

/// Bounds on the median of a family's paired ratios against blocked: each side holds the true
/// median with probability at least 1 - kIntervalError whatever the noise's distribution.
/// Infinite on both sides while too few rounds are in (fewer than five).
struct RatioInterval {
  double low = 0;
  double high = 0;
  bool operator==(const RatioInterval&) const = default;
};

/// The chance that each bound of a RatioInterval leaves the true median on its wrong side.
inline constexpr double kIntervalError = 0.05;

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
  /// Each family's latency over blocked's in each of its rounds, in order (relative holds their
  /// medians); empty in entries cached before they were recorded.
  std::map<ConvolutionFamily, std::vector<double>> ratios;
  /// The most activation memory the rounds' two executors held at once (their static plans
  /// share one arena, SharedArena); 0 when read from the cache.
  std::size_t rounds_activation_bytes = 0;
};

/// How much faster than blocked another family must be to be chosen: within it, the
/// difference is what this VM's noise moves, and blocked is the family measured most.
inline constexpr double kFamilyMargin = 0.02;

struct LayoutChoiceOptions {
  int warmup = 2;  ///< Untimed runs of each variant (preparation, in-place Concat).
  /// Untimed runs of the same executor before each timed one, so that each timed run starts
  /// from the caches its own last run left, as a model run again and again does. Timed right
  /// after the other family's run, channels-last on resnet101 at 1 thread read 0.89-1.04 of
  /// blocked where its repeated runs take 1.09 (per-run CPU time, separate processes); after
  /// one untimed run, 1.08-1.33.
  int untimed_before_each = 1;
  /// Interleaved rounds (a timed run of blocked and one of the other family) per family other
  /// than blocked, at least ...
  int min_runs = 3;
  int max_runs = 10;            ///< ... and at most, while its share of the time below lasts.
  double budget_seconds = 2.0;  ///< Shared equally among the families other than blocked.
  /// A family whose rounds do not yet say on which side of its bar it lies (family_settled)
  /// runs on to this many rounds, while its share of the time below lasts.
  int unsettled_max_runs = 40;
  /// Wall seconds, beyond budget_seconds, shared equally among the families other than blocked,
  /// for rounds of the unsettled ones: so a first run's choice takes at most budget_seconds +
  /// unsettled_budget_seconds of rounds (and a round more per family) plus the preparation.
  double unsettled_budget_seconds = 6.0;
  /// References to the graph's initializer bytes beside the graph given that nothing reads
  /// while the choice runs (a Session's imported model): the loaded bytes of weights that
  /// blocked's kernels packed are set aside during the rounds (LoadedBytesAside) only where no
  /// other reference than these, the graph's and the executors' shares them.
  int idle_weight_copies = 0;
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
/// The ratios relative_to_blocked takes the medians of: per family, one per round holding it
/// (blocked's are all 1), in the rounds' order.
std::map<ConvolutionFamily, std::vector<double>> ratios_to_blocked(
    const std::vector<std::map<ConvolutionFamily, double>>& rounds);

/// Distribution-free bounds on the median of `ratios`: the order statistics x_(j) and
/// x_(n+1-j) for the largest j with P(Binomial(n, 1/2) <= j - 1) <= `error`, each of which
/// then leaves the median outside with probability at most `error`; {-inf, +inf} where no j
/// qualifies (n < 5 at error 0.05).
RatioInterval median_interval(std::vector<double> ratios, double error = kIntervalError);

/// The margin each family must beat blocked by where it is not kFamilyMargin (family_margins).
using FamilyMargins = std::map<ConvolutionFamily, double>;

/// The ratio a family must beat to be chosen, given the families timed before it: 1 - margin
/// (its own), or the lowest median among them where lower and below 1 - their own margin (in
/// `margins`, else `margin`): a family that did not clear its own bar sets no bar for others.
double family_bar(const std::map<ConvolutionFamily, double>& relative,
                  double margin = kFamilyMargin, const FamilyMargins& margins = {});

/// The margin the Winograd family must beat blocked by, given what its selection holds:
/// `margin`, times the bytes its Winograd weights and the largest scratchpad of its kernels
/// (a thread's, booked at that size: WinogradSelection::kept_scratchpad_bytes) add over the
/// model's plain weight bytes where those are more (the model's memory then more than doubled
/// by Winograd). For the weights alone only the budget's floor lets that happen (a model under
/// 32 MiB of weights whose copies are oneDNN's F(4x4, 3x3), x4): raft_small's add 9.6 MiB to 4.2,
/// and with them its steady peak was 53 MiB against blocked's 43 and ONNX Runtime's 47, for a
/// median of 1.00-1.32 of blocked's time that one quiet host's rounds put below 0.98. With the
/// scratchpad counted as booked (oneDNN books room F(4x4, 3x3) does not write in inference), the
/// held-out models whose margin grows are raft_small (9.4%), fcn_resnet50 (4.4%: a 156 MiB
/// scratchpad) and squeezenet1_1 (3.9%); others keep `margin`.
double winograd_margin(const WinogradSelection& selection, double margin = kFamilyMargin);

/// Each family's margin on `graph` at `threads` intra-op threads where it is not kFamilyMargin:
/// Winograd's (winograd_margin) over the selection its executors run
/// (select_winograd with the environment's budget and `kernel`).
FamilyMargins family_margins(const Graph& graph, int threads,
                             const WinogradKernel& kernel = winograd_kernel_here());

/// Whether a family's paired ratios against blocked say on which side of `bar` its median lies:
/// the whole interval is below or above it. Until then its rounds go on (within the budget), so
/// that a family within a few % of the bar gets the rounds the noise calls for, and one far
/// from it stops where it did before.
bool family_settled(const std::vector<double>& ratios, double bar, double error = kIntervalError);

/// One family's rounds against blocked: `round(i)` times round i and returns {blocked's ms, the
/// family's ms}; `elapsed()` is the wall seconds since the first. At least `min_runs` rounds,
/// then up to `max_runs` within budget_seconds / `others`; then, while family_settled says
/// nothing against `bar`, up to `unsettled_max_runs` within unsettled_budget_seconds / `others`
/// more. Returns each round's pair in order.
std::vector<std::pair<double, double>> time_family(
    const std::function<std::pair<double, double>(int)>& round,
    const std::function<double()>& elapsed, double bar, double others,
    const LayoutChoiceOptions& choice);

/// Times the graph on `inputs` in each family that can differ (`options` as given otherwise),
/// in interleaved rounds with every family's executor alive, and picks by pick_settled_family
/// with the graph's family_margins.
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

/// The family choose_layouts keeps, from each family's per-round ratios against blocked (keys
/// in the order the families are timed: the enum's): blocked, replaced by a family whose median
/// is below 1 - margin; a family other than blocked kept so far is replaced only by one whose
/// median is below its median and whose rounds settle it there (family_settled). So unsettled
/// rounds do not swap one faster-than-blocked family for another: resnet101 at 1 thread,
/// channels-last within 1% of Winograd's median but unsettled, was taken by the median where
/// its repeated runs are 9% slower.
/// A family in `margins` must be below 1 - its margin there instead of 1 - `margin`.
ConvolutionFamily pick_settled_family(
    const std::map<ConvolutionFamily, std::vector<double>>& ratios, double margin = kFamilyMargin,
    const FamilyMargins& margins = {});

/// "winograd (measured: 25.7 ms; blocked 31.4 ms, channels-last 30.1 ms)" and the like, with
/// "CPU" before "ms" when the runs were timed in CPU time.
std::string describe(const LayoutChoice& choice);

}  // namespace cleave
