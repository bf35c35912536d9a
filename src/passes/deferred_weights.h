// Weights a pass rewrote from unread weights while planning: made only when hashed, one at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// How a rewritten weight's bytes follow from its inputs' bytes (one TensorData per input, in
/// the order given; an absent input is an empty TensorData). A pass gives the same function it
/// applies to weights loaded whole, so that the bytes equal a whole load's.
using WeightRewrite = std::function<TensorData(const std::vector<TensorData>& inputs)>;

/// Reads a weight of the model file whole, by name.
using FileWeightReader = std::function<TensorData(const std::string& name)>;

struct DeferredRewrite;

/// While one lives on this thread, a pass that rewrites unread weights (is_unread_weight)
/// records how (defer_rewrite, record_deferred_weight) in place of needing their bytes
/// (note_unread_weight_need): the rewritten weight stays sizes only, and its bytes are made
/// when asked for (bytes_of), one weight at a time. Planning from a model's file
/// (load_for_planning) keeps one around its passes and its fingerprint. One per thread at a time.
class DeferredWeights {
 public:
  DeferredWeights();
  ~DeferredWeights();
  DeferredWeights(const DeferredWeights&) = delete;
  DeferredWeights& operator=(const DeferredWeights&) = delete;

  /// Forgets every recorded rewrite (before the passes run again).
  void clear();
  /// The names of the weights recorded, in name order.
  std::vector<std::string> names() const;
  /// The weights of the file the last rewrite recorded under `name` reads (through earlier
  /// rewrites too); empty when none was recorded. A pass that needs the rewritten weight's
  /// bytes needs these read.
  std::vector<std::string> file_weights_of(const std::string& name) const;
  /// The bytes the last rewrite recorded under `name` makes, its file weights read by `read`
  /// (each read, rewritten and let go in turn); nullopt when none was recorded.
  std::optional<TensorData> bytes_of(const std::string& name, const FileWeightReader& read) const;

 private:
  std::map<std::string, std::shared_ptr<const DeferredRewrite>> recorded_;
};

/// Whether a DeferredWeights lives on this thread (a pass may then rewrite unread weights as
/// sizes only and record how, where it would otherwise need their bytes).
bool deferring_weights();

/// A rewrite of the weights `inputs` (kNoValue: absent) as they are now, for a pass to record
/// under the weight it writes once it has written it (record_deferred_weight). Each input is
/// kept as: its bytes, where it has them; the rewrite recorded under its name, where it is
/// one; else the unread weight of the file by that name. Null where no DeferredWeights lives
/// on this thread: each unread input's need is then noted (note_unread_weight_need) and the
/// pass rewrites sizes only, as before.
std::shared_ptr<const DeferredRewrite> defer_rewrite(const Graph& graph,
                                                     const std::vector<ValueId>& inputs,
                                                     WeightRewrite rewrite);

/// Records `rewrite` (non-null, from defer_rewrite) as how the bytes of `value`, a weight
/// written without bytes, are made.
void record_deferred_weight(const Graph& graph, ValueId value,
                            std::shared_ptr<const DeferredRewrite> rewrite);

}  // namespace cleave
