// Elementwise kernel machinery: broadcasting plans, oneDNN eltwise/binary kernels, registration.
#include "runtime/kernels/elementwise.h"

#include <fmt/format.h>

#include <string_view>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/channel_loops.h"

namespace cleave {

namespace elementwise {

namespace {

using Tag = dnnl::memory::format_tag;

// The format tag of a oneDNN layout among those convolutions and pools produce, so that a
// broadcast operand can be laid out the same way; nullopt for anything else.
std::optional<Tag> format_tag_of(const dnnl::memory::desc& layout, std::span<const int64_t> shape) {
  std::vector<Tag> candidates;
  switch (shape.size()) {
    case 3:
      candidates = {Tag::nCw16c, Tag::nCw8c, Tag::nCw4c, Tag::nwc, Tag::ncw};
      break;
    case 4:
      candidates = {Tag::nChw16c, Tag::nChw8c, Tag::nChw4c, Tag::nhwc, Tag::nchw};
      break;
    case 5:
      candidates = {Tag::nCdhw16c, Tag::nCdhw8c, Tag::nCdhw4c, Tag::ndhwc, Tag::ncdhw};
      break;
    default:
      return std::nullopt;
  }
  const dnnl::memory::dims dims(shape.begin(), shape.end());
  for (Tag tag : candidates) {
    if (dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag) == layout) return tag;
  }
  return std::nullopt;
}

// `shape` with 1s prepended up to `rank` (how numpy aligns a lower-rank operand).
std::vector<int64_t> left_padded(std::span<const int64_t> shape, std::size_t rank) {
  std::vector<int64_t> padded(rank - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

class DnnlEltwiseKernel final : public Kernel {
 public:
  DnnlEltwiseKernel(const KernelContext& context, const Eltwise& eltwise) {
    const Tensor& x = context.input(0);
    const dnnl::memory::desc source = desc_of(x);
    const bool keep_layout = x.is_blocked() && context.blocked_outputs_allowed;
    const dnnl::memory::desc target = keep_layout ? source : plain_desc(x.shape());
    // A blocked input that must come out plain is reordered into the output first and then
    // transformed in place there.
    if (source != target) reorder_ = LayoutReorder(source, target, context.engine);
    dnnl::eltwise_forward::primitive_desc descriptor(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, eltwise.algorithm, target,
                                    eltwise.alpha, eltwise.beta),
        kernel_attr(), context.engine);
    step_ = DnnlStep(dnnl::eltwise_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, target);
    step_.declare(DNNL_ARG_DST, target);
    spec_.dtype = DataType::kFloat;
    spec_.shape = x.shape();
    if (keep_layout) spec_.layout = target;
    count_ = x.element_count();
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (count_ == 0) return;
    const void* source = inputs[0]->raw();
    void* target = outputs[0]->raw();
    if (reorder_.needed()) {
      reorder_.run(source, target, stream);
      source = target;
    }
    step_.set(DNNL_ARG_SRC, source);
    step_.set(DNNL_ARG_DST, target);
    step_.execute(stream);
  }

 private:
  OutputSpec spec_;
  LayoutReorder reorder_;
  DnnlStep step_;
  int64_t count_ = 0;
};

// x op v[c]: an operand broadcast along the channel axis only ([1, C, 1, ...], as in
// squeeze-and-excitation scales and per-channel biases) against a tensor in plain or
// channel-blocked layout. oneDNN 2.6 runs this case with its reference code when the blocks
// are 8 wide (grouped convolutions pick them), ~100x slower than this loop.
class ChannelBroadcastKernel final : public Kernel {
 public:
  ChannelBroadcastKernel(const KernelContext& context, dnnl::algorithm algorithm, std::size_t first,
                         int64_t block)
      : first_(first), block_(block), threads_(context.threads) {
    const Tensor& x = context.input(first);
    spec_.dtype = DataType::kFloat;
    spec_.shape = x.shape();
    if (x.is_blocked()) spec_.layout = x.layout();
    batch_ = x.dim(0);
    channels_ = x.dim(1);
    spatial_ = volume(std::span<const int64_t>(x.shape()).subspan(2));
    channel_blocks_ = (channels_ + block_ - 1) / block_;
    // Padding channels of a blocked tensor hold zeros and must stay zero: pad the operand
    // with the value that keeps them so (1 for a divisor, 0 otherwise).
    const float padding = algorithm == dnnl::algorithm::binary_div ? 1.0f : 0.0f;
    values_.assign(static_cast<std::size_t>(channel_blocks_ * block_), padding);
    const Tensor& operand = context.input(1 - first);
    // A blocked [1, C, 1, ...] operand (a squeeze-and-excitation scale) usually holds its values
    // in channel order already: read in place, without a reorder call per run.
    if (operand.is_blocked() && !holds_plain_bytes(*operand.layout(), operand.shape())) {
      operand_reorder_ =
          LayoutReorder(*operand.layout(), plain_desc(operand.shape()), context.engine);
      operand_plain_ = Tensor::allocate(DataType::kFloat, operand.shape());
    }
    if (block_ > 1) {
      rows_ = {batch_ * channel_blocks_, channel_blocks_, spatial_, block_};
      min_parallel_floats_ = kBlockedParallelThreshold;
    } else if (spatial_ == 1) {
      rows_ = {batch_, 1, 1, channels_};  // [N, C] against [C]: each row all the channels.
    } else {
      rows_ = {batch_ * channels_, channels_, spatial_, 1};
    }
    switch (algorithm) {
      case dnnl::algorithm::binary_add:
        op_ = ChannelOp::kAdd;
        break;
      case dnnl::algorithm::binary_mul:
        op_ = ChannelOp::kMul;
        break;
      case dnnl::algorithm::binary_sub:
        op_ = ChannelOp::kSub;
        break;
      default:
        op_ = ChannelOp::kDiv;
        break;
    }
    implementation_ = "cleave:" + vector_isa_name(vector_isa());
  }

  std::string implementation() const override { return implementation_; }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const Tensor* operand = inputs[1 - first_];
    if (operand_reorder_.needed()) {
      operand_reorder_.run(operand->raw(), operand_plain_.raw(), stream);
      stream.wait();
      operand = &operand_plain_;
    }
    std::copy_n(operand->data<float>(), channels_, values_.begin());
    // oneDNN broadcasts only the second operand, so for Sub and Div (not commutative) the
    // broadcast operand is always the second one.
    channel_op_loops(op_, inputs[first_]->data<float>(), outputs[0]->data<float>(), values_.data(),
                     rows_, threads_, min_parallel_floats_);
  }

 private:
  std::size_t first_;
  int64_t block_;
  int threads_;
  OutputSpec spec_;
  int64_t batch_ = 1, channels_ = 1, spatial_ = 1, channel_blocks_ = 1;
  ChannelOp op_ = ChannelOp::kMul;
  ChannelRows rows_;
  int64_t min_parallel_floats_ = kParallelThreshold;
  std::string implementation_;
  std::vector<float> values_;
  LayoutReorder operand_reorder_;
  Tensor operand_plain_;
};

}  // namespace

std::optional<int64_t> channel_block_of(const Tensor& tensor) {
  if (!tensor.is_blocked()) return 1;
  std::optional<Tag> tag = format_tag_of(*tensor.layout(), tensor.shape());
  if (!tag) return std::nullopt;
  switch (*tag) {
    case Tag::nCw16c:
    case Tag::nChw16c:
    case Tag::nCdhw16c:
      return 16;
    case Tag::nCw8c:
    case Tag::nChw8c:
    case Tag::nCdhw8c:
      return 8;
    case Tag::nCw4c:
    case Tag::nChw4c:
    case Tag::nCdhw4c:
      return 4;
    case Tag::ncw:
    case Tag::nchw:
    case Tag::ncdhw:
      return 1;
    default:
      return std::nullopt;
  }
}

bool is_channels_last(const Tensor& tensor) {
  if (!tensor.is_blocked()) return false;
  std::optional<Tag> tag = format_tag_of(*tensor.layout(), tensor.shape());
  return tag == Tag::nwc || tag == Tag::nhwc || tag == Tag::ndhwc;
}

namespace {

// The channel-broadcast kernel when `second` is [.., C, 1, ...] against `x` ([N, C, ...]).
std::unique_ptr<Kernel> try_channel_broadcast(const KernelContext& context,
                                              dnnl::algorithm algorithm, std::size_t first) {
  const Tensor& x = context.input(first);
  const Tensor& second = context.input(1 - first);
  if (x.rank() < 3 || x.rank() > 5) return nullptr;
  const std::vector<int64_t> operand = left_padded(second.shape(), x.rank());
  for (std::size_t axis = 0; axis < operand.size(); ++axis) {
    if (axis == 1 ? operand[axis] != x.dim(1) : operand[axis] != 1) return nullptr;
  }
  if (second.is_blocked() && second.rank() != x.rank()) return nullptr;
  std::optional<int64_t> block = channel_block_of(x);
  if (!block || (*block > 1 && !context.blocked_outputs_allowed)) return nullptr;
  return std::make_unique<ChannelBroadcastKernel>(context, algorithm, first, *block);
}

class DnnlBinaryKernel final : public Kernel {
 public:
  DnnlBinaryKernel(const KernelContext& context, dnnl::algorithm algorithm, std::size_t first,
                   std::vector<int64_t> output_shape) {
    first_ = first;
    const Tensor& src0 = context.input(first);
    const Tensor& src1 = context.input(1 - first);
    const std::size_t rank = output_shape.size();

    std::optional<Tag> tag;
    if (src0.is_blocked() && context.blocked_outputs_allowed) {
      tag = format_tag_of(*src0.layout(), output_shape);
    }
    const dnnl::memory::desc target = tag ? *src0.layout() : plain_desc(output_shape);
    const dnnl::memory::desc source0 = desc_of(src0);
    if (source0 != target) reorder0_ = LayoutReorder(source0, target, context.engine);

    const std::vector<int64_t> dims1 = left_padded(src1.shape(), std::max<std::size_t>(rank, 1));
    const dnnl::memory::dims dnnl_dims1(dims1.begin(), dims1.end());
    const dnnl::memory::desc target1 =
        tag ? dnnl::memory::desc(dnnl_dims1, dnnl::memory::data_type::f32, *tag)
            : plain_desc(dims1);
    const dnnl::memory::desc source1 = src1.is_blocked() ? *src1.layout() : plain_desc(dims1);
    if (source1 != target1) {
      reorder1_ = LayoutReorder(source1, target1, context.engine);
      packed1_ = std::make_shared<Buffer>(target1.get_size());
      if (context.constant[1 - first]) {
        // A constant operand is converted once, here, instead of at every run.
        dnnl::stream stream(context.engine);
        reorder1_.run(src1.raw(), packed1_->data(), stream);
        stream.wait();
        reorder1_ = LayoutReorder();
        constant1_packed_ = true;
      }
    }

    dnnl::binary::primitive_desc descriptor(dnnl::binary::desc(algorithm, target, target1, target),
                                            kernel_attr(), context.engine);
    implementation_ = implementation_name(descriptor);
    step_ = DnnlStep(dnnl::binary(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC_0, target);
    step_.declare(DNNL_ARG_SRC_1, target1);
    step_.declare(DNNL_ARG_DST, target);
    spec_.dtype = DataType::kFloat;
    spec_.shape = std::move(output_shape);
    if (tag) spec_.layout = target;
  }

  std::string implementation() const override { return implementation_; }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    void* target = outputs[0]->raw();
    const void* source0 = inputs[first_]->raw();
    if (reorder0_.needed()) {
      reorder0_.run(source0, target, stream);
      source0 = target;
    }
    const void* source1 = inputs[1 - first_]->raw();
    if (constant1_packed_) {
      source1 = packed1_->data();
    } else if (packed1_) {
      reorder1_.run(source1, packed1_->data(), stream);
      source1 = packed1_->data();
    }
    step_.set(DNNL_ARG_SRC_0, source0);
    step_.set(DNNL_ARG_SRC_1, source1);
    step_.set(DNNL_ARG_DST, target);
    step_.execute(stream);
  }

 private:
  std::size_t first_ = 0;
  OutputSpec spec_;
  LayoutReorder reorder0_;
  LayoutReorder reorder1_;
  std::shared_ptr<Buffer> packed1_;
  bool constant1_packed_ = false;
  DnnlStep step_;
  std::string implementation_;
};

}  // namespace

void throw_unsupported_type(const KernelContext& context, DataType type) {
  throw UnsupportedError(fmt::format("{}: element type {} is not supported by {}", context.where(),
                                     dtype_name(type), context.node.op_type));
}

std::vector<int64_t> broadcast_shape(const KernelContext& context,
                                     std::span<const std::vector<int64_t>> shapes) {
  std::size_t rank = 0;
  for (const auto& shape : shapes) rank = std::max(rank, shape.size());
  std::vector<int64_t> result(rank, 1);
  for (const auto& shape : shapes) {
    const std::size_t offset = rank - shape.size();
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const int64_t size = shape[d];
      int64_t& merged = result[offset + d];
      if (size == merged || size == 1) continue;
      if (merged == 1) {
        merged = size;
        continue;
      }
      std::vector<std::string> texts;
      for (const auto& s : shapes) texts.push_back(fmt::format("[{}]", fmt::join(s, ",")));
      throw Error(fmt::format("{}: input shapes {} do not broadcast (axis {}: {} vs {})",
                              context.where(), fmt::join(texts, " and "), offset + d, merged,
                              size));
    }
  }
  return result;
}

bool uses_legacy_broadcast(const KernelContext& context) {
  return context.opset < 7 && context.node.int_attribute("broadcast", 0) != 0;
}

std::vector<int64_t> second_operand_shape(const KernelContext& context) {
  const std::vector<int64_t>& second = context.input(1).shape();
  if (!uses_legacy_broadcast(context)) return second;
  const std::vector<int64_t>& first = context.input(0).shape();
  const auto rank = static_cast<int64_t>(first.size());
  const auto count = static_cast<int64_t>(second.size());
  const int64_t axis = context.node.int_attribute("axis", rank - count);
  auto mismatch = [&] {
    return Error(
        fmt::format("{}: with broadcast=1 and axis={}, input 1 [{}] must match input 0 [{}] "
                    "there",
                    context.where(), axis, fmt::join(second, ","), fmt::join(first, ",")));
  };
  if (axis < 0 || axis + count > rank) throw mismatch();
  std::vector<int64_t> placed(rank, 1);
  for (int64_t d = 0; d < count; ++d) {
    if (second[d] != 1 && second[d] != first[axis + d]) throw mismatch();
    placed[axis + d] = second[d];
  }
  return placed;
}

bool broadcasts_to(std::span<const int64_t> shape, std::span<const int64_t> target) {
  if (shape.size() > target.size()) return false;
  const std::size_t offset = target.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1 && shape[d] != target[offset + d]) return false;
  }
  return true;
}

BroadcastPlan plan_broadcast(std::span<const int64_t> output,
                             std::span<const std::vector<int64_t>> operands) {
  BroadcastPlan plan;
  plan.count = 1;
  for (int64_t size : output) plan.count *= size;
  const std::size_t rank = output.size();
  std::vector<std::vector<int64_t>> full_strides;
  for (const auto& shape : operands) {
    const std::vector<int64_t> padded = left_padded(shape, rank);
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (std::size_t d = rank; d-- > 0;) {
      strides[d] = padded[d] == 1 ? 0 : stride;
      stride *= padded[d];
    }
    full_strides.push_back(std::move(strides));
  }
  plan.strides.assign(operands.size(), {});
  for (std::size_t d = 0; d < rank; ++d) {
    if (output[d] == 1) continue;
    // Merge with the previous kept dim when every operand walks both as one.
    bool merge = !plan.dims.empty();
    for (std::size_t k = 0; merge && k < operands.size(); ++k) {
      merge = plan.strides[k].back() == full_strides[k][d] * output[d];
    }
    if (merge) {
      plan.dims.back() *= output[d];
      for (std::size_t k = 0; k < operands.size(); ++k) plan.strides[k].back() = full_strides[k][d];
    } else {
      plan.dims.push_back(output[d]);
      for (std::size_t k = 0; k < operands.size(); ++k)
        plan.strides[k].push_back(full_strides[k][d]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (auto& strides : plan.strides) strides.push_back(0);
  }
  return plan;
}

bool use_dnnl(const Tensor& tensor, std::span<const int64_t> output_shape, int64_t min_elements) {
  if (tensor.dtype() != DataType::kFloat) return false;
  if (tensor.is_blocked()) return true;
  int64_t count = 1;
  for (int64_t size : output_shape) count *= size;
  return count > 0 && count >= min_elements && output_shape.size() <= kDnnlMaxRank;
}

std::unique_ptr<Kernel> make_dnnl_eltwise(const KernelContext& context, const Eltwise& eltwise) {
  try {
    return std::make_unique<DnnlEltwiseKernel>(context, eltwise);
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("{}: oneDNN eltwise: {}", context.where(), e.what()));
  }
}

std::unique_ptr<Kernel> try_dnnl_binary(const KernelContext& context, dnnl::algorithm algorithm,
                                        bool commutative) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  if (a.dtype() != DataType::kFloat || b.dtype() != DataType::kFloat) return nullptr;
  const std::vector<int64_t> output = broadcast_shape(context, std::array{a.shape(), b.shape()});
  int64_t count = 1;
  for (int64_t size : output) count *= size;
  const bool blocked = a.is_blocked() || b.is_blocked();
  if (count == 0 || output.size() > kDnnlMaxRank) return nullptr;
  if (!blocked && count < kDnnlThreshold) return nullptr;
  // oneDNN broadcasts only its second operand: the first must have the output's shape.
  std::optional<std::size_t> first;
  if (a.shape() == output) first = 0;
  if (commutative && b.shape() == output && (!first || (b.is_blocked() && !a.is_blocked()))) {
    first = 1;
  }
  if (!first) return nullptr;
  const Tensor& second = context.input(1 - *first);
  if (second.is_blocked() && second.rank() != output.size()) return nullptr;
  if (algorithm == dnnl::algorithm::binary_add || algorithm == dnnl::algorithm::binary_mul ||
      algorithm == dnnl::algorithm::binary_sub || algorithm == dnnl::algorithm::binary_div) {
    if (auto kernel = try_channel_broadcast(context, algorithm, *first)) return kernel;
  }
  try {
    auto kernel = std::make_unique<DnnlBinaryKernel>(context, algorithm, *first, output);
    // oneDNN's reference code is slower than the plain loops, which need plain data.
    if (!blocked && kernel->implementation().starts_with("ref")) return nullptr;
    return kernel;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

PlainInputs::PlainInputs(const KernelContext& context) {
  reorders_.resize(context.inputs.size());
  copies_.resize(context.inputs.size());
  for (std::size_t i = 0; i < context.inputs.size(); ++i) {
    const Tensor* input = context.inputs[i];
    if (!input || !input->is_blocked()) continue;
    // The plain copy keeps the element type (u8 between int8 kernels, not only f32).
    const dnnl::memory::desc& layout = *input->layout();
    reorders_[i] = std::make_shared<LayoutReorder>(
        layout, plain_desc(input->shape(), layout.data_type()), context.engine);
    copies_[i] = Tensor::allocate(input->dtype(), input->shape());
  }
}

const std::vector<const Tensor*>& PlainInputs::convert(const std::vector<const Tensor*>& inputs,
                                                       dnnl::stream& stream) {
  converted_ = inputs;
  for (std::size_t i = 0; i < inputs.size() && i < reorders_.size(); ++i) {
    if (!reorders_[i]) continue;
    reorders_[i]->run(inputs[i]->raw(), copies_[i].raw(), stream);
    converted_[i] = &copies_[i];
  }
  return converted_;
}

}  // namespace elementwise

}  // namespace cleave
