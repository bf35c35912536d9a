// Softmax and LogSoftmax (both axis semantics) on oneDNN; Hardmax, their arg-max sibling.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

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

// 1 at the first largest element along the axis (all of inner for opset < 13's 2-D view).
std::unique_ptr<Kernel> create_hardmax(const KernelContext& context, bool coerce_2d) {
  const Tensor& x = context.input(0);
  auto rank = static_cast<int64_t>(x.rank());
  int64_t axis =
      normalized_axis(context, context.node.int_attribute("axis", coerce_2d ? 1 : -1), rank);
  std::span<const int64_t> shape(x.shape());
  int64_t outer = volume(shape.first(axis));
  int64_t length = coerce_2d ? volume(shape.subspan(axis)) : shape[axis];
  int64_t inner = coerce_2d ? 1 : volume(shape.subspan(axis + 1));
  DataType type = x.dtype();
  return shape::make_kernel(
      context, {OutputSpec{type, x.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        auto compute = [&](auto typed) {
          using T = decltype(typed);
          const T* in = inputs[0]->data<T>();
          T* out = outputs[0]->data<T>();
          std::fill(out, out + outer * length * inner, T(0));
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < inner; ++i) {
              const T* row = in + o * length * inner + i;
              int64_t best = 0;
              for (int64_t k = 1; k < length; ++k) {
                if (row[k * inner] > row[best * inner]) best = k;
              }
              if (length > 0) out[(o * length + best) * inner + i] = T(1);
            }
          }
        };
        if (type == DataType::kDouble) {
          compute(double{});
        } else {
          compute(float{});
        }
      });
}

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
  for (int64_t since : {1, 13}) {
    KernelInfo info;
    info.op_type = "Hardmax";
    info.since_opset = since;
    info.dtypes = {DataType::kFloat, DataType::kDouble};
    info.create = [since](const KernelContext& context) {
      return create_hardmax(context, since < 13);
    };
    registry.add(info);
  }
}

}  // namespace cleave
