// Softmax and LogSoftmax (both axis semantics) on oneDNN.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using dnnl::memory;

class SoftmaxKernel : public Kernel {
 public:
  /// `coerce_2d`: opset < 13 semantics, where the input is viewed as [outer, inner] split at
  /// `axis` and softmax runs over all of inner; otherwise over the one axis.
  SoftmaxKernel(const KernelContext& context, bool logarithmic, bool coerce_2d) {
    const Tensor& x = context.input(0);
    auto rank = static_cast<int64_t>(x.rank());
    int64_t axis =
        normalized_axis(context, context.node.int_attribute("axis", coerce_2d ? 1 : -1), rank);
    spec_.shape = x.shape();
    if (x.element_count() == 0) {
      empty_ = true;
      return;
    }
    std::span<const int64_t> shape(x.shape());
    int64_t outer = volume(shape.first(axis));
    std::vector<int64_t> view;
    if (coerce_2d) {
      view = {outer, volume(shape.subspan(axis))};
    } else {
      // [outer, axis, inner] keeps the softmax axis and makes every layout dense.
      view = {outer, shape[axis], volume(shape.subspan(axis + 1))};
    }
    memory::desc data = plain_desc(view);
    dnnl::softmax_v2_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        logarithmic ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, data, data,
        1);
    dnnl::softmax_v2_forward::primitive_desc descriptor(desc, kernel_attr(), context.engine);
    step_ = DnnlStep(dnnl::softmax_v2_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, data);
    step_.declare(DNNL_ARG_DST, data);
  }

  std::string implementation() const override { return step_.implementation(); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_DST, outputs[0]->raw());
    step_.execute(stream);
  }

 private:
  OutputSpec spec_;
  bool empty_ = false;
  DnnlStep step_;
};

}  // namespace

void register_softmax_kernels(KernelRegistry& registry) {
  for (bool logarithmic : {false, true}) {
    for (int64_t since : {1, 13}) {
      KernelInfo info;
      info.op_type = logarithmic ? "LogSoftmax" : "Softmax";
      info.since_opset = since;
      info.create =
          guarded([logarithmic, since](const KernelContext& context) -> std::unique_ptr<Kernel> {
            return std::make_unique<SoftmaxKernel>(context, logarithmic, since < 13);
          });
      registry.add(info);
    }
  }
}

}  // namespace cleave
