// A C++ builder for stream programs in the thesis's style: a lambda adds a pipeline's stages.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stream/stream_ir.h"

namespace cleave {

/// Adds streams to the pipeline or split-join it was handed, e.g.
///
///     Stream s = make_pipeline("audio", [&](StreamBuilder& p) {
///       p.model("features", 1, 1, 2, features_graph);
///       p.splitjoin("both", Splitter{SplitKind::kDuplicate, {}}, Joiner{{1, 1}},
///                   [&](StreamBuilder& sj) {
///                     sj.filter("left", FilterOp::kIdentity, 1, 1, 1);
///                     sj.filter("right", FilterOp::kIdentity, 1, 1, 1);
///                   });
///     });
class StreamBuilder {
 public:
  explicit StreamBuilder(Stream& parent) : parent_(&parent) {}

  /// A built-in filter.
  Stream& filter(std::string name, FilterOp op, int64_t pop, int64_t peek, int64_t push,
                 std::vector<int64_t> args = {});
  /// A filter whose work function is `graph`, run on each window of `peek` items.
  Stream& model(std::string name, int64_t pop, int64_t peek, int64_t push,
                std::shared_ptr<const Graph> graph);
  Stream& pipeline(std::string name, const std::function<void(StreamBuilder&)>& body);
  /// `body` adds the branches, in order.
  Stream& splitjoin(std::string name, Splitter split, Joiner join,
                    const std::function<void(StreamBuilder&)>& body);
  /// Appends an already built stream.
  Stream& add(Stream stream);

 private:
  Stream* parent_;
};

Stream make_pipeline(std::string name, const std::function<void(StreamBuilder&)>& body);
Stream make_splitjoin(std::string name, Splitter split, Joiner join,
                      const std::function<void(StreamBuilder&)>& body);

}  // namespace cleave
