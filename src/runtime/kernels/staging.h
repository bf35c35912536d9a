// Bytes a kernel needs only while it runs, kept once per thread instead of once per kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace cleave {

/// What a kernel stages while it runs; a kernel may use each slot once at a time.
enum class StagingSlot {
  kInput,    ///< An input reordered into the layout its primitive reads.
  kWeights,  ///< Weights given at run time, reordered.
  kOutput,   ///< The output as computed, before it is reordered into the output tensor.
  /// An input rewritten for an inner kernel that may stage it again (kInput): the data clamped
  /// at 127, or its excess above (clamped_data.h).
  kRewrittenInput,
  kFirstSums,   ///< The int32 sums of a two-part product's first part (split_weights.h).
  kSecondSums,  ///< Those of its second part, until the two are combined.
};

/// `bytes` of the calling thread's buffer for `slot`, grown (zeroed) to the largest size asked.
/// Valid until this thread asks for the slot again: a thread runs one kernel at a time, so the
/// kernels a thread runs share one buffer per slot, where a buffer per kernel held every
/// kernel's at once (raft_small: 16 MiB of them for a 3.3 MiB activation arena).
std::byte* staging_buffer(StagingSlot slot, std::size_t bytes);

/// A tensor of this type, shape and layout over the calling thread's buffer for `slot`
/// (staging_buffer), valid as long as that buffer.
Tensor staging_tensor(StagingSlot slot, DataType dtype, const std::vector<int64_t>& shape,
                      const std::optional<dnnl::memory::desc>& layout = std::nullopt);

/// The bytes the calling thread's slots hold (for tests and reports).
std::size_t thread_staging_bytes();

}  // namespace cleave
