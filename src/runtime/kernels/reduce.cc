// The Reduce* ops in plain C++ over coalesced axes: any axes, keepdims, axes as input, int types.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "runtime/kernels/dnnl_util.h"

namespace cleave {

namespace {

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
      spec_.alias_of = 0;
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

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream&) override {
    if (spec_.alias_of >= 0) return;
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
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
  ReduceOp op_;
  OutputSpec spec_;
  ReductionPlan plan_;
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
