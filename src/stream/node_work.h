// The work functions of a stream's nodes, shared by the executor and its cost measurement.
#pragma once

#include <memory>
#include <vector>

#include "runtime/executor.h"
#include "runtime/tensor.h"
#include "stream/schedule.h"
#include "stream/stream_ir.h"

namespace cleave {

/// One item on a channel. A Tensor is large (its optional oneDNN layout descriptor alone is
/// hundreds of bytes), so channels, windows, splitters and joiners pass shared handles: a hop
/// moves a pointer, not a Tensor (deque nodes of one Tensor each cost a malloc per item).
using Item = std::shared_ptr<const Tensor>;

/// The item type of a tensor: its dtype and shape.
ItemType item_of(const Tensor& t);

/// What a model filter's output items look like: the declared type, else the output's shape
/// without its leading dim when that dim counts the items, else flat.
ItemType model_output_item(const Stream& s, const Value& v, int64_t per_output);

/// The runnable side of one node: a work function from input windows to output items.
/// Model filters that run the same graph on the same worker (fission's copies) share one
/// executor: one set of prepared primitives and packed weights, warm in that core's caches.
class NodeWork {
 public:
  explicit NodeWork(const StreamNode& node, std::shared_ptr<Executor> executor = nullptr);

  /// windows[port] holds peek[port] items, which the firing may move from; returns pushed
  /// items per output port. Items are moved, not copied, wherever one consumer takes them.
  std::vector<std::vector<Item>> fire(std::vector<std::vector<Item>>& windows);

 private:
  std::vector<Item> run_model(const Stream& s, const std::vector<Item>& window);

  const StreamNode& node_;
  std::shared_ptr<Executor> executor_;
};

}  // namespace cleave
