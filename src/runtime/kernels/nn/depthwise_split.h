// Internal to the convolution kernels: a depthwise convolution split into channel-block runs
// computed side by side on one thread each (oneDNN 2.6's jit_dw shares blocks unevenly).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/conv_problem.h"

namespace cleave::conv_detail {

/// One contiguous run of a depthwise convolution's channel blocks, computed by one thread.
struct ChannelPart {
  DnnlStep step;
  dnnl::stream stream;
  std::shared_ptr<Buffer> packed_weights;
  int64_t first_channel = 0;
  std::size_t source_offset = 0, destination_offset = 0;  ///< In floats.
};

/// The parts of a depthwise convolution worth splitting (batch 1, at least two blocks per
/// thread, each part reaching a jit kernel); empty when it is not split.
std::vector<ChannelPart> split_channel_blocks(
    const KernelContext& context, const ConvProblem& p,
    const dnnl::convolution_forward::primitive_desc& whole, const dnnl::primitive_attr& attr,
    bool has_bias);

}  // namespace cleave::conv_detail
