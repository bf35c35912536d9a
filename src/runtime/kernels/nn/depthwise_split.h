// Internal to the convolution kernels: a convolution split into output-channel-block runs
// computed side by side on one thread each: depthwise ones always (oneDNN 2.6's jit_dw shares
// blocks unevenly), dense ones on a host whose cores other processes hold (claimed parts).
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

/// The parts of a convolution worth splitting (batch 1, native channel blocks, each part
/// reaching a jit kernel): a depthwise one with at least two blocks per thread, or, with
/// KernelContext::claim_threads, a depthwise or ungrouped one in parts for the threads to claim;
/// empty when it is not split.
std::vector<ChannelPart> split_channel_blocks(
    const KernelContext& context, const ConvProblem& p,
    const dnnl::convolution_forward::primitive_desc& whole, const dnnl::primitive_attr& attr,
    bool has_bias, const float* weights);

}  // namespace cleave::conv_detail
