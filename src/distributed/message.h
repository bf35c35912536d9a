// The header every tensor message between ranks carries, and the check that refuses a message
// whose channel, type, shape or size is not what the plan says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/graph.h"

namespace cleave {

/// Fixed-size prefix of a tensor message. The payload follows it in the same MPI message, so
/// one receive posted early holds both: plain row-major bytes, or, for a value the producer
/// left in a oneDNN blocked layout (which every consumer of it accepts), the blocked bytes with
/// the layout after the header, so the consumer computes exactly as in one process.
struct MessageHeader {
  static constexpr uint32_t kMagic = 0x434c5631;  // "CLV1"
  static constexpr int kMaxRank = 8;
  uint32_t magic = kMagic;
  int32_t channel = -1;  ///< Index of the channel (also the MPI tag).
  int64_t run = 0;       ///< Which run of the stream the value belongs to.
  int32_t dtype = 0;     ///< DataType as an integer.
  int32_t rank = 0;      ///< Tensor rank (dimensions used in `dims`).
  int64_t dims[kMaxRank] = {};
  uint64_t payload_bytes = 0;
  int32_t blocked = 0;  ///< 1: a dnnl_memory_desc_t follows the header.
  int32_t reserved = 0;
};

/// Bytes reserved in front of the payload: the header rounded up to 64, so the payload stays
/// aligned for the kernels that read it in place.
inline constexpr std::size_t kMessagePrefixBytes =
    (sizeof(MessageHeader) + sizeof(dnnl_memory_desc_t) + 63) / 64 * 64;

/// The most payload bytes a value of this type and shape may take in a blocked layout (the
/// channel dimension padded to 16), for sizing a receive before the layout is known.
std::size_t payload_capacity(DataType dtype, std::span<const int64_t> shape);

/// What the receiver expects on one channel: from the plan and the graph's static shapes.
struct MessageExpectation {
  int channel = -1;
  int64_t run = 0;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  std::string what;  ///< "value 'x' of task 'conv1' from rank 1", for messages.
};

/// Builds the header for a plain tensor of this type and shape.
MessageHeader make_header(int channel, int64_t run, DataType dtype, std::span<const int64_t> shape);

/// Checks a received message (`received_bytes` as MPI counted them, header included) against
/// the expectation; throws Error naming the value, the sender and the mismatch. Nothing of a
/// refused message is ever used as a tensor. For a blocked message, `layout` is the layout
/// that came with it; the result is then that layout, checked to describe the expected
/// tensor and exactly the payload's size.
std::optional<dnnl::memory::desc> check_message(const MessageHeader& header,
                                                std::size_t received_bytes,
                                                const MessageExpectation& expected,
                                                const dnnl_memory_desc_t* layout = nullptr);

}  // namespace cleave
