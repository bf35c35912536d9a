// Normalizations on oneDNN: BatchNormalization (a lone inference one with constant statistics
// as a scale and shift, batch_norm_scale_shift.h), InstanceNormalization, LayerNormalization,
// LRN; MeanVarianceNormalization in plain loops.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/batch_norm_scale_shift.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

using dnnl::memory;
using Flags = dnnl::normalization_flags;

/// Values of a per-channel (or per-feature) parameter as the primitive needs them, rebuilt per
/// run when the input is not constant.
class ParameterVector {
 public:
  /// `expand` turns the input's values into the primitive's (tiling, broadcasting).
  ParameterVector(const KernelContext& context, int input, std::size_t count,
                  std::function<void(const float*, float*)> expand)
      : input_(input), expand_(std::move(expand)), values_(count) {
    constant_ = context.constant[input];
    if (constant_) expand_(context.input(input).data<float>(), values_.data());
  }
  const float* get(const std::vector<const Tensor*>& inputs) {
    if (!constant_) expand_(inputs[input_]->data<float>(), values_.data());
    return values_.data();
  }

 private:
  int input_;
  bool constant_ = false;
  std::function<void(const float*, float*)> expand_;
  std::vector<float> values_;
};

void check_float_parameter(const KernelContext& context, int input) {
  if (context.input(input).dtype() != DataType::kFloat) {
    throw UnsupportedError(
        fmt::format("{}: input {} of type {} (only float parameters are supported)",
                    context.where(), input, dtype_name(context.input(input).dtype())));
  }
}

/// A oneDNN primitive that keeps the input's layout (batch norm, LRN): blocked in, blocked out,
/// unless the consumers need plain.
class SameLayoutOutput {
 public:
  void prepare(const KernelContext& context, const memory::desc& layout,
               const std::vector<int64_t>& shape, OutputSpec& spec) {
    std::optional<memory::desc> recorded = recorded_layout(layout, shape);
    if (recorded && !context.blocked_outputs_allowed) {
      buffer_ = std::make_shared<Buffer>(layout.get_size());
      reorder_ = LayoutReorder(layout, plain_desc(shape), context.engine);
      recorded.reset();
    }
    spec.layout = recorded;
  }
  void* destination(Tensor& output) { return buffer_ ? buffer_->data() : output.raw(); }
  void finish(Tensor& output, dnnl::stream& stream) {
    if (buffer_) reorder_.run(buffer_->data(), output.raw(), stream);
  }

 private:
  std::shared_ptr<Buffer> buffer_;
  LayoutReorder reorder_;
};

class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const KernelContext& context) {
    const Tensor& x = context.input(0);
    if (context.node.int_attribute("training_mode", 0) != 0) {
      throw UnsupportedError(fmt::format("{}: training_mode=1 is not supported", context.where()));
    }
    for (std::size_t i = 1; i < context.node.outputs.size(); ++i) {
      if (output_used(context, i)) {
        throw UnsupportedError(
            fmt::format("{}: the training outputs (mean, var, saved stats) are not supported",
                        context.where()));
      }
    }
    if (context.node.int_attribute("spatial", 1) != 1) {
      throw UnsupportedError(fmt::format("{}: spatial=0 is not supported", context.where()));
    }
    if (x.rank() < 2)
      throw Error(fmt::format("{}: input {} needs a channel axis", context.where(), x.describe()));
    int64_t channels = x.dim(1);
    channels_ = channels;
    output_count_ = std::max<std::size_t>(1, context.node.outputs.size());
    for (int i = 1; i <= 4; ++i) {
      check_float_parameter(context, i);
      if (context.input(i).element_count() != channels) {
        throw Error(fmt::format("{}: input {} is {}, expected {} values (one per channel)",
                                context.where(), i, context.input(i).describe(), channels));
      }
    }
    spec_.shape = x.shape();
    if (x.element_count() == 0) {
      empty_ = true;
      return;
    }
    memory::desc data = desc_of(x);
    if (!x.is_blocked()) {
      // oneDNN's fast plain kernel wants 4-D, and only the spatial volume matters.
      data = plain_desc(std::vector<int64_t>{
          x.dim(0), channels, x.element_count() / std::max<int64_t>(1, x.dim(0) * channels), 1});
    }
    float epsilon = context.node.float_attribute("epsilon", 1e-5f);
    Flags flags = Flags::use_global_stats | Flags::use_scale | Flags::use_shift;
    // Set by the activation fusion pass (not ONNX): a Relu that followed this node.
    if (const Attribute* activation = context.node.attribute("activation")) {
      if (activation->s != "Relu") {
        throw UnsupportedError(fmt::format("{}: fused activation '{}' is not supported here",
                                           context.where(), activation->s));
      }
      flags = flags | Flags::fuse_norm_relu;
    }
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data, epsilon,
                                                 flags);
    dnnl::batch_normalization_forward::primitive_desc descriptor(desc, kernel_attr(),
                                                                 context.engine);
    step_ = DnnlStep(dnnl::batch_normalization_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, descriptor.src_desc());
    step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
    memory::desc vector = plain_desc(std::vector<int64_t>{channels});
    for (int arg : {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}) {
      step_.declare(arg, vector);
    }
    if (x.is_blocked()) output_.prepare(context, descriptor.dst_desc(), spec_.shape, spec_);
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override {
    // Unread training outputs (running or saved statistics) get buffers nothing writes.
    std::vector<OutputSpec> specs(output_count_, {DataType::kFloat, {channels_}, {}, -1});
    specs[0] = spec_;
    return specs;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_SCALE, inputs[1]->raw());
    step_.set(DNNL_ARG_SHIFT, inputs[2]->raw());
    step_.set(DNNL_ARG_MEAN, inputs[3]->raw());
    step_.set(DNNL_ARG_VARIANCE, inputs[4]->raw());
    step_.set(DNNL_ARG_DST, output_.destination(*outputs[0]));
    step_.execute(stream);
    output_.finish(*outputs[0], stream);
  }

 private:
  OutputSpec spec_;
  int64_t channels_ = 0;
  std::size_t output_count_ = 1;
  bool empty_ = false;
  DnnlStep step_;
  SameLayoutOutput output_;
};

/// Instance norm is batch norm over one image whose channels are the (image, channel) pairs,
/// with statistics computed on the fly.
class InstanceNormKernel : public Kernel {
 public:
  explicit InstanceNormKernel(const KernelContext& context) {
    const Tensor& x = context.input(0);
    if (x.rank() < 3) {
      throw Error(
          fmt::format("{}: input {} should be N x C x D1 ...", context.where(), x.describe()));
    }
    int64_t batch = x.dim(0), channels = x.dim(1);
    for (int i = 1; i <= 2; ++i) {
      check_float_parameter(context, i);
      if (context.input(i).element_count() != channels) {
        throw Error(fmt::format("{}: input {} is {}, expected {} values", context.where(), i,
                                context.input(i).describe(), channels));
      }
    }
    spec_.shape = x.shape();
    if (x.element_count() == 0) {
      empty_ = true;
      return;
    }
    auto tile = [batch, channels](const float* from, float* to) {
      for (int64_t n = 0; n < batch; ++n) std::copy(from, from + channels, to + n * channels);
    };
    auto count = static_cast<std::size_t>(batch * channels);
    scale_.emplace(context, 1, count, tile);
    shift_.emplace(context, 2, count, tile);
    memory::desc data = plain_desc(
        std::vector<int64_t>{1, batch * channels, 1, x.element_count() / (batch * channels)});
    float epsilon = context.node.float_attribute("epsilon", 1e-5f);
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data, epsilon,
                                                 Flags::use_scale | Flags::use_shift);
    dnnl::batch_normalization_forward::primitive_desc descriptor(desc, kernel_attr(),
                                                                 context.engine);
    step_ = DnnlStep(dnnl::batch_normalization_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, data);
    step_.declare(DNNL_ARG_DST, data);
    memory::desc vector = plain_desc(std::vector<int64_t>{batch * channels});
    step_.declare(DNNL_ARG_SCALE, vector);
    step_.declare(DNNL_ARG_SHIFT, vector);
    // Statistics are outputs of the primitive even in inference; they land in kernel buffers.
    step_.declare(DNNL_ARG_MEAN, vector);
    step_.declare(DNNL_ARG_VARIANCE, vector);
    mean_.resize(count);
    variance_.resize(count);
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_DST, outputs[0]->raw());
    step_.set(DNNL_ARG_SCALE, scale_->get(inputs));
    step_.set(DNNL_ARG_SHIFT, shift_->get(inputs));
    step_.set(DNNL_ARG_MEAN, mean_.data());
    step_.set(DNNL_ARG_VARIANCE, variance_.data());
    step_.execute(stream);
  }

 private:
  OutputSpec spec_;
  bool empty_ = false;
  DnnlStep step_;
  std::optional<ParameterVector> scale_, shift_;
  std::vector<float> mean_, variance_;
};

/// Copies `from` (shape `from_shape`, unidirectionally broadcastable) into every element of
/// a dense tensor of shape `to_shape`.
void broadcast_into(const float* from, const std::vector<int64_t>& from_shape, float* to,
                    const std::vector<int64_t>& to_shape) {
  std::size_t rank = to_shape.size();
  std::vector<int64_t> padded(rank - from_shape.size(), 1);
  padded.insert(padded.end(), from_shape.begin(), from_shape.end());
  std::vector<int64_t> from_strides(rank, 0);
  int64_t stride = 1;
  for (std::size_t i = rank; i-- > 0;) {
    from_strides[i] = padded[i] == 1 ? 0 : stride;
    stride *= padded[i];
  }
  int64_t count = volume(to_shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (std::size_t a = 0; a < rank; ++a) offset += index[a] * from_strides[a];
    to[i] = from[offset];
    for (std::size_t a = rank; a-- > 0;) {
      if (++index[a] < to_shape[a]) break;
      index[a] = 0;
    }
  }
}

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const KernelContext& context) {
    const Tensor& x = context.input(0);
    auto rank = static_cast<int64_t>(x.rank());
    int64_t axis = normalized_axis(context, context.node.int_attribute("axis", -1), rank);
    std::vector<int64_t> normalized(x.shape().begin() + axis, x.shape().end());
    outer_ = volume(std::span<const int64_t>(x.shape()).first(axis));
    inner_ = volume(normalized);
    epsilon_ = context.node.float_attribute("epsilon", 1e-5f);
    auto expand_parameter = [&](int input) {
      check_float_parameter(context, input);
      std::vector<int64_t> shape = context.input(input).shape();
      bool fits = shape.size() <= normalized.size();
      for (std::size_t i = 0; fits && i < shape.size(); ++i) {
        int64_t target = normalized[normalized.size() - shape.size() + i];
        fits = shape[i] == 1 || shape[i] == target;
      }
      if (!fits) {
        throw Error(fmt::format("{}: input {} {} does not broadcast to the normalized shape [{}]",
                                context.where(), input, context.input(input).describe(),
                                fmt::join(normalized, ",")));
      }
      return ParameterVector(context, input, static_cast<std::size_t>(inner_),
                             [shape, normalized](const float* from, float* to) {
                               broadcast_into(from, shape, to, normalized);
                             });
    };
    scale_.emplace(expand_parameter(1));
    if (context.has_input(2)) shift_.emplace(expand_parameter(2));

    std::vector<int64_t> statistics_shape = x.shape();
    for (int64_t i = axis; i < rank; ++i) statistics_shape[i] = 1;
    spec_.resize(1);
    spec_[0].shape = x.shape();
    std::size_t outputs = context.node.outputs.size();
    with_statistics_ = output_used(context, 1) || output_used(context, 2);
    if (outputs > 1) spec_.resize(outputs);
    for (std::size_t i = 1; i < spec_.size(); ++i) spec_[i].shape = statistics_shape;
    if (outer_ == 0 || inner_ == 0) {
      empty_ = true;
      return;
    }
    memory::desc data = plain_desc(std::vector<int64_t>{outer_, inner_});
    Flags flags = Flags::use_scale;
    if (shift_) flags = flags | Flags::use_shift;
    auto prop =
        with_statistics_ ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::layer_normalization_forward::desc desc(prop, data, epsilon_, flags);
    dnnl::layer_normalization_forward::primitive_desc descriptor(desc, kernel_attr(),
                                                                 context.engine);
    step_ = DnnlStep(dnnl::layer_normalization_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, data);
    step_.declare(DNNL_ARG_DST, data);
    memory::desc features = plain_desc(std::vector<int64_t>{inner_});
    step_.declare(DNNL_ARG_SCALE, features);
    if (shift_) step_.declare(DNNL_ARG_SHIFT, features);
    if (with_statistics_) {
      step_.declare(DNNL_ARG_MEAN, descriptor.mean_desc());
      step_.declare(DNNL_ARG_VARIANCE, descriptor.variance_desc());
      mean_.resize(outer_);
      variance_.resize(outer_);
    }
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override { return spec_; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_DST, outputs[0]->raw());
    step_.set(DNNL_ARG_SCALE, scale_->get(inputs));
    if (shift_) step_.set(DNNL_ARG_SHIFT, shift_->get(inputs));
    if (with_statistics_) {
      step_.set(DNNL_ARG_MEAN, mean_.data());
      step_.set(DNNL_ARG_VARIANCE, variance_.data());
    }
    step_.execute(stream);
    if (!with_statistics_) return;
    stream.wait();
    if (outputs.size() > 1 && outputs[1])
      std::copy(mean_.begin(), mean_.end(), outputs[1]->data<float>());
    if (outputs.size() > 2 && outputs[2]) {
      float* inverse = outputs[2]->data<float>();
      for (int64_t i = 0; i < outer_; ++i) inverse[i] = 1.0f / std::sqrt(variance_[i] + epsilon_);
    }
  }

 private:
  std::vector<OutputSpec> spec_;
  bool empty_ = false;
  bool with_statistics_ = false;
  int64_t outer_ = 0, inner_ = 0;
  float epsilon_ = 1e-5f;
  DnnlStep step_;
  std::optional<ParameterVector> scale_, shift_;
  std::vector<float> mean_, variance_;
};

class LrnKernel : public Kernel {
 public:
  explicit LrnKernel(const KernelContext& context) {
    const Tensor& x = context.input(0);
    if (x.rank() < 3 || x.rank() > 5) {
      throw UnsupportedError(
          fmt::format("{}: LRN input {} should have rank 3 to 5", context.where(), x.describe()));
    }
    int64_t size = context.node.int_attribute("size", 0);
    if (size < 1)
      throw Error(fmt::format("{}: attribute 'size' must be a positive int", context.where()));
    spec_.shape = x.shape();
    if (x.element_count() == 0) {
      empty_ = true;
      return;
    }
    float alpha = context.node.float_attribute("alpha", 1e-4f);
    float beta = context.node.float_attribute("beta", 0.75f);
    float bias = context.node.float_attribute("bias", 1.0f);
    memory::desc data = desc_of(x);
    dnnl::lrn_forward::desc desc(dnnl::prop_kind::forward_inference,
                                 dnnl::algorithm::lrn_across_channels, data, size, alpha, beta,
                                 bias);
    dnnl::lrn_forward::primitive_desc descriptor(desc, kernel_attr(), context.engine);
    step_ = DnnlStep(dnnl::lrn_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, descriptor.src_desc());
    step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
    output_.prepare(context, descriptor.dst_desc(), spec_.shape, spec_);
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_DST, output_.destination(*outputs[0]));
    step_.execute(stream);
    output_.finish(*outputs[0], stream);
  }

 private:
  OutputSpec spec_;
  bool empty_ = false;
  DnnlStep step_;
  SameLayoutOutput output_;
};

template <typename K>
std::unique_ptr<Kernel> make(const KernelContext& context) {
  return std::make_unique<K>(context);
}

// training_mode=1: normalizes with the batch's own statistics (population variance over every
// axis but 1) and returns the running statistics moved toward them by 1 - momentum.
std::unique_ptr<Kernel> create_batch_norm_training(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.is_blocked() || x.rank() < 2 || x.dtype() != DataType::kFloat) {
    throw UnsupportedError(
        fmt::format("{}: training_mode=1 supports plain f32 inputs [N, C, ...], got {}",
                    context.where(), x.describe()));
  }
  for (std::size_t i = 1; i < 5; ++i) {
    if (context.input(i).element_count() != x.dim(1) || context.input(i).dtype() != x.dtype()) {
      throw Error(fmt::format("{}: input {} should hold {} {} values, is {}", context.where(), i,
                              x.dim(1), dtype_name(x.dtype()), context.input(i).describe()));
    }
  }
  int64_t batch = x.dim(0), channels = x.dim(1);
  int64_t inner = x.element_count() / std::max<int64_t>(1, batch * channels);
  auto epsilon = static_cast<double>(context.node.float_attribute("epsilon", 1e-5f));
  auto momentum = static_cast<double>(context.node.float_attribute("momentum", 0.9f));
  std::vector<OutputSpec> specs = {OutputSpec{x.dtype(), x.shape(), std::nullopt, -1}};
  for (std::size_t i = 1; i < context.node.outputs.size() && i < 3; ++i) {
    specs.push_back(OutputSpec{x.dtype(), {channels}, std::nullopt, -1});
  }
  return shape::make_kernel(
      context, specs,
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        const float* in = inputs[0]->data<float>();
        const float* scale = inputs[1]->data<float>();
        const float* bias = inputs[2]->data<float>();
        float* out = outputs[0]->data<float>();
        for (int64_t c = 0; c < channels; ++c) {
          double sum = 0, squares = 0;
          for (int64_t n = 0; n < batch; ++n) {
            const float* plane = in + (n * channels + c) * inner;
            for (int64_t i = 0; i < inner; ++i) {
              sum += plane[i];
              squares += static_cast<double>(plane[i]) * plane[i];
            }
          }
          double count = static_cast<double>(std::max<int64_t>(1, batch * inner));
          double mean = sum / count, variance = std::max(0.0, squares / count - mean * mean);
          double factor = scale[c] / std::sqrt(variance + epsilon);
          for (int64_t n = 0; n < batch; ++n) {
            const float* plane = in + (n * channels + c) * inner;
            float* target = out + (n * channels + c) * inner;
            for (int64_t i = 0; i < inner; ++i) {
              target[i] = static_cast<float>((plane[i] - mean) * factor + bias[c]);
            }
          }
          const double running[2] = {mean, variance};
          for (std::size_t k = 0; k < 2; ++k) {
            if (outputs.size() <= k + 1 || !outputs[k + 1]) continue;
            outputs[k + 1]->data<float>()[c] = static_cast<float>(
                inputs[3 + k]->data<float>()[c] * momentum + running[k] * (1 - momentum));
          }
        }
      });
}

// (x - mean) / (sqrt(E[x²] - mean²) + 1e-9) over `axes`, as ONNX's function body computes it.
std::unique_ptr<Kernel> create_mean_variance(const KernelContext& context) {
  const Tensor& x = context.input(0);
  auto rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes = context.node.ints_attribute("axes");
  if (context.node.attribute("axes") == nullptr) axes = {0, 2, 3};
  axes = shape::normalize_axes(context, axes, rank);
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (int64_t axis : axes) reduced[axis] = true;
  // Each element's group: its index with the reduced axes dropped, in row-major order.
  std::vector<int64_t> group(static_cast<std::size_t>(x.element_count()));
  std::vector<int64_t> index(static_cast<std::size_t>(rank), 0);
  int64_t groups = 1;
  for (int64_t d = 0; d < rank; ++d) groups *= reduced[d] ? 1 : x.dim(d);
  for (std::size_t i = 0; i < group.size(); ++i) {
    int64_t key = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[d]) key = key * x.dim(d) + index[d];
    }
    group[i] = key;
    for (int64_t d = rank; d-- > 0;) {
      if (++index[d] < x.dim(d)) break;
      index[d] = 0;
    }
  }
  return shape::make_kernel(
      context, {OutputSpec{x.dtype(), x.shape(), std::nullopt, -1}},
      [group, groups](const std::vector<const Tensor*>& inputs,
                      const std::vector<Tensor*>& outputs) {
        const float* in = inputs[0]->data<float>();
        float* out = outputs[0]->data<float>();
        std::vector<double> sum(groups, 0.0), squares(groups, 0.0), count(groups, 0.0);
        for (std::size_t i = 0; i < group.size(); ++i) {
          sum[group[i]] += in[i];
          squares[group[i]] += static_cast<double>(in[i]) * in[i];
          count[group[i]] += 1;
        }
        for (int64_t g = 0; g < groups; ++g) {
          double mean = sum[g] / count[g];
          sum[g] = mean;
          squares[g] = std::sqrt(std::max(0.0, squares[g] / count[g] - mean * mean)) + 1e-9;
        }
        for (std::size_t i = 0; i < group.size(); ++i) {
          out[i] = static_cast<float>((in[i] - sum[group[i]]) / squares[group[i]]);
        }
      });
}

}  // namespace

void register_norm_kernels(KernelRegistry& registry) {
  KernelInfo batch_norm;
  batch_norm.op_type = "BatchNormalization";
  batch_norm.accepts_blocked = first_input;
  batch_norm.create = guarded([](const KernelContext& context) -> std::unique_ptr<Kernel> {
    if (context.node.int_attribute("training_mode", 0) != 0)
      return create_batch_norm_training(context);
    // Constant statistics (a BatchNormalization no Conv could absorb, such as DenseNet's
    // pre-activation ones): one multiply and add per element, as ONNX Runtime runs them.
    if (std::unique_ptr<Kernel> kernel = try_scale_shift_batch_norm(context)) return kernel;
    return make<BatchNormKernel>(context);
  });
  registry.add(batch_norm);

  KernelInfo instance_norm;
  instance_norm.op_type = "InstanceNormalization";
  instance_norm.create = guarded(make<InstanceNormKernel>);
  registry.add(instance_norm);

  // ai.onnx has it since opset 17; older exports used the same op and semantics earlier.
  KernelInfo layer_norm;
  layer_norm.op_type = "LayerNormalization";
  layer_norm.create = guarded(make<LayerNormKernel>);
  registry.add(layer_norm);

  KernelInfo lrn;
  lrn.op_type = "LRN";
  lrn.accepts_blocked = first_input;
  lrn.create = guarded(make<LrnKernel>);
  registry.add(lrn);

  shape::add_kernel(registry, "MeanVarianceNormalization", create_mean_variance,
                    {DataType::kFloat});
}

}  // namespace cleave
