// What every graph pass reports, and the graph facts and edits several passes share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// What a pass changed, as named counts in the order they were first recorded, e.g.
/// {"nodes folded", 12}, so that a pipeline can log "constant folding: 12 nodes folded".
struct PassResult {
  std::string pass;  ///< "constant folding", "dead-code elimination", ...
  std::vector<std::pair<std::string, int64_t>> counts;
  /// For a pipeline: the result of each step, in the order they ran.
  std::vector<PassResult> steps;

  /// Adds `amount` to the count named `what` (creating it at the end when new).
  void add(std::string_view what, int64_t amount = 1);
  /// The count named `what`; 0 when never recorded.
  int64_t count(std::string_view what) const;
  /// Whether any count is non-zero.
  bool changed() const;
  /// One line: "constant folding: 12 nodes folded, 3 Shape nodes folded" or
  /// "constant folding: no change". Zero counts are left out.
  std::string summary() const;
  /// Adds every count of `other` to this one (by name).
  void merge_counts(const PassResult& other);
};

/// Whether the contents of `value` are known at compile time: an initializer with data that is
/// not also a graph input (an initializer listed as a graph input is only a default, which the
/// caller may override).
bool is_constant(const Graph& graph, ValueId value);

/// Whether `value` is a weight whose bytes were left unread (LoadOptions::weights_unread): an
/// initializer with dims and type but no data, not a graph input. The passes that rewrite
/// weights rewrite such a one as sizes only, so that the graph has the structure a load with
/// its weights gives.
bool is_unread_weight(const Graph& graph, ValueId value);

/// The names of the weights left unread whose bytes a pass needed, on this thread, one entry
/// per need in the order they came (a name may repeat): the pass did something other than what
/// it does with the bytes loaded (asked is_constant of it, or rewrote it as sizes only). While
/// none is added, a graph loaded with its weights unread has the structure, and its unread
/// weights the bytes of the file, that a whole load gives.
const std::vector<std::string>& unread_weight_needs();

/// Records such a need of unread weight `value` (unread_weight_needs) where a pass reads its
/// sizes in place of its bytes; values that are not unread weights are ignored.
void note_unread_weight_need(const Graph& graph, ValueId value);

/// The value of a constant float tensor of exactly one element (any rank); nullopt otherwise.
std::optional<float> constant_float_scalar(const Graph& graph, ValueId value);

/// Whether `node` (may be -1) is a live standard-domain node of type `op` with inputs and
/// exactly one output: the shape of every node a pattern-matching fusion removes.
bool is_single_output_op(const Graph& graph, NodeId node, std::string_view op);

/// Whether a fusion may delete `value`: it is no graph output and no control-flow body reads
/// it (`read_by_bodies` from values_read_by_bodies).
bool is_removable(const Graph& graph, ValueId value, const std::vector<bool>& read_by_bodies);

/// The one node reading `value` (once or several times), or -1 when it has no reader, several
/// readers, or is not removable.
NodeId only_reader(const Graph& graph, ValueId value, const std::vector<bool>& read_by_bodies);

/// For a node of two inputs one of which is `known`: the other one; kNoValue otherwise.
ValueId other_input(const Node& node, ValueId known);

/// Per ValueId: whether a control-flow body (If/Loop/Scan attribute graphs, nested ones too)
/// reads the value by name. Such reads are not node inputs, so passes must neither delete nor
/// rename these values.
std::vector<bool> values_read_by_bodies(const Graph& graph);

/// `base` if no value has that name yet, else `base_1`, `base_2`, ...
std::string unique_value_name(const Graph& graph, const std::string& base);

/// Gives `node` new constant data at input `slot`: in place when only this node reads the
/// initializer there, else as a new initializer named after `name_base`.
void set_constant_input(Graph& graph, NodeId node, std::size_t slot, TensorData data,
                        const std::string& name_base);

/// Deletes `node` and lets the producer of its first input write the node's first output
/// instead, so the output keeps its name (it may be a graph output) while the node disappears.
/// Other readers of the input are moved to the output. The caller guarantees the two values
/// carry the same data after the change (Identity) or has made the producer compute the
/// node's result (fusion). Requirements, checked by `can_merge_into_producer`: the first input
/// is produced by a node, is no graph output and is not read by a control-flow body.
void merge_into_producer(Graph& graph, NodeId node);
bool can_merge_into_producer(const Graph& graph, NodeId node,
                             const std::vector<bool>& read_by_bodies);

}  // namespace cleave
