// The loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (its log-softmax).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

enum class LossReduction { kNone, kSum, kMean };

// Layout shared by both losses: scores [N, C, d1..dk], labels [N, d1..dk].
struct LossShape {
  int64_t batch = 0, classes = 0, inner = 0;
  std::vector<int64_t> label_shape;
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;
};

LossShape loss_shape(const KernelContext& context) {
  const Tensor& scores = context.input(0);
  const Tensor& labels = context.input(1);
  if (scores.rank() < 2) {
    throw Error(fmt::format("{}: the input should be [N, C, ...], is {}", context.where(),
                            scores.describe()));
  }
  if (labels.dtype() != DataType::kInt64 && labels.dtype() != DataType::kInt32) {
    throw Error(fmt::format("{}: the target should be int32 or int64, is {}", context.where(),
                            labels.describe()));
  }
  LossShape shape;
  shape.label_shape = {scores.dim(0)};
  for (std::size_t d = 2; d < scores.rank(); ++d) shape.label_shape.push_back(scores.dim(d));
  if (labels.shape() != shape.label_shape) {
    throw Error(fmt::format("{}: the target {} should have the shape {} (the input {} less C)",
                            context.where(), labels.describe(),
                            shape::format_dims(shape.label_shape), scores.describe()));
  }
  shape.batch = scores.dim(0);
  shape.classes = scores.dim(1);
  shape.inner = scores.element_count() / std::max<int64_t>(1, shape.batch * shape.classes);
  if (context.has_input(2) && context.input(2).shape() != std::vector<int64_t>{shape.classes}) {
    throw Error(fmt::format("{}: the weight {} should have the shape [{}]", context.where(),
                            context.input(2).describe(), shape.classes));
  }
  std::string reduction = context.node.string_attribute("reduction", "mean");
  if (reduction == "none") {
    shape.reduction = LossReduction::kNone;
  } else if (reduction == "sum") {
    shape.reduction = LossReduction::kSum;
  } else if (reduction != "mean") {
    throw Error(fmt::format("{}: reduction should be none, sum or mean, is '{}'", context.where(),
                            reduction));
  }
  if (context.node.attribute("ignore_index") != nullptr) {
    shape.ignore_index = context.node.int_attribute("ignore_index", 0);
  }
  return shape;
}

// loss = -log_prob[n, label, d] · weight[label], reduced; an ignored label weighs 0.
template <typename T>
void negative_log_likelihood(const std::string& where, const LossShape& shape, const T* log_prob,
                             const std::vector<int64_t>& labels, const T* weight, T* out) {
  T total = 0, weights = 0;
  for (int64_t n = 0; n < shape.batch; ++n) {
    for (int64_t i = 0; i < shape.inner; ++i) {
      int64_t position = n * shape.inner + i;
      int64_t label = labels[position];
      T loss = 0, w = 0;
      if (!shape.ignore_index || label != *shape.ignore_index) {
        if (label < 0 || label >= shape.classes) {
          throw Error(fmt::format("{}: target value {} is out of range for {} classes", where,
                                  label, shape.classes));
        }
        w = weight ? weight[label] : T(1);
        loss = -log_prob[(n * shape.classes + label) * shape.inner + i] * w;
      }
      if (shape.reduction == LossReduction::kNone) out[position] = loss;
      total += loss;
      weights += w;
    }
  }
  if (shape.reduction == LossReduction::kSum) *out = total;
  if (shape.reduction == LossReduction::kMean) *out = total / weights;
}

// log_softmax over the class axis of [N, C, inner].
template <typename T>
void log_softmax_classes(const LossShape& shape, const T* scores, T* out) {
  for (int64_t n = 0; n < shape.batch; ++n) {
    for (int64_t i = 0; i < shape.inner; ++i) {
      const T* x = scores + n * shape.classes * shape.inner + i;
      T* y = out + n * shape.classes * shape.inner + i;
      T largest = -std::numeric_limits<T>::infinity();
      for (int64_t c = 0; c < shape.classes; ++c) largest = std::max(largest, x[c * shape.inner]);
      T sum = 0;
      for (int64_t c = 0; c < shape.classes; ++c) sum += std::exp(x[c * shape.inner] - largest);
      T offset = largest + std::log(sum);
      for (int64_t c = 0; c < shape.classes; ++c) y[c * shape.inner] = x[c * shape.inner] - offset;
    }
  }
}

std::unique_ptr<Kernel> create_loss(const KernelContext& context, bool softmax) {
  LossShape shape = loss_shape(context);
  const Tensor& scores = context.input(0);
  DataType type = scores.dtype();
  if (type != DataType::kFloat && type != DataType::kDouble) {
    throw UnsupportedError(fmt::format("{}: element type {} is not supported (f32, f64 are)",
                                       context.where(), dtype_name(type)));
  }
  std::vector<int64_t> loss_dims;
  if (shape.reduction == LossReduction::kNone) loss_dims = shape.label_shape;
  std::vector<OutputSpec> specs = {OutputSpec{type, loss_dims, std::nullopt, -1}};
  if (softmax && context.node.outputs.size() > 1) {
    specs.push_back(OutputSpec{type, scores.shape(), std::nullopt, -1});
  }
  std::string where = context.where();
  return shape::make_kernel(
      context, specs,
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> labels = inputs[1]->to_int64_vector();
        auto compute = [&](auto typed) {
          using T = decltype(typed);
          const T* weight = inputs.size() > 2 && inputs[2] ? inputs[2]->data<T>() : nullptr;
          const T* log_prob = inputs[0]->data<T>();
          std::vector<T> scratch;
          if (softmax) {
            T* target = outputs.size() > 1 && outputs[1] ? outputs[1]->data<T>() : nullptr;
            if (!target) {
              scratch.resize(static_cast<std::size_t>(inputs[0]->element_count()));
              target = scratch.data();
            }
            log_softmax_classes(shape, inputs[0]->data<T>(), target);
            log_prob = target;
          }
          negative_log_likelihood(where, shape, log_prob, labels, weight, outputs[0]->data<T>());
        };
        if (type == DataType::kFloat) {
          compute(float{});
        } else {
          compute(double{});
        }
      });
}

}  // namespace

void register_loss_kernels(KernelRegistry& registry) {
  std::vector<DataType> types = {DataType::kFloat, DataType::kDouble};
  shape::add_kernel(
      registry, "NegativeLogLikelihoodLoss",
      [](const KernelContext& context) { return create_loss(context, false); }, types);
  shape::add_kernel(
      registry, "SoftmaxCrossEntropyLoss",
      [](const KernelContext& context) { return create_loss(context, true); }, types);
}

}  // namespace cleave
