// Measured choice of convolution family: channel blocks, with Winograd, or channels-last.
#pragma once

#include <functional>
#include <map>
#include <string>

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
  std::map<ConvolutionFamily, double> fastest_ms;  ///< Fastest run of each family timed.
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

/// Whether any convolution could run in another family: a Conv with a 4-D input.
bool layouts_can_differ(const Graph& graph);
/// Whether a Conv has the shape oneDNN's Winograd kernel takes (3x3, stride 1, no dilation or
/// groups, 4-D) and the effective ISA has it (oneDNN 2.6: AVX512_CORE); only then is the
/// Winograd family timed.
bool winograd_can_apply(const Graph& graph);

/// Times the graph on `inputs` in each family that can differ (`options` as given otherwise,
/// one executor at a time so that peak memory stays one model's) and picks the fastest (by the
/// fastest run of each).
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

/// "winograd (measured: 25.7 ms; blocked 31.4 ms, channels-last 30.1 ms)" and the like.
std::string describe(const LayoutChoice& choice);

}  // namespace cleave
