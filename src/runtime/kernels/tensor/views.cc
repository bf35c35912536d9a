// Kernels that relabel a shape and share bytes: Reshape, Flatten, (Un)Squeeze, Identity, Dropout.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// Output 0 shares input 0's bytes under a new shape.
std::unique_ptr<Kernel> aliased_view(const KernelContext& context, std::vector<int64_t> shape,
                                     std::vector<std::size_t> shape_inputs = {}) {
  OutputSpec spec;
  spec.dtype = context.input(0).dtype();
  spec.shape = std::move(shape);
  spec.alias_of = 0;
  return make_kernel(
      context, {spec},
      [](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        copy_unless_aliased(*inputs[0], *outputs[0]);
      },
      std::move(shape_inputs));
}

int64_t checked_multiply(const KernelContext& context, int64_t a, int64_t b) {
  if (b != 0 && a > std::numeric_limits<int64_t>::max() / b) {
    throw Error(
        fmt::format("{}: the output shape's element count overflows int64", context.where()));
  }
  return a * b;
}

std::unique_ptr<Kernel> create_reshape(const KernelContext& context) {
  const Tensor& data = context.input(0);
  std::vector<int64_t> requested;
  std::vector<std::size_t> shape_inputs;
  if (context.opset < 5) {
    requested = context.node.ints_attribute("shape");
  } else {
    requested = int_input(context, 1, "shape");
    shape_inputs.push_back(1);
  }
  bool allow_zero = context.opset >= 14 && context.node.int_attribute("allowzero", 0) != 0;
  std::vector<int64_t> shape(requested.size(), 0);
  int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < requested.size(); ++i) {
    int64_t value = requested[i];
    if (value == -1) {
      if (inferred >= 0) {
        throw Error(fmt::format("{}: shape {} has more than one -1", context.where(),
                                format_dims(requested)));
      }
      inferred = static_cast<int>(i);
      continue;
    }
    if (value < -1) {
      throw Error(fmt::format("{}: shape {} has a negative dimension {}", context.where(),
                              format_dims(requested), value));
    }
    if (value == 0 && !allow_zero) {
      if (i >= data.rank()) {
        throw Error(fmt::format("{}: shape {} copies dimension {} (0) but the input {} has rank {}",
                                context.where(), format_dims(requested), i, data.describe(),
                                data.rank()));
      }
      value = data.dim(i);
    }
    shape[i] = value;
    known = checked_multiply(context, known, value);
  }
  int64_t count = data.element_count();
  if (inferred >= 0) {
    if (allow_zero && std::find(requested.begin(), requested.end(), 0) != requested.end()) {
      throw Error(fmt::format("{}: shape {} has both 0 and -1, which allowzero=1 forbids",
                              context.where(), format_dims(requested)));
    }
    if (known == 0 || count % known != 0) {
      throw Error(fmt::format("{}: cannot reshape {} to {}: the -1 dimension cannot be inferred",
                              context.where(), data.describe(), format_dims(requested)));
    }
    shape[inferred] = count / known;
  } else if (known != count) {
    throw Error(fmt::format("{}: cannot reshape {} ({} elements) to {} ({} elements)",
                            context.where(), data.describe(), count, format_dims(shape), known));
  }
  return aliased_view(context, std::move(shape), std::move(shape_inputs));
}

std::unique_ptr<Kernel> create_flatten(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  int64_t axis = context.node.int_attribute("axis", 1);
  if (axis < -rank || axis > rank) {
    throw Error(fmt::format("{}: axis {} is out of range for rank {} (expected {} to {})",
                            context.where(), axis, rank, -rank, rank));
  }
  if (axis < 0) axis += rank;
  std::span<const int64_t> dims = data.shape();
  return aliased_view(context, {product(dims.first(axis)), product(dims.subspan(axis))});
}

std::unique_ptr<Kernel> create_squeeze(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  std::vector<int64_t> axes;
  std::vector<std::size_t> shape_inputs;
  if (context.opset < 13) {
    axes = context.node.ints_attribute("axes");
  } else if (context.has_input(1)) {
    axes = int_input(context, 1, "axes");
    shape_inputs.push_back(1);
  }
  std::vector<bool> removed(data.rank(), false);
  if (axes.empty()) {
    for (std::size_t d = 0; d < data.rank(); ++d) removed[d] = data.dim(d) == 1;
  }
  for (int64_t axis : normalize_axes(context, axes, rank)) {
    if (data.dim(axis) != 1) {
      throw Error(fmt::format("{}: cannot squeeze axis {} of {}: its size is {}, not 1",
                              context.where(), axis, data.describe(), data.dim(axis)));
    }
    removed[axis] = true;
  }
  std::vector<int64_t> shape;
  for (std::size_t d = 0; d < data.rank(); ++d) {
    if (!removed[d]) shape.push_back(data.dim(d));
  }
  return aliased_view(context, std::move(shape), std::move(shape_inputs));
}

std::unique_ptr<Kernel> create_unsqueeze(const KernelContext& context) {
  const Tensor& data = context.input(0);
  std::vector<int64_t> axes;
  std::vector<std::size_t> shape_inputs;
  if (context.opset < 13) {
    axes = context.node.ints_attribute("axes");
  } else {
    axes = int_input(context, 1, "axes");
    shape_inputs.push_back(1);
  }
  if (axes.empty()) throw Error(fmt::format("{}: axes is empty", context.where()));
  auto out_rank = static_cast<int64_t>(data.rank() + axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t axis : normalize_axes(context, axes, out_rank)) inserted[axis] = true;
  std::vector<int64_t> shape;
  std::size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) shape.push_back(inserted[d] ? 1 : data.dim(next++));
  return aliased_view(context, std::move(shape), std::move(shape_inputs));
}

// A blocked input is a value a pipeline stage reads in its kernels' layout and also passes on
// to a later stage (layout_hand_off.h): the Identity hands on the plain bytes every reader
// takes, so that the value's other readers keep the layout of the whole graph's run.
class PlainingIdentity final : public Kernel {
 public:
  explicit PlainingIdentity(const KernelContext& context) {
    const Tensor& x = context.input(0);
    spec_.dtype = x.dtype();
    spec_.shape = x.shape();
    const dnnl::memory::desc from = desc_of(x);
    to_plain_ = LayoutReorder(from, plain_desc(x.shape(), from.data_type()), context.engine);
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    to_plain_.run(inputs[0]->raw(), outputs[0]->raw(), stream);
  }

 private:
  OutputSpec spec_;
  LayoutReorder to_plain_;
};

std::unique_ptr<Kernel> create_identity(const KernelContext& context) {
  if (context.input(0).is_blocked()) return std::make_unique<PlainingIdentity>(context);
  return aliased_view(context, context.input(0).shape());
}

std::unique_ptr<Kernel> create_dropout(const KernelContext& context) {
  const Tensor& data = context.input(0);
  if (context.opset >= 12 && context.has_input(2)) {
    std::vector<double> training = real_input(context, 2, "training_mode");
    double ratio = context.has_input(1) ? real_input(context, 1, "ratio").at(0) : 0.5;
    if (!training.empty() && training[0] != 0 && ratio != 0) {
      throw UnsupportedError(fmt::format(
          "{}: Dropout in training mode (random masks) is not supported", context.where()));
    }
  }
  OutputSpec output{data.dtype(), data.shape(), std::nullopt, 0};
  std::vector<OutputSpec> specs = {output};
  std::vector<std::byte> keep;
  if (context.node.outputs.size() > 1) {
    // Before opset 10 the mask had the data's type; since then it is bool.
    DataType mask_type = context.opset < 10 ? data.dtype() : DataType::kBool;
    specs.push_back(OutputSpec{mask_type, data.shape(), std::nullopt, -1});
    keep = encode_scalar(context, mask_type, 1.0);
  }
  return make_kernel(
      context, specs,
      [keep](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        copy_unless_aliased(*inputs[0], *outputs[0]);
        if (outputs.size() < 2 || !outputs[1] || keep.empty()) return;
        auto* mask = static_cast<std::byte*>(outputs[1]->raw());
        int64_t count = outputs[1]->element_count();
        for (int64_t i = 0; i < count; ++i) {
          std::memcpy(mask + i * keep.size(), keep.data(), keep.size());
        }
      });
}

}  // namespace

void register_view_kernels(KernelRegistry& registry) {
  add_kernel(registry, "Reshape", create_reshape);
  add_kernel(registry, "Flatten", create_flatten);
  add_kernel(registry, "Squeeze", create_squeeze);
  add_kernel(registry, "Unsqueeze", create_unsqueeze);
  KernelInfo identity;
  identity.op_type = "Identity";
  identity.dtypes = kMovableTypes;
  identity.accepts_blocked = [](std::size_t input) { return input == 0; };
  identity.create = create_identity;
  registry.add(std::move(identity));
  add_kernel(registry, "Dropout", create_dropout);
}

}  // namespace cleave::shape
