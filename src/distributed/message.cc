// Tensor message headers: building them and refusing messages the plan does not expect.
#include "distributed/message.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "runtime/tensor.h"

namespace cleave {

namespace {

std::string shape_text(std::span<const int64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

}  // namespace

MessageHeader make_header(int channel, int64_t run, DataType dtype,
                          std::span<const int64_t> shape) {
  if (shape.size() > static_cast<std::size_t>(MessageHeader::kMaxRank)) {
    throw Error(fmt::format("a tensor of rank {} cannot cross ranks (at most {} dimensions)",
                            shape.size(), MessageHeader::kMaxRank));
  }
  MessageHeader header;
  header.channel = channel;
  header.run = run;
  header.dtype = static_cast<int32_t>(dtype);
  header.rank = static_cast<int32_t>(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) header.dims[i] = shape[i];
  header.payload_bytes = plain_byte_size(dtype, shape);
  return header;
}

std::size_t payload_capacity(DataType dtype, std::span<const int64_t> shape) {
  std::vector<int64_t> padded(shape.begin(), shape.end());
  if (padded.size() >= 2) padded[1] = (padded[1] + 15) / 16 * 16;
  return plain_byte_size(dtype, padded);
}

std::optional<dnnl::memory::desc> check_message(const MessageHeader& header,
                                                std::size_t received_bytes,
                                                const MessageExpectation& expected,
                                                const dnnl_memory_desc_t* layout) {
  const auto refuse = [&](const std::string& why) {
    throw Error(fmt::format("refused the message for {} (channel {}, run {}): {}", expected.what,
                            expected.channel, expected.run, why));
  };
  if (received_bytes < sizeof(MessageHeader)) {
    refuse(fmt::format("{} bytes is shorter than the {}-byte header", received_bytes,
                       sizeof(MessageHeader)));
  }
  if (header.magic != MessageHeader::kMagic) refuse("it has no cleave message header");
  if (header.channel != expected.channel) {
    refuse(fmt::format("it is for channel {}", header.channel));
  }
  if (header.run != expected.run) refuse(fmt::format("it belongs to run {}", header.run));
  if (header.dtype != static_cast<int32_t>(expected.dtype)) {
    const auto got = static_cast<DataType>(header.dtype);
    refuse(fmt::format("its type is {}, the plan says {}",
                       header.dtype >= 0 && header.dtype <= 16 ? std::string(dtype_name(got))
                                                               : fmt::format("#{}", header.dtype),
                       dtype_name(expected.dtype)));
  }
  if (header.rank < 0 || header.rank > MessageHeader::kMaxRank) {
    refuse(fmt::format("its header claims {} dimensions", header.rank));
  }
  std::span<const int64_t> dims(header.dims, static_cast<std::size_t>(header.rank));
  if (!std::equal(dims.begin(), dims.end(), expected.shape.begin(), expected.shape.end())) {
    refuse(fmt::format("its shape is {}, the plan says {}", shape_text(dims),
                       shape_text(expected.shape)));
  }
  std::optional<dnnl::memory::desc> desc;
  std::size_t want = plain_byte_size(expected.dtype, expected.shape);
  if (header.blocked) {
    if (!layout) refuse("it claims a blocked layout that did not come with it");
    if (expected.dtype != DataType::kFloat || layout->data_type != dnnl_f32 ||
        layout->format_kind != dnnl_blocked || layout->ndims != header.rank ||
        !std::equal(layout->dims, layout->dims + layout->ndims, expected.shape.begin(),
                    expected.shape.end())) {
      refuse("its blocked layout does not describe the plan's tensor");
    }
    desc = dnnl::memory::desc(*layout);
    want = desc->get_size();
    if (want > payload_capacity(expected.dtype, expected.shape)) {
      refuse(
          fmt::format("its blocked layout takes {} bytes, more than any layout of the plan's "
                      "tensor",
                      want));
    }
  }
  if (header.payload_bytes != want) {
    refuse(fmt::format("its header claims {} payload bytes, the plan says {}", header.payload_bytes,
                       want));
  }
  if (received_bytes != kMessagePrefixBytes + want) {
    refuse(fmt::format("it holds {} bytes, the plan says {} ({} of data after a {}-byte header)",
                       received_bytes, kMessagePrefixBytes + want, want, kMessagePrefixBytes));
  }
  return desc;
}

}  // namespace cleave
