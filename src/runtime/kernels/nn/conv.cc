// Conv and ConvTranspose on oneDNN: blocked layouts, pre-packed weights, fused activation/sum.
#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <limits>
#include <type_traits>
#include <utility>

#include "runtime/claim_pool.h"
#include "runtime/cpu_isa.h"
#include "runtime/intra_op_team.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/nn/conv_fallback.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/kernels/nn/depthwise_split.h"
#include "runtime/kernels/nn/dilated_taps.h"
#include "runtime/kernels/nn/winograd.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/staging.h"
#include "runtime/winograd_budget.h"

namespace cleave {

namespace {

using dnnl::memory;
using namespace conv_detail;

class ConvolutionKernel : public Kernel, public PackedConstants {
 public:
  /// `constant_weights`, when given, replaces input 1's bytes (laid out as problem.user_weights),
  /// and `note` is appended to the implementation's name.
  template <typename Primitive>
  static std::unique_ptr<Kernel> create(const KernelContext& context, const ConvProblem& problem,
                                        const float* constant_weights = nullptr,
                                        const std::string& note = "");

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return implementation_; }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != 1 || (!packed_weights_ && parts_.empty() && !taps_ && !own_winograd_);
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    const void* source = inputs[0]->raw();
    if (source_reorder_.needed()) {
      std::byte* staged = staging_buffer(StagingSlot::kInput, source_bytes_);
      source_reorder_.run(source, staged, stream);
      source = staged;
    }
    const void* weights = packed_weights_ ? packed_weights_->data() : inputs[1]->raw();
    if (!packed_weights_ && weights_reorder_.needed()) {
      std::byte* staged = staging_buffer(StagingSlot::kWeights, weights_bytes_);
      weights_reorder_.run(weights, staged, stream);
      weights = staged;
    }
    void* destination =
        output_bytes_ > 0 ? staging_buffer(StagingSlot::kOutput, output_bytes_) : outputs[0]->raw();
    if (sum_input_ >= 0) add_to(inputs[sum_input_]->raw(), destination, stream);
    const void* bias = has_bias_ ? inputs[2]->raw() : nullptr;
    if (own_winograd_) {
      own_winograd_->run(static_cast<const float*>(source), static_cast<const float*>(bias),
                         static_cast<float*>(destination), threads_, claim_pool_);
    } else if (taps_) {
      taps_->run(source, static_cast<const float*>(bias), destination, stream);
    } else if (!parts_.empty()) {
      run_parts(static_cast<const float*>(source), static_cast<const float*>(bias),
                static_cast<float*>(destination));
    } else {
      step_.set(DNNL_ARG_SRC, source);
      step_.set(DNNL_ARG_WEIGHTS, weights);
      if (has_bias_) step_.set(DNNL_ARG_BIAS, bias);
      step_.set(DNNL_ARG_DST, destination);
      step_.execute(stream);
    }
    if (swish_) {
      // Padding channels hold zeros, and swish(0) = 0, so the whole buffer can be mapped.
      float* values = static_cast<float*>(destination);
      elementwise::parallel_for(destination_floats_, threads_, [&](int64_t begin, int64_t end) {
        elementwise::swish_float(values + begin, values + begin, end - begin);
      });
    }
    if (output_bytes_ > 0) output_reorder_.run(destination, outputs[0]->raw(), stream);
  }

 private:
  // The fused sum's input is first copied where the convolution adds to it. A plain memcpy of
  // a residual runs on one thread: 3.2 MB per ResNeXt-50 block at 56x56.
  void add_to(const void* sum, void* destination, dnnl::stream& stream) {
    if (sum_reorder_.needed() || threads_ <= 1) {
      sum_reorder_.run(sum, destination, stream);
      return;
    }
    const float* from = static_cast<const float*>(sum);
    float* to = static_cast<float*>(destination);
    const int64_t floats = static_cast<int64_t>(sum_reorder_.target().get_size() / sizeof(float));
    elementwise::parallel_for(floats, threads_, [&](int64_t begin, int64_t end) {
      std::memcpy(to + begin, from + begin, static_cast<std::size_t>(end - begin) * sizeof(float));
    });
  }

  // Each thread claims the next part until none is left: a thread that waits for a core holds
  // up only the part it has begun (claimed parts), and OpenMP giving fewer threads than asked
  // still runs every part.
  void run_parts(const float* source, const float* bias, float* destination) {
    const int count = static_cast<int>(parts_.size());
    auto run_part = [&](int index) {
      ChannelPart& part = parts_[index];
      try {
        part.step.set(DNNL_ARG_SRC, source + part.source_offset);
        part.step.set(DNNL_ARG_WEIGHTS, part.packed_weights->data());
        if (bias) part.step.set(DNNL_ARG_BIAS, bias + part.first_channel);
        part.step.set(DNNL_ARG_DST, destination + part.destination_offset);
        part.step.execute(part.stream);
        part.stream.wait();
      } catch (...) {
        failures_[index] = std::current_exception();  // Exceptions must not leave a thread.
      }
    };
    if (claim_pool_) {
      claim_pool_->run(count, run_part);
    } else {
      std::atomic<int> next{0};
#pragma omp parallel num_threads(loop_team(count, threads_))
      {
        for (int index = next++; index < count; index = next++) run_part(index);
      }
    }
    for (std::exception_ptr& failure : failures_) {
      if (failure) std::rethrow_exception(std::exchange(failure, nullptr));
    }
  }

  OutputSpec spec_;
  bool empty_ = false;
  bool has_bias_ = false;
  int sum_input_ = -1;
  // oneDNN's swish post-op cost EfficientNet-B0 ~1.5 ms more than this separate pass.
  bool swish_ = false;
  int threads_ = 1;
  ClaimPool* claim_pool_ = nullptr;
  int64_t destination_floats_ = 0;
  DnnlStep step_;
  std::vector<ChannelPart> parts_;
  std::optional<TapSplit> taps_;
  std::optional<OwnWinograd> own_winograd_;
  std::vector<std::exception_ptr> failures_;  ///< One per part.
  std::string implementation_;
  LayoutReorder source_reorder_, weights_reorder_, output_reorder_, sum_reorder_;
  std::shared_ptr<Buffer> packed_weights_;
  // Bytes of the staged input, run-time weights and output (staging_buffer); 0: none staged.
  std::size_t source_bytes_ = 0, weights_bytes_ = 0, output_bytes_ = 0;
};

// cleave's own Winograd kernel for the Winograd family where oneDNN has none (below AVX-512):
// 3x3 stride-1 convolutions of constant weights, batch any, with a fused Relu, Clip, Swish
// (applied after, as for every kernel) or sum, of at least kMinWinogradFlops: below that the
// transforms cost more than the products save (128 to 32 channels at 7x7 ran 1.2x the direct
// kernel at 2 threads).
constexpr double kMinWinogradFlops = 8e6;

std::optional<OwnWinograd> own_winograd_for(const KernelContext& context, const ConvProblem& p,
                                            const float* weights) {
  if (context.convolution_family != ConvolutionFamily::kWinograd || !winograd_shape(p) ||
      !context.constant[1] || !own_winograd_available() || p.output_shape.size() != 4 ||
      !winograd_pays(p.output_shape[2], p.output_shape[3], p.channels_in, p.channels_out,
                     WinogradRun{context.threads, /*own_kernel=*/true}) ||
      winograd_over_budget(context.graph, context.node_id, context.threads)) {
    return std::nullopt;
  }
  const double flops =
      2.0 * static_cast<double>(volume(p.output_shape)) * static_cast<double>(p.channels_in) * 9.0;
  if (flops < kMinWinogradFlops) return std::nullopt;
  WinogradEpilogue epilogue;
  epilogue.accumulate = context.node.int_attribute("sum_input", -1) >= 0;
  const std::string activation = context.node.string_attribute("activation", "");
  if (activation == "Relu") {
    epilogue.low = 0.0f;
  } else if (activation == "Clip") {
    epilogue.low =
        context.node.float_attribute("activation_min", std::numeric_limits<float>::lowest());
    epilogue.high =
        context.node.float_attribute("activation_max", std::numeric_limits<float>::max());
  } else if (!activation.empty() && activation != "Swish") {
    return std::nullopt;  // HardSwish stays with oneDNN, which fuses it.
  }
  const std::vector<int64_t>& in = context.input(0).shape();
  WinogradProblem problem;
  problem.batch = p.batch;
  problem.channels_in = p.channels_in;
  problem.channels_out = p.channels_out;
  problem.height = in[2];
  problem.width = in[3];
  problem.out_height = p.output_shape[2];
  problem.out_width = p.output_shape[3];
  problem.pad_top = p.pads_begin[0];
  problem.pad_left = p.pads_begin[1];
  return OwnWinograd(problem, weights, epilogue);
}

// The primitive computing on channels-last input and output, unless only gemm or the reference
// kernel does. brgconv on nhwc beat the blocked kernels by 9% on Inception-v3, and its
// depthwise convolutions with the separate swish by 10% on EfficientNet-B0; the blocked ones won
// on ResNet-50 and MobileNet-V2, so the executor's caller measures (choose_layouts). Where the
// Winograd budget sends a 3x3 convolution direct, brgconv on nhwc, reorders from and to channel
// blocks included, ran retinanet's in 0.56-0.64 of the blocked direct kernel's time at 5x5 and
// 3x3, 0.80-0.90 at 10x10 and 0.95-1.04 at 20x20 and 40x40 on Zen 5 (256 or 512 input channels,
// 36 to 819 outputs; docs/results/heldout-speed.md): the blocked kernel's short rows on small
// maps leave its registers idle.
template <typename Primitive>
std::optional<typename Primitive::primitive_desc> channels_last_descriptor(
    const KernelContext& context, const ConvProblem& p, bool has_bias,
    const dnnl::primitive_attr& attr) {
  const memory::desc input_nhwc(to_dnnl_dims(context.input(0).shape()), memory::data_type::f32,
                                memory::format_tag::nhwc);
  const memory::desc output_nhwc(to_dnnl_dims(p.output_shape), memory::data_type::f32,
                                 memory::format_tag::nhwc);
  try {
    auto descriptor =
        make_descriptor<Primitive>(p, input_nhwc, output_nhwc, has_bias, attr, context.engine);
    if (!is_slow(implementation_name(descriptor))) return descriptor;
  } catch (const dnnl::error&) {
    // No channels-last kernel for this convolution.
  }
  return std::nullopt;
}

// oneDNN's brgemm convolutions (AVX-512 and up): where a blocked input would be reordered to
// reach one, only these were measured faster than the blocked direct kernel.
bool is_brgemm(const std::string& implementation) {
  return implementation.rfind("brg", 0) == 0;
}

// The primitive for a convolution whose input comes in layout `given`: see the comments inside
// for the order of the choices.
template <typename Primitive>
typename Primitive::primitive_desc choose_descriptor(const KernelContext& context,
                                                     const ConvProblem& p, bool has_bias,
                                                     const dnnl::primitive_attr& attr) {
  const Tensor& x = context.input(0);
  memory::desc given = desc_of(x);
  memory::desc any_destination = any_desc(p.output_shape);
  // Take the input as it comes when a fast kernel reads it so; otherwise let oneDNN pick the
  // layout and reorder into it. The gemm path on nchw is ~1.5x slower for 3x3 convs, and for
  // pointwise ones with channel counts off the 16-grid (ShuffleNet's 58/116/232) it ran the
  // whole model 1.6x slower than reordering into blocks (8.2 vs 5.0 ms).
  typename Primitive::primitive_desc descriptor;
  bool found = false;
  bool winograd = false;
  const bool winograd_candidate =
      context.convolution_family == ConvolutionFamily::kWinograd && winograd_shape(p);
  // On a map too small for Winograd to pay (winograd_pays, for the kernel this ISA has, on
  // this kernel's team) the blocked direct kernel runs it, on the layout it comes in: oneDNN's
  // brgemm on nhwc was no faster there (0.86-1.17x at 1 thread on 2x2 to 5x5 maps, before any
  // reorder to nhwc and back).
  const bool small_map =
      winograd_candidate && !winograd_pays(p.output_shape[2], p.output_shape[3], p.channels_in,
                                           p.channels_out, winograd_run(context.threads));
  const bool over_budget = winograd_candidate && !small_map &&
                           winograd_over_budget(context.graph, context.node_id, context.threads);
  if (winograd_candidate && !small_map && !over_budget) {
    // Its kernel reads channel blocks; a plain input is reordered into them. Post-ops it
    // cannot fuse (or channel counts it does not cover) leave the direct kernels below.
    for (const memory::desc& source : {given, any_desc(x.shape())}) {
      try {
        descriptor = make_descriptor<Primitive>(p, source, any_destination, has_bias, attr,
                                                context.engine, /*winograd=*/true);
        winograd = found = true;
        break;
      } catch (const dnnl::error&) {
        // Not for this source layout.
      }
    }
  }
  if (!winograd) {
    try {
      descriptor =
          make_descriptor<Primitive>(p, given, any_destination, has_bias, attr, context.engine);
      found = true;
    } catch (const dnnl::error&) {
      // No implementation reads this layout; the free choice below reorders into one.
    }
  }
  // A 3x3 convolution the Winograd budget sends direct computes channels-last whatever layout
  // its input comes in, where that is oneDNN's brgemm kernel (winograd_budget.h).
  const bool plain_input = given == plain_desc(x.shape());
  // (An output that must be plain is reordered from nhwc as it would be from blocks.)
  if (!winograd && x.rank() == 4 &&
      (over_budget || (context.convolution_family == ConvolutionFamily::kChannelsLast &&
                       context.blocked_outputs_allowed && plain_input))) {
    if (auto channels_last = channels_last_descriptor<Primitive>(context, p, has_bias, attr)) {
      if (!over_budget || is_brgemm(implementation_name(*channels_last))) {
        descriptor = *channels_last;
        found = true;
      }
    }
  }
  if (!found || is_slow(implementation_name(descriptor))) {
    // With a free destination oneDNN 2.6 falls back to its reference depthwise kernel for a
    // blocked source; asking for the source's layout on the output finds jit_dw (EfficientNet's
    // 112x112 depthwise convolutions: 0.94 ms instead of 1.7 ms with brdgmm_dw after a reorder).
    std::optional<memory::desc> same = same_layout_for(given, p.output_shape);
    if (same && *same != plain_desc(p.output_shape)) {
      try {
        auto matched = make_descriptor<Primitive>(p, given, *same, has_bias, attr, context.engine);
        if (!is_slow(implementation_name(matched))) {
          descriptor = matched;
          found = true;
        }
      } catch (const dnnl::error&) {
        // No kernel writes that layout either.
      }
    }
  }
  if (!found || is_slow(implementation_name(descriptor))) {
    auto free_choice = make_descriptor<Primitive>(p, any_desc(x.shape()), any_destination, has_bias,
                                                  attr, context.engine);
    // gemm before ref: oneDNN's reference convolution is hundreds of times slower (a dilated
    // ResNet-50 did not finish in 300 s on AVX2), and gemm covers every dilation and group.
    if (!found || implementation_rank(implementation_name(free_choice)) >
                      implementation_rank(implementation_name(descriptor))) {
      descriptor = free_choice;
    }
  }
  if (implementation_rank(implementation_name(descriptor)) < 2 && x.rank() == 4 &&
      context.blocked_outputs_allowed) {
    // Some grouped convolutions that no blocked kernel takes have a channels-last jit kernel
    // (AVX-512, 3 channels per group: 0.42 ms against gemm's 1.1 ms).
    const memory::desc input_nhwc(to_dnnl_dims(x.shape()), memory::data_type::f32,
                                  memory::format_tag::nhwc);
    const memory::desc output_nhwc(to_dnnl_dims(p.output_shape), memory::data_type::f32,
                                   memory::format_tag::nhwc);
    try {
      auto channels_last =
          make_descriptor<Primitive>(p, input_nhwc, output_nhwc, has_bias, attr, context.engine);
      if (implementation_rank(implementation_name(channels_last)) >
          implementation_rank(implementation_name(descriptor))) {
        descriptor = channels_last;
      }
    } catch (const dnnl::error&) {
      // No channels-last kernel either.
    }
  }
  return descriptor;
}

template <typename Primitive>
std::unique_ptr<Kernel> ConvolutionKernel::create(const KernelContext& context,
                                                  const ConvProblem& p,
                                                  const float* constant_weights,
                                                  const std::string& note) {
  auto kernel = std::make_unique<ConvolutionKernel>();
  kernel->spec_.shape = p.output_shape;
  const Tensor& x = context.input(0);
  int64_t bias_channels = context.has_input(2) ? context.input(2).element_count() : 0;
  if (context.has_input(2) && bias_channels != p.channels_out) {
    throw Error(fmt::format("{}: bias {} should have {} values", context.where(),
                            context.input(2).describe(), p.channels_out));
  }
  kernel->has_bias_ = context.has_input(2);
  int64_t sum_input = context.node.int_attribute("sum_input", -1);
  if (sum_input >= 0) {
    if (sum_input < 3 || !context.has_input(sum_input) ||
        context.input(sum_input).shape() != p.output_shape) {
      throw Error(
          fmt::format("{}: sum_input {} must name an input (after the bias) of the output's "
                      "shape [{}]",
                      context.where(), sum_input, fmt::join(p.output_shape, ",")));
    }
    kernel->sum_input_ = static_cast<int>(sum_input);
  }
  if (x.element_count() == 0 || volume(p.output_shape) == 0) {
    kernel->empty_ = true;
    return kernel;
  }

  dnnl::primitive_attr attr = kernel_attr();
  attr.set_post_ops(fused_post_ops(context, sum_input >= 0));
  const memory::desc given = desc_of(x);
  typename Primitive::primitive_desc descriptor;
  if constexpr (std::is_same_v<Primitive, dnnl::convolution_forward>) {
    kernel->own_winograd_ = own_winograd_for(
        context, p, constant_weights ? constant_weights : context.input(1).template data<float>());
  }
  if (kernel->own_winograd_) {
    kernel->implementation_ = OwnWinograd::kImplementation + note;
  } else {
    descriptor = choose_descriptor<Primitive>(context, p, kernel->has_bias_, attr);
    kernel->implementation_ = implementation_name(descriptor) + note;
  }
  if constexpr (std::is_same_v<Primitive, dnnl::convolution_forward>) {
    if (kernel->own_winograd_) {
      // Neither split applies to it.
    } else if (is_slow(kernel->implementation_) && kernel->sum_input_ < 0 && context.constant[1]) {
      kernel->taps_ = split_dilated_taps(
          context.engine, p, given,
          constant_weights ? constant_weights : context.input(1).template data<float>(),
          kernel->has_bias_, fused_post_ops(context, false));
    }
    // Claimed parts add to their own runs of the destination, so a fused sum splits too.
    if ((kernel->sum_input_ < 0 || context.claim_pool) && !kernel->taps_ &&
        !kernel->own_winograd_) {
      kernel->parts_ = split_channel_blocks(
          context, p, descriptor, attr, kernel->has_bias_,
          constant_weights ? constant_weights : context.input(1).template data<float>());
    }
  }
  if (kernel->taps_) {
    kernel->implementation_ = kernel->taps_->implementation() + note;
  } else if (!kernel->parts_.empty()) {
    kernel->failures_.resize(kernel->parts_.size());
    kernel->implementation_ +=
        context.claim_pool ? fmt::format(" in {} parts claimed by {} threads",
                                         kernel->parts_.size(), context.claim_pool->threads())
                           : fmt::format(" in {} channel parts", kernel->parts_.size());
  }
  // A split convolution runs only its parts' or taps' primitives.
  if (kernel->parts_.empty() && !kernel->taps_ && !kernel->own_winograd_) {
    kernel->step_ = DnnlStep(Primitive(descriptor), descriptor, context.engine);
    kernel->step_.declare(DNNL_ARG_SRC, descriptor.src_desc());
    kernel->step_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    if (kernel->has_bias_) kernel->step_.declare(DNNL_ARG_BIAS, descriptor.bias_desc());
    kernel->step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
  }

  const memory::desc source = kernel->own_winograd_ ? kernel->own_winograd_->source()
                              : kernel->taps_       ? kernel->taps_->source()
                                                    : descriptor.src_desc();
  if (source != given) {
    kernel->source_reorder_ = LayoutReorder(given, source, context.engine);
    kernel->source_bytes_ = source.get_size();
  }
  if (!kernel->parts_.empty() || kernel->taps_ || kernel->own_winograd_) {
    // Each part or tap packed its own slice of the weights; Winograd transformed them.
  } else if (context.constant[1]) {
    kernel->packed_weights_ = pack_constant_input(
        context, 1,
        constant_weights ? static_cast<const void*>(constant_weights) : context.input(1).raw(),
        p.user_weights, descriptor.weights_desc());
  } else if (p.user_weights != descriptor.weights_desc()) {
    kernel->weights_reorder_ =
        LayoutReorder(p.user_weights, descriptor.weights_desc(), context.engine);
    kernel->weights_bytes_ = descriptor.weights_desc().get_size();
  }
  const memory::desc destination = kernel->own_winograd_ ? kernel->own_winograd_->destination()
                                   : kernel->taps_       ? kernel->taps_->destination()
                                                         : descriptor.dst_desc();
  kernel->swish_ = context.node.string_attribute("activation", "") == "Swish";
  kernel->threads_ = context.threads;
  kernel->claim_pool_ = context.claim_pool;
  kernel->destination_floats_ = static_cast<int64_t>(destination.get_size() / sizeof(float));
  std::optional<memory::desc> layout = recorded_layout(destination, p.output_shape);
  if (layout && !context.blocked_outputs_allowed) {
    // Computing in the blocked layout and reordering beats oneDNN's plain-layout kernels.
    kernel->output_bytes_ = destination.get_size();
    kernel->output_reorder_ =
        LayoutReorder(destination, plain_desc(p.output_shape), context.engine);
    layout.reset();
  }
  kernel->spec_.layout = layout;
  if (kernel->sum_input_ >= 0) {
    kernel->sum_reorder_ =
        LayoutReorder(desc_of(context.input(sum_input)), destination, context.engine);
  }
  return kernel;
}

// A grouped convolution left to gemm or ref is tried with fewer, larger groups of block-diagonal
// weights (conv_fallback.h), kept when that reaches a jit kernel: on AVX2, 32 groups of 4
// channels at 56x56 took 1.14 ms as 16 groups of 8 against gemm's 1.72 ms. So are groups of
// fewer than 4 channels that oneDNN's AVX-512 jit kernel does take, where a merge of at most 4
// fills a block (2 channels: 4 groups make 8): 128 groups of 2 at 28x28 (4 layers) took 6.2 ms
// there, merged 1.6 ms (docs/results/ops_vs_ort.md), for four times the arithmetic.
std::unique_ptr<Kernel> create_conv(const KernelContext& context) {
  const ConvProblem p = conv_problem(context);
  auto kernel = ConvolutionKernel::create<dnnl::convolution_forward>(context, p);
  const int64_t in_per_group = p.channels_in / p.groups, out_per_group = p.channels_out / p.groups;
  const bool tiny_groups = p.groups > 1 && in_per_group < 4 && out_per_group < 4;
  if ((implementation_rank(kernel->implementation()) == 2 && !tiny_groups) ||
      !context.constant[1] || p.user_weights.dims().size() < 3) {
    return kernel;
  }
  int64_t kernel_volume = 1;
  for (int64_t k : p.kernel) kernel_volume *= k;
  for (GroupMerge merge : group_merges(p.groups, in_per_group, out_per_group)) {
    ConvProblem merged = p;
    merged.groups = p.groups / merge.factor;
    std::vector<int64_t> dims = {p.channels_out, in_per_group * merge.factor};
    if (merged.groups > 1) dims = {merged.groups, out_per_group * merge.factor, dims[1]};
    dims.insert(dims.end(), p.kernel.begin(), p.kernel.end());
    merged.user_weights = plain_desc(dims);
    std::vector<float> weights =
        merged_group_weights(context.input(1).data<float>(), p.groups, out_per_group, in_per_group,
                             kernel_volume, merge);
    auto candidate = ConvolutionKernel::create<dnnl::convolution_forward>(
        context, merged, weights.data(), fmt::format(" (groups merged by {})", merge.factor));
    if (implementation_rank(candidate->implementation()) == 2) return candidate;
  }
  return kernel;
}

std::unique_ptr<Kernel> create_conv_transpose(const KernelContext& context) {
  if (context.node.int_attribute("sum_input", -1) >= 0) {
    throw UnsupportedError(fmt::format("{}: sum_input is only supported on Conv", context.where()));
  }
  return ConvolutionKernel::create<dnnl::deconvolution_forward>(context,
                                                                conv_transpose_problem(context));
}

}  // namespace

void register_conv_kernels(KernelRegistry& registry) {
  KernelInfo conv;
  conv.op_type = "Conv";
  // The data input and a fused sum input (after the bias) may come blocked.
  conv.accepts_blocked = [](std::size_t input) { return input == 0 || input >= 3; };
  conv.create = guarded(create_conv);
  registry.add(conv);

  KernelInfo transpose;
  transpose.op_type = "ConvTranspose";
  transpose.accepts_blocked = first_input;
  transpose.create = guarded(create_conv_transpose);
  registry.add(transpose);
}

}  // namespace cleave
