// The Reduce* ops in plain C++ over coalesced axes: any axes, keepdims, axes as input, int types;
// a mean or max over the spatial axes of a oneDNN-blocked tensor is a global pooling.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/staging.h"

namespace cleave {

namespace {

using dnnl::memory;

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

/// The input viewed as groups of adjacent axes that are all reduced or all kept; the last
/// group is walked as contiguous rows.
struct ReductionPlan {
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  int64_t output_count = 1;
  int64_t reduced_count = 1;
};

ReductionPlan plan_reduction(const std::vector<int64_t>& shape,
                             const std::vector<bool>& reduce_axis) {
  ReductionPlan plan;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == 1) continue;  // Reducing or keeping a unit axis changes nothing.
    if (reduce_axis[a]) {
      plan.reduced_count *= shape[a];
    } else {
      plan.output_count *= shape[a];
    }
    if (!plan.sizes.empty() && plan.reduced.back() == reduce_axis[a]) {
      plan.sizes.back() *= shape[a];
    } else {
      plan.sizes.push_back(shape[a]);
      plan.reduced.push_back(reduce_axis[a]);
    }
  }
  if (plan.sizes.empty()) {
    plan.sizes.push_back(1);
    plan.reduced.push_back(false);
  }
  return plan;
}

/// Calls row(in_offset, out_offset, length) for every contiguous row of the innermost group.
/// When that group is reduced, the whole row folds into output element out_offset;
/// otherwise row element j belongs to output element out_offset + j.
template <typename RowFunction>
void for_each_row(const ReductionPlan& plan, RowFunction&& row) {
  std::size_t groups = plan.sizes.size();
  int64_t length = plan.sizes.back();
  if (length == 0) return;
  std::vector<int64_t> out_strides(groups, 0);
  int64_t stride = 1;
  for (std::size_t g = groups; g-- > 0;) {
    if (!plan.reduced[g]) {
      out_strides[g] = stride;
      stride *= plan.sizes[g];
    }
  }
  int64_t rows = 1;
  for (std::size_t g = 0; g + 1 < groups; ++g) rows *= plan.sizes[g];
  std::vector<int64_t> index(groups, 0);
  int64_t out_offset = 0;
  for (int64_t r = 0; r < rows; ++r) {
    row(r * length, out_offset, length);
    for (std::size_t g = groups - 1; g-- > 0;) {
      out_offset += out_strides[g];
      if (++index[g] < plan.sizes[g]) break;
      out_offset -= out_strides[g] * plan.sizes[g];
      index[g] = 0;
    }
  }
}

/// acc[out] = combine(acc[out], map(x, out)) over every input element.
template <typename T, typename Acc, typename Map, typename Combine>
void accumulate(const T* in, std::vector<Acc>& acc, const ReductionPlan& plan, Map map,
                Combine combine) {
  bool innermost_reduced = plan.reduced.back();
  for_each_row(plan, [&](int64_t in_offset, int64_t out_offset, int64_t length) {
    const T* x = in + in_offset;
    if (innermost_reduced) {
      Acc value = acc[out_offset];
      for (int64_t j = 0; j < length; ++j) value = combine(value, map(x[j], out_offset));
      acc[out_offset] = value;
    } else {
      Acc* target = acc.data() + out_offset;
      for (int64_t j = 0; j < length; ++j)
        target[j] = combine(target[j], map(x[j], out_offset + j));
    }
  });
}

template <typename T>
void reduce_typed(ReduceOp op, const T* in, T* out, const ReductionPlan& plan) {
  // Floats accumulate in double (sums of many terms), integers in int64.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  auto identity = [](T x, int64_t) { return static_cast<Acc>(x); };
  auto add = [](Acc a, Acc b) { return a + b; };
  std::vector<Acc> acc(plan.output_count, Acc{0});
  switch (op) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      bool is_max = op == ReduceOp::kMax;
      Acc start =
          std::numeric_limits<Acc>::has_infinity
              ? (is_max ? -std::numeric_limits<Acc>::infinity()
                        : std::numeric_limits<Acc>::infinity())
              : (is_max ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max());
      std::fill(acc.begin(), acc.end(), start);
      if (is_max) {
        accumulate(in, acc, plan, identity, [](Acc a, Acc b) { return b > a || b != b ? b : a; });
      } else {
        accumulate(in, acc, plan, identity, [](Acc a, Acc b) { return b < a || b != b ? b : a; });
      }
      break;
    }
    case ReduceOp::kProd:
      std::fill(acc.begin(), acc.end(), Acc{1});
      accumulate(in, acc, plan, identity, [](Acc a, Acc b) { return a * b; });
      break;
    case ReduceOp::kL1:
      accumulate(
          in, acc, plan, [](T x, int64_t) { return static_cast<Acc>(x < 0 ? -x : x); }, add);
      break;
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare:
      accumulate(
          in, acc, plan, [](T x, int64_t) { return static_cast<Acc>(x) * static_cast<Acc>(x); },
          add);
      break;
    case ReduceOp::kLogSumExp: {
      // Shift by the maximum so exp never overflows.
      std::vector<double> maximum(plan.output_count, -std::numeric_limits<double>::infinity());
      accumulate(
          in, maximum, plan, [](T x, int64_t) { return static_cast<double>(x); },
          [](double a, double b) { return b > a ? b : a; });
      for (double& m : maximum) {
        if (!std::isfinite(m)) m = 0;
      }
      accumulate(
          in, acc, plan,
          [&maximum](T x, int64_t o) {
            return static_cast<Acc>(std::exp(static_cast<double>(x) - maximum[o]));
          },
          add);
      for (int64_t o = 0; o < plan.output_count; ++o) {
        acc[o] = static_cast<Acc>(std::log(static_cast<double>(acc[o])) + maximum[o]);
      }
      break;
    }
    default:
      accumulate(in, acc, plan, identity, add);
      break;
  }
  for (int64_t o = 0; o < plan.output_count; ++o) {
    Acc value = acc[o];
    if (op == ReduceOp::kMean) {
      value =
          static_cast<Acc>(static_cast<double>(value) / static_cast<double>(plan.reduced_count));
    } else if (op == ReduceOp::kL2) {
      value = static_cast<Acc>(std::sqrt(static_cast<double>(value)));
    } else if (op == ReduceOp::kLogSum) {
      value = static_cast<Acc>(std::log(static_cast<double>(value)));
    }
    out[o] = static_cast<T>(value);
  }
}

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const KernelContext& context, ReduceOp op, bool axes_from_input) : op_(op) {
    const Tensor& x = context.input(0);
    auto rank = static_cast<int64_t>(x.rank());
    std::vector<int64_t> axes;
    bool axes_given = false;
    if (axes_from_input || context.has_input(1)) {
      if (context.has_input(1)) {
        axes = context.input(1).to_int64_vector();
        axes_given = !axes.empty();
      }
    } else {
      axes = context.node.ints_attribute("axes");
      axes_given = context.node.attribute("axes") != nullptr && !axes.empty();
    }
    bool keep_dims = context.node.int_attribute("keepdims", 1) != 0;
    spec_.dtype = x.dtype();
    if (!axes_given && context.node.int_attribute("noop_with_empty_axes", 0) != 0) {
      spec_.shape = x.shape();
      if (x.is_blocked()) {
        to_plain_ = LayoutReorder(desc_of(x), plain_desc(x.shape()), context.engine);
        copy_to_plain_ = true;
      } else {
        spec_.alias_of = 0;
      }
      return;
    }
    std::vector<bool> reduce_axis(x.rank(), !axes_given);
    for (int64_t axis : axes) reduce_axis[normalized_axis(context, axis, rank)] = true;
    for (std::size_t a = 0; a < x.rank(); ++a) {
      if (!reduce_axis[a]) {
        spec_.shape.push_back(x.dim(a));
      } else if (keep_dims) {
        spec_.shape.push_back(1);
      }
    }
    plan_ = plan_reduction(x.shape(), reduce_axis);
    if (x.is_blocked()) prepare_blocked_input(context, reduce_axis);
    bool floating = x.dtype() == DataType::kFloat || x.dtype() == DataType::kDouble;
    if (!floating &&
        (op == ReduceOp::kLogSumExp || op == ReduceOp::kLogSum || op == ReduceOp::kL2)) {
      throw UnsupportedError(fmt::format("{}: {} of integers is not supported", context.where(),
                                         context.node.op_type));
    }
    if (x.element_count() == 0 && plan_.output_count != 0 &&
        (op == ReduceOp::kMax || op == ReduceOp::kMin)) {
      // ONNX before opset 18 leaves the empty max/min undefined; reject instead of guessing.
      throw UnsupportedError(
          fmt::format("{}: {} over an empty set of values", context.where(), context.node.op_type));
    }
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return implementation_; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (spec_.alias_of >= 0) return;
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
    if (copy_to_plain_) {
      to_plain_.run(x.raw(), y.raw(), stream);
      return;
    }
    if (pool_.valid()) {
      void* destination =
          pooled_bytes_ > 0 ? staging_buffer(StagingSlot::kOutput, pooled_bytes_) : y.raw();
      const void* source = x.raw();
      if (native_input_bytes_ > 0) {
        std::byte* staged = staging_buffer(StagingSlot::kInput, native_input_bytes_);
        to_native_.run(source, staged, stream);
        source = staged;
      }
      pool_.set(DNNL_ARG_SRC, source);
      pool_.set(DNNL_ARG_DST, destination);
      pool_.execute(stream);
      if (pooled_bytes_ > 0) pooled_to_plain_.run(destination, y.raw(), stream);
      return;
    }
    if (plain_input_bytes_ > 0) {
      std::byte* staged = staging_buffer(StagingSlot::kInput, plain_input_bytes_);
      to_plain_.run(x.raw(), staged, stream);
      stream.wait();
      reduce_typed(op_, reinterpret_cast<const float*>(staged), y.data<float>(), plan_);
      return;
    }
    switch (x.dtype()) {
      case DataType::kFloat:
        reduce_typed(op_, x.data<float>(), y.data<float>(), plan_);
        break;
      case DataType::kDouble:
        reduce_typed(op_, x.data<double>(), y.data<double>(), plan_);
        break;
      case DataType::kInt32:
        reduce_typed(op_, x.data<int32_t>(), y.data<int32_t>(), plan_);
        break;
      case DataType::kInt64:
        reduce_typed(op_, x.data<int64_t>(), y.data<int64_t>(), plan_);
        break;
      default:
        throw Error(fmt::format("Reduce: element type {} is not supported", dtype_name(x.dtype())));
    }
  }

 private:
  // Blocked inputs come only from oneDNN kernels, so they hold floats. Global average or max
  // pooling reads the blocks where they are (mnasnet1_0's final mean, profiled on 2 threads:
  // 39 -> 8 us); any other reduction reads a plain copy.
  void prepare_blocked_input(const KernelContext& context, const std::vector<bool>& reduce_axis) {
    const Tensor& x = context.input(0);
    bool spatial_only = x.rank() >= 3 && x.rank() <= 5 && !reduce_axis[0] && !reduce_axis[1];
    for (std::size_t a = 2; a < x.rank(); ++a) spatial_only = spatial_only && reduce_axis[a];
    if (spatial_only && (op_ == ReduceOp::kMean || op_ == ReduceOp::kMax) &&
        x.element_count() > 0) {
      std::vector<int64_t> pooled_shape = {x.dim(0), x.dim(1)};
      pooled_shape.resize(x.rank(), 1);
      std::size_t spatial = x.rank() - 2;
      memory::dims kernel(x.shape().begin() + 2, x.shape().end()), ones(spatial, 1),
          zeros(spatial, 0);
      auto pooling = [&](const memory::desc& source) {
        dnnl::pooling_v2_forward::desc desc(
            dnnl::prop_kind::forward_inference,
            op_ == ReduceOp::kMean ? dnnl::algorithm::pooling_avg_exclude_padding
                                   : dnnl::algorithm::pooling_max,
            source, any_desc(pooled_shape), ones, kernel, zeros, zeros, zeros);
        return dnnl::pooling_v2_forward::primitive_desc(desc, kernel_attr(), context.engine);
      };
      auto descriptor = pooling(desc_of(x));
      if (implementation_name(descriptor).starts_with("ref")) {
        // Blocks of another ISA's width (16 channels under an AVX2 cap) have only oneDNN's
        // reference pooling; one jitted reorder into the native blocks finds the jit kernel.
        const memory::desc native(
            to_dnnl_dims(x.shape()), memory::data_type::f32,
            channel_blocked_tag(static_cast<int>(x.rank()), native_channel_block()));
        auto reordered = pooling(native);
        if (!implementation_name(reordered).starts_with("ref")) {
          descriptor = reordered;
          to_native_ = LayoutReorder(desc_of(x), native, context.engine);
          native_input_bytes_ = native.get_size();
        }
      }
      pool_ = DnnlStep(dnnl::pooling_v2_forward(descriptor), descriptor, context.engine);
      implementation_ = implementation_name(descriptor);
      pool_.declare(DNNL_ARG_SRC, descriptor.src_desc());
      pool_.declare(DNNL_ARG_DST, descriptor.dst_desc());
      // With one sample, or whole channel blocks, one value per channel lies where the plain
      // layout puts it; otherwise the blocks' padding sits between the samples.
      if (!holds_plain_bytes(descriptor.dst_desc(), pooled_shape)) {
        pooled_bytes_ = descriptor.dst_desc().get_size();
        pooled_to_plain_ =
            LayoutReorder(descriptor.dst_desc(), plain_desc(pooled_shape), context.engine);
      }
      return;
    }
    to_plain_ = LayoutReorder(desc_of(x), plain_desc(x.shape()), context.engine);
    plain_input_bytes_ = plain_byte_size(DataType::kFloat, x.shape());
  }

  ReduceOp op_;
  OutputSpec spec_;
  ReductionPlan plan_;
  DnnlStep pool_;
  std::size_t pooled_bytes_ = 0;  // Staged pooled output (staging_buffer); 0: in place.
  LayoutReorder pooled_to_plain_;
  LayoutReorder to_native_;             // Blocks of another width into the ISA's own.
  std::size_t native_input_bytes_ = 0;  // Staged input in the pool's layout; 0: as given.
  LayoutReorder to_plain_;
  std::size_t plain_input_bytes_ = 0;  // Staged plain input; 0: read as given.
  bool copy_to_plain_ = false;         // noop_with_empty_axes on a blocked input.
  std::string implementation_;
};

}  // namespace

void register_reduce_kernels(KernelRegistry& registry) {
  const std::pair<const char*, ReduceOp> ops[] = {
      {"ReduceSum", ReduceOp::kSum},       {"ReduceMean", ReduceOp::kMean},
      {"ReduceMax", ReduceOp::kMax},       {"ReduceMin", ReduceOp::kMin},
      {"ReduceProd", ReduceOp::kProd},     {"ReduceL1", ReduceOp::kL1},
      {"ReduceL2", ReduceOp::kL2},         {"ReduceSumSquare", ReduceOp::kSumSquare},
      {"ReduceLogSum", ReduceOp::kLogSum}, {"ReduceLogSumExp", ReduceOp::kLogSumExp},
  };
  for (const auto& [name, op] : ops) {
    // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
    int64_t axes_input_since = op == ReduceOp::kSum ? 13 : 18;
    for (int64_t since : {int64_t{1}, axes_input_since}) {
      KernelInfo info;
      info.op_type = name;
      info.since_opset = since;
      info.dtypes = {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64};
      info.accepts_blocked = first_input;
      bool axes_from_input = since == axes_input_since;
      info.create =
          guarded([op, axes_from_input](const KernelContext& context) -> std::unique_ptr<Kernel> {
            return std::make_unique<ReduceKernel>(context, op, axes_from_input);
          });
      registry.add(info);
    }
  }
}

}  // namespace cleave
