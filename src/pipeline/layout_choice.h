// Measured choice between oneDNN's channel-blocked and channels-last convolution layouts.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace cleave {

/// Which layout family a model's convolutions run in, and the latencies that decided it.
struct LayoutChoice {
  bool channels_last = false;
  bool measured = false;        ///< False when the layouts cannot differ (no 4-D Conv) or blocked
                                ///< layouts are off; the latencies are then 0.
  bool cached = false;          ///< Read from the cache instead of measured now.
  double blocked_ms = 0;        ///< Fastest run with 16-channel blocks.
  double channels_last_ms = 0;  ///< Fastest run in channels-last.
};

struct LayoutChoiceOptions {
  int warmup = 2;     ///< Untimed runs of each variant (preparation, in-place Concat).
  int min_runs = 3;   ///< Timed runs of each variant at least ...
  int max_runs = 10;  ///< ... and at most, while the time below lasts.
  double budget_seconds = 2.0;
  bool use_cache = true;
  std::string cache_directory;                       ///< Empty: default_cache_directory("layouts").
  std::function<void(const std::string&)> progress;  ///< One line per step; may be empty.
};

/// Whether any convolution could run in either layout family: a Conv with a 4-D input.
bool layouts_can_differ(const Graph& graph);

/// Times the graph on `inputs` with both layout families (`options` as given otherwise, one
/// executor at a time so that peak memory stays one model's) and picks the faster (by the
/// fastest run of each).
/// The answer is cached on disk, keyed by the graph's content and the thread count, so later
/// runs of the same model start at once and agree with each other.
LayoutChoice choose_layouts(const Graph& graph, const ExecutorOptions& options,
                            const std::map<std::string, Tensor>& inputs,
                            const LayoutChoiceOptions& choice_options = {});

/// "channels-last (measured: 107.9 ms vs 118.3 ms blocked)" and the like, for reports.
std::string describe(const LayoutChoice& choice);

}  // namespace cleave
