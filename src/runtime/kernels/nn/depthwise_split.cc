// Depthwise convolutions split into channel-block runs (depthwise_split.h).
#include "runtime/kernels/nn/depthwise_split.h"

#include <omp.h>

#include <algorithm>
#include <span>

#include "runtime/cpu_isa.h"

namespace cleave::conv_detail {

namespace {

// The blocks the effective ISA's jit_dw reads and writes: 16 channels on AVX-512, 8 on AVX2.
memory::desc native_channel_blocks(std::span<const int64_t> shape) {
  return memory::desc(to_dnnl_dims(shape), memory::data_type::f32,
                      channel_blocked_tag(4, native_channel_block()));
}

}  // namespace

// oneDNN 2.6's jit_dw shares a few channel blocks unevenly between threads: MnasNet's 3x3
// depthwise convolution on 72 channels at 56x56 took 71-94 us on two threads against 88 us on
// one. One single-thread primitive per contiguous run of blocks, run side by side, took
// 61-67 us, and was as fast or faster on every MobileNet/MnasNet shape with at least two blocks
// per thread; with fewer it lost (40 channels: 40 against 34 us), so oneDNN keeps those
// (bench/depthwise.cc split). Only for batch 1, where a block range is one stretch of memory.
// Empty when the convolution is not split.
std::vector<ChannelPart> split_channel_blocks(
    const KernelContext& context, const ConvProblem& p,
    const dnnl::convolution_forward::primitive_desc& whole, const dnnl::primitive_attr& attr,
    bool has_bias) {
  const bool depthwise = p.groups == p.channels_in && p.groups == p.channels_out;
  if (context.threads < 2 || p.transposed || !depthwise || p.batch != 1 ||
      p.output_shape.size() != 4 || !context.constant[1]) {
    return {};
  }
  const std::vector<int64_t> input_shape = context.input(0).shape();
  if (whole.src_desc() != native_channel_blocks(input_shape) ||
      whole.dst_desc() != native_channel_blocks(p.output_shape)) {
    return {};
  }
  const int64_t block = native_channel_block();
  const int64_t blocks = (p.channels_out + block - 1) / block;
  const int64_t part_count = std::min<int64_t>(context.threads, blocks / 2);
  if (part_count < 2) return {};
  const int64_t kernel_volume = p.kernel[0] * p.kernel[1];
  const int64_t input_pixels = input_shape[2] * input_shape[3];
  const int64_t output_pixels = p.output_shape[2] * p.output_shape[3];
  const float* weights = context.input(1).data<float>();
  const int team = omp_get_max_threads();
  omp_set_num_threads(1);  // oneDNN fixes a primitive's team when it is created.
  std::vector<ChannelPart> parts;
  for (int64_t part = 0; part < part_count; ++part) {
    // Earlier parts take the extra block, so that a partly filled last block has less company.
    const int64_t first = (part * blocks + part_count - 1) / part_count * block;
    const int64_t end =
        std::min(p.channels_out, ((part + 1) * blocks + part_count - 1) / part_count * block);
    ConvProblem slice = p;
    slice.channels_in = slice.channels_out = slice.groups = end - first;
    slice.output_shape[1] = end - first;
    slice.user_weights =
        plain_desc(std::vector<int64_t>{end - first, 1, 1, p.kernel[0], p.kernel[1]});
    std::vector<int64_t> slice_input = input_shape;
    slice_input[1] = end - first;
    auto descriptor = make_descriptor<dnnl::convolution_forward>(
        slice, native_channel_blocks(slice_input), native_channel_blocks(slice.output_shape),
        has_bias, attr, context.engine);
    if (is_slow(implementation_name(descriptor))) {
      omp_set_num_threads(team);
      return {};
    }
    ChannelPart channel_part;
    channel_part.step = DnnlStep(dnnl::convolution_forward(descriptor), descriptor, context.engine);
    channel_part.step.declare(DNNL_ARG_SRC, descriptor.src_desc());
    channel_part.step.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    if (has_bias) channel_part.step.declare(DNNL_ARG_BIAS, descriptor.bias_desc());
    channel_part.step.declare(DNNL_ARG_DST, descriptor.dst_desc());
    channel_part.stream = dnnl::stream(context.engine);
    channel_part.packed_weights = pack_constant(weights + first * kernel_volume, slice.user_weights,
                                                descriptor.weights_desc(), context.engine);
    channel_part.first_channel = first;
    channel_part.source_offset = static_cast<std::size_t>(first * input_pixels);
    channel_part.destination_offset = static_cast<std::size_t>(first * output_pixels);
    parts.push_back(std::move(channel_part));
  }
  omp_set_num_threads(team);
  return parts;
}

}  // namespace cleave::conv_detail
