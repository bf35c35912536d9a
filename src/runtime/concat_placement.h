// In-place Concat: lets the producers of a Concat's inputs write straight into its output.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace cleave {

/// Where a value's bytes live: inside the buffer allocated for `root`, at `byte_offset`.
struct BufferSlot {
  ValueId root = kNoValue;
  std::size_t byte_offset = 0;
};

/// Values that share one buffer because Concat nodes join them, and the size of each shared
/// buffer.
struct ConcatPlacement {
  std::vector<std::optional<BufferSlot>> slots;  ///< Per ValueId; roots map to themselves.
  std::vector<std::size_t> root_bytes;           ///< Per ValueId; set for roots only.
  int values_in_place = 0;  ///< Values a producer now writes inside a Concat's output.
  bool empty() const { return values_in_place == 0; }
};

/// Plans which Concat inputs can be written in place. `spec_of(value)` is the prepared output
/// spec of the value's producer (nullptr for graph inputs and initializers).
///
/// An input is placed when its bytes form one contiguous run of the Concat's output in the
/// same layout (`slice_byte_offset`): one outer index (batch 1 for channel joins) and a
/// shared plain or channel-blocked layout. Concats are visited from the last, so a value read
/// by several Concats lives in the last one, and an earlier Concat whose inputs already sit
/// side by side there becomes a view of it (DenseNet's growing feature maps all share the
/// buffer of the block's final Concat). The Concat kernel skips the copy of any input whose
/// bytes already are in place.
///
/// $CLEAVE_CONCAT_IN_PLACE=0 places nothing (every Concat copies), for measuring what placing
/// saves; a value other than 0 or 1 throws Error naming the variable (concat_in_place_enabled).
///
/// `may_place(concat, value)`, when given, may keep an input of that Concat from being placed
/// (its bytes still count for whether the others are contiguous; the Concat copies it), or,
/// asked with the Concat's own output, the Concat from holding any (a Concat another process
/// runs).
ConcatPlacement place_concat_inputs(
    const Graph& graph, const std::function<const OutputSpec*(ValueId)>& spec_of,
    const std::function<bool(const Node& concat, ValueId input)>& may_place = {});

/// Whether Concat `node` receives its inputs made on another MPI rank straight into their
/// slices of its output instead of copying them there: a float Concat of static shapes with
/// one outer index (every dim before the axis is 1) whose inputs before the last each span a
/// multiple of 16 along the axis, so that each is one contiguous run of the output in plain
/// and in channel-blocked layouts alike. The one answer of the MPI executor (which places
/// such inputs, task_concat_placement.h) and of the simulator's price of a Concat's copies
/// (Task::copies_remote_inputs).
bool concat_inputs_received_in_place(const Graph& graph, const Node& node);

/// Where each input of Concat `node` starts inside its output `whole`, in bytes, when every
/// input is one contiguous run of the output in the output's layout: what place_concat_inputs
/// asks of a Concat before it places any of its inputs (`spec_of` as there). Per input; nullopt
/// for an empty one. nullopt for a node that is no such Concat. A generated program checks with
/// it that the kernels it prepared put the inputs the generator placed where the Concat reads
/// them.
/// Whether $CLEAVE_CONCAT_IN_PLACE lets place_concat_inputs place inputs (unset, empty or 1: yes;
/// 0: no); Error naming the variable for anything else.
bool concat_in_place_enabled();

std::optional<std::vector<std::optional<std::size_t>>> concat_input_offsets(
    const Graph& graph, const Node& node, const OutputSpec& whole,
    const std::function<const OutputSpec*(ValueId)>& spec_of);

}  // namespace cleave
