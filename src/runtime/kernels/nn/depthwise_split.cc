// Convolutions split into output-channel-block runs (depthwise_split.h).
#include "runtime/kernels/nn/depthwise_split.h"

#include <algorithm>
#include <span>

#include "runtime/claim_pool.h"
#include "runtime/cpu_isa.h"
#include "runtime/intra_op_team.h"

namespace cleave::conv_detail {

namespace {

// The blocks the effective ISA's jit_dw reads and writes: 16 channels on AVX-512, 8 on AVX2.
memory::desc native_channel_blocks(std::span<const int64_t> shape) {
  return memory::desc(to_dnnl_dims(shape), memory::data_type::f32,
                      channel_blocked_tag(4, native_channel_block()));
}

// A convolution's work below which claimed parts are not worth waking a helper for: ~0.5 ms on
// one AVX2 core, where ResNet-50's smallest convolution has 26 million.
constexpr double kMinClaimedFlops = 20e6;

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
    bool has_bias, const float* weights) {
  const bool depthwise = p.groups == p.channels_in && p.groups == p.channels_out;
  const bool claimed = context.claim_pool != nullptr && context.claim_pool->threads() >= 2;
  const int threads = claimed ? context.claim_pool->threads() : context.threads;
  if (threads < 2 || p.transposed || !(depthwise || (claimed && p.groups == 1)) || p.batch != 1 ||
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
  if (claimed) {
    // A small convolution runs whole on the calling thread: when the helper it wakes claims a
    // part and then waits for a core, the caller waits too, and a part of a few microseconds
    // cannot pay for that (MobileNet-V2 beside 2 busy processes: 10.9 ms on one thread, 10-22
    // ms with every convolution in parts).
    const double flops = 2.0 * static_cast<double>(p.channels_out) *
                         static_cast<double>(p.channels_in / p.groups) * p.kernel[0] * p.kernel[1] *
                         p.output_shape[2] * p.output_shape[3];
    if (flops < kMinClaimedFlops) return {};
  }
  // Claimed parts: two per thread. Fewer left a thread idle behind a preempted one; eight
  // lost to the input each part reads again (ResNet-50's convolutions beside 2 busy processes
  // on 2 cores, bench/load/conv_parts.sh: 4 parts 132-174 ms, 1 thread 163-191 ms; idle, 8
  // parts 73-77 ms against a 2-thread primitive's 63-66 ms, 4 parts within its noise).
  const int64_t part_count =
      claimed ? std::min<int64_t>(2 * threads, blocks) : std::min<int64_t>(threads, blocks / 2);
  if (part_count < 2) return {};
  const int64_t kernel_volume = p.kernel[0] * p.kernel[1];
  // A dense part's weights are a run of the user weights' output channels (O, I, kh, kw).
  const memory::dims user_dims = p.user_weights.dims();
  if (!depthwise && user_dims.size() != 4) return {};
  const int64_t weights_per_channel =
      depthwise ? kernel_volume : user_dims[1] * user_dims[2] * user_dims[3];
  const int64_t input_pixels = input_shape[2] * input_shape[3];
  const int64_t output_pixels = p.output_shape[2] * p.output_shape[3];
  const IntraOpTeamScope one_thread(1);  // Each part's primitive runs on one thread.
  std::vector<ChannelPart> parts;
  for (int64_t part = 0; part < part_count; ++part) {
    // Earlier parts take the extra block, so that a partly filled last block has less company.
    const int64_t first = (part * blocks + part_count - 1) / part_count * block;
    const int64_t end =
        std::min(p.channels_out, ((part + 1) * blocks + part_count - 1) / part_count * block);
    ConvProblem slice = p;
    slice.channels_out = end - first;
    slice.output_shape[1] = end - first;
    std::vector<int64_t> slice_input = input_shape;
    if (depthwise) {
      slice.channels_in = slice.groups = end - first;
      slice.user_weights =
          plain_desc(std::vector<int64_t>{end - first, 1, 1, p.kernel[0], p.kernel[1]});
      slice_input[1] = end - first;
    } else {
      memory::dims dims = user_dims;
      dims[0] = end - first;
      slice.user_weights = plain_desc(std::vector<int64_t>(dims.begin(), dims.end()));
    }
    auto descriptor = make_descriptor<dnnl::convolution_forward>(
        slice, native_channel_blocks(slice_input), native_channel_blocks(slice.output_shape),
        has_bias, attr, context.engine);
    if (is_slow(implementation_name(descriptor))) return {};
    ChannelPart channel_part;
    channel_part.step = DnnlStep(dnnl::convolution_forward(descriptor), descriptor, context.engine);
    channel_part.step.declare(DNNL_ARG_SRC, descriptor.src_desc());
    channel_part.step.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    if (has_bias) channel_part.step.declare(DNNL_ARG_BIAS, descriptor.bias_desc());
    channel_part.step.declare(DNNL_ARG_DST, descriptor.dst_desc());
    channel_part.stream = dnnl::stream(context.engine);
    channel_part.packed_weights =
        pack_constant(weights + first * weights_per_channel, slice.user_weights,
                      descriptor.weights_desc(), context.engine);
    channel_part.first_channel = first;
    // A dense part reads the whole input.
    channel_part.source_offset = depthwise ? static_cast<std::size_t>(first * input_pixels) : 0;
    channel_part.destination_offset = static_cast<std::size_t>(first * output_pixels);
    parts.push_back(std::move(channel_part));
  }
  return parts;
}

}  // namespace cleave::conv_detail
