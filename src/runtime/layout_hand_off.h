// The layouts values had where one executor hands them to another by name (a pipeline's stages).
#pragma once

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <set>
#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// Shared by executors that each run a part of one graph and pass values to each other plain
/// (stream items): the producer computes a handed-off value in the blocked layout one executor
/// over the whole graph would have given it, records that layout and hands it on plain; the
/// consumer reorders it back before its kernels read it, so that they choose the kernels
/// (and compute the bits) of the whole graph's run. Thread-safe.
class LayoutHandOff {
 public:
  /// The values of `whole` that its executor may keep blocked (every reader takes a blocked
  /// layout; blocked_layout_allowed).
  explicit LayoutHandOff(const Graph& whole);

  /// Whether a part's graph output `name` may be computed blocked.
  bool blocked_allowed(const std::string& name) const { return blocked_.count(name) > 0; }
  /// Records the layout the producer computed `name` in.
  void record(const std::string& name, const dnnl::memory::desc& layout);
  /// The layout recorded for `name`, if any.
  std::optional<dnnl::memory::desc> layout_of(const std::string& name) const;

 private:
  std::set<std::string> blocked_;
  mutable std::mutex mutex_;
  std::map<std::string, dnnl::memory::desc> layouts_;
};

/// `tensor` (plain) in `layout`, in a buffer of its own.
Tensor to_layout(const Tensor& tensor, const dnnl::memory::desc& layout, dnnl::engine& engine,
                 dnnl::stream& stream);

}  // namespace cleave
