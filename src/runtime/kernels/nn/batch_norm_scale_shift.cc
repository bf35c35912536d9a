// An inference BatchNormalization as a per-channel scale and shift in cleave's own vector loops.
#include "runtime/kernels/nn/batch_norm_scale_shift.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/staging.h"

namespace cleave {

namespace {

class ScaleShiftBatchNormKernel final : public Kernel {
 public:
  ScaleShiftBatchNormKernel(const KernelContext& context, ChannelRows shape, bool relu)
      : shape_(shape), relu_(relu), threads_(context.threads) {
    const Tensor& x = context.input(0);
    const int64_t channels = x.dim(1);
    const auto epsilon = static_cast<double>(context.node.float_attribute("epsilon", 1e-5f));
    const float* gamma = context.input(1).data<float>();
    const float* beta = context.input(2).data<float>();
    const float* mean = context.input(3).data<float>();
    const float* variance = context.input(4).data<float>();
    // Channel c is at group c / lanes, lane c % lanes, except channels-last, where it is lane c
    // of the one group: the same index either way. Lanes past C (padding) keep 0.
    scale_.assign(static_cast<std::size_t>(shape_.groups * shape_.lanes), 0.0f);
    shift_.assign(scale_.size(), 0.0f);
    for (int64_t c = 0; c < channels; ++c) {
      const double a = gamma[c] / std::sqrt(static_cast<double>(variance[c]) + epsilon);
      scale_[c] = static_cast<float>(a);
      shift_[c] = static_cast<float>(beta[c] - mean[c] * a);
    }
    spec_.shape = x.shape();
    output_count_ = std::max<std::size_t>(1, context.node.outputs.size());
    channels_ = channels;
    if (x.is_blocked()) {
      if (context.blocked_outputs_allowed) {
        spec_.layout = x.layout();
      } else {
        // Computed in the input's layout, then reordered into the plain output.
        staged_bytes_ = x.layout()->get_size();
        reorder_ = LayoutReorder(*x.layout(), plain_desc(x.shape()), context.engine);
      }
    }
    implementation_ = "cleave_scale_shift:" + vector_isa_name(vector_isa());
  }

  std::string implementation() const override { return implementation_; }
  std::vector<OutputSpec> output_specs() const override {
    // Unread training outputs (running or saved statistics) get buffers nothing writes.
    std::vector<OutputSpec> specs(output_count_, {DataType::kFloat, {channels_}, {}, -1});
    specs[0] = spec_;
    return specs;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    float* out = outputs[0]->data<float>();
    if (staged_bytes_ > 0) {
      out = reinterpret_cast<float*>(staging_buffer(StagingSlot::kOutput, staged_bytes_));
    }
    scale_shift_loops(inputs[0]->data<float>(), out, scale_.data(), shift_.data(), shape_, relu_,
                      threads_);
    if (staged_bytes_ > 0) reorder_.run(out, outputs[0]->raw(), stream);
  }

 private:
  ChannelRows shape_;
  bool relu_ = false;
  int threads_ = 1;
  std::vector<float> scale_, shift_;
  OutputSpec spec_;
  std::size_t output_count_ = 1;
  int64_t channels_ = 0;
  std::size_t staged_bytes_ = 0;
  LayoutReorder reorder_;
  std::string implementation_;
};

}  // namespace

std::unique_ptr<Kernel> try_scale_shift_batch_norm(const KernelContext& context) {
  const Node& node = context.node;
  if (node.int_attribute("training_mode", 0) != 0 || node.int_attribute("spatial", 1) != 1) {
    return nullptr;
  }
  bool relu = false;
  if (const Attribute* activation = node.attribute("activation")) {
    if (activation->s != "Relu") return nullptr;
    relu = true;
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    if (output_used(context, i)) return nullptr;
  }
  if (context.inputs.size() < 5) return nullptr;
  const Tensor& x = context.input(0);
  if (x.dtype() != DataType::kFloat || x.rank() < 2 || x.element_count() == 0) return nullptr;
  for (std::size_t i = 1; i <= 4; ++i) {
    // Statistics computed at run time keep oneDNN's kernel, which reads them per run.
    if (!context.has_input(i) || i >= context.constant.size() || !context.constant[i])
      return nullptr;
    const Tensor& parameter = context.input(i);
    if (parameter.dtype() != DataType::kFloat || parameter.is_blocked() ||
        parameter.element_count() != x.dim(1)) {
      return nullptr;
    }
  }
  std::optional<ChannelRows> shape = channel_rows_of(x);
  if (!shape) return nullptr;
  return std::make_unique<ScaleShiftBatchNormKernel>(context, *shape, relu);
}

}  // namespace cleave
