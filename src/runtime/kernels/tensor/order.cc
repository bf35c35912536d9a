// Kernels that order or accumulate along one axis: TopK, ArgMax, ArgMin, CumSum, ReverseSequence.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// Orderings that stay strict weak orders with NaN: NaN counts as larger than every number.
template <typename T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

template <typename T>
bool greater(T a, T b) {
  if (is_nan(a)) return !is_nan(b);
  if (is_nan(b)) return false;
  return a > b;
}

template <typename T>
bool less(T a, T b) {
  return greater(b, a);
}

// Sizes of the axes before, along and after `axis`.
struct AxisSplit {
  int64_t outer, size, inner;
};

AxisSplit split_at(std::span<const int64_t> dims, int64_t axis) {
  return {product(dims.first(axis)), dims[axis], product(dims.subspan(axis + 1))};
}

std::unique_ptr<Kernel> create_topk(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  if (rank == 0)
    throw Error(fmt::format("{}: TopK needs a tensor of rank 1 or more", context.where()));
  int64_t axis = normalize_axis(context, context.node.int_attribute("axis", -1), rank);
  int64_t k;
  std::vector<std::size_t> shape_inputs;
  if (context.opset < 10) {
    k = context.node.int_attribute("k", -1);
  } else {
    k = scalar_int_input(context, 1, "K");
    shape_inputs.push_back(1);
  }
  AxisSplit split = split_at(data.shape(), axis);
  if (k < 0 || k > split.size) {
    throw Error(fmt::format("{}: k = {} is out of range for axis {} of size {}", context.where(), k,
                            axis, split.size));
  }
  bool largest = context.opset < 11 || context.node.int_attribute("largest", 1) != 0;
  std::vector<int64_t> shape = data.shape();
  shape[axis] = k;
  std::vector<OutputSpec> specs = {OutputSpec{data.dtype(), shape, std::nullopt, -1},
                                   OutputSpec{DataType::kInt64, shape, std::nullopt, -1}};
  std::unique_ptr<Kernel> kernel;
  visit_real_type(context, data.dtype(), [&](auto typed) {
    using T = decltype(typed);
    kernel = make_kernel(
        context, specs,
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
          const T* source = inputs[0]->data<T>();
          T* values = outputs[0] ? outputs[0]->data<T>() : nullptr;
          int64_t* indices =
              outputs.size() > 1 && outputs[1] ? outputs[1]->data<int64_t>() : nullptr;
          // The k first of a line are kept in a heap whose top is the last of them: one pass
          // and k indices of memory, where an index per element (a detector's score filter:
          // millions per run) was fresh memory faulted in on every run.
          std::vector<int64_t> order;
          order.reserve(static_cast<std::size_t>(k));
          for (int64_t o = 0; o < split.outer; ++o) {
            for (int64_t i = 0; i < split.inner; ++i) {
              const T* line = source + o * split.size * split.inner + i;
              // Ties keep the lower index first, as ONNX Runtime does: a total order, so the k
              // kept and their order are those of a sort.
              auto before = [&](int64_t a, int64_t b) {
                T x = line[a * split.inner], y = line[b * split.inner];
                if (largest ? greater(x, y) : less(x, y)) return true;
                if (largest ? greater(y, x) : less(y, x)) return false;
                return a < b;
              };
              order.clear();
              for (int64_t e = 0; e < split.size && k > 0; ++e) {
                if (static_cast<int64_t>(order.size()) < k) {
                  order.push_back(e);
                  std::push_heap(order.begin(), order.end(), before);
                } else if (before(e, order.front())) {
                  std::pop_heap(order.begin(), order.end(), before);
                  order.back() = e;
                  std::push_heap(order.begin(), order.end(), before);
                }
              }
              std::sort_heap(order.begin(), order.end(), before);
              int64_t base = o * k * split.inner + i;
              for (int64_t j = 0; j < k; ++j) {
                if (values) values[base + j * split.inner] = line[order[j] * split.inner];
                if (indices) indices[base + j * split.inner] = order[j];
              }
            }
          }
        },
        shape_inputs);
  });
  return kernel;
}

std::unique_ptr<Kernel> create_arg(const KernelContext& context, bool maximum) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  if (rank == 0) throw Error(fmt::format("{}: needs a tensor of rank 1 or more", context.where()));
  int64_t axis = normalize_axis(context, context.node.int_attribute("axis", 0), rank);
  bool keep_dims = context.node.int_attribute("keepdims", 1) != 0;
  bool last = context.opset >= 12 && context.node.int_attribute("select_last_index", 0) != 0;
  AxisSplit split = split_at(data.shape(), axis);
  if (split.size == 0) {
    throw Error(fmt::format("{}: axis {} of {} is empty", context.where(), axis, data.describe()));
  }
  std::vector<int64_t> shape = data.shape();
  if (keep_dims) {
    shape[axis] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  std::unique_ptr<Kernel> kernel;
  auto make = [&](auto typed) {
    using T = decltype(typed);
    kernel = make_kernel(
        context, {OutputSpec{DataType::kInt64, shape, std::nullopt, -1}},
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
          const T* source = inputs[0]->data<T>();
          int64_t* target = outputs[0]->data<int64_t>();
          std::vector<T> best(split.inner);
          for (int64_t o = 0; o < split.outer; ++o) {
            const T* block = source + o * split.size * split.inner;
            int64_t* picks = target + o * split.inner;
            std::copy(block, block + split.inner, best.begin());
            std::fill(picks, picks + split.inner, 0);
            for (int64_t a = 1; a < split.size; ++a) {
              const T* row = block + a * split.inner;
              for (int64_t i = 0; i < split.inner; ++i) {
                T value = row[i];
                // Like numpy, the first NaN wins (the last one with select_last_index).
                bool better;
                if (is_nan(best[i])) {
                  better = last && is_nan(value);
                } else if (is_nan(value)) {
                  better = true;
                } else {
                  better = maximum ? value > best[i] : value < best[i];
                  better = better || (last && value == best[i]);
                }
                if (better) {
                  best[i] = value;
                  picks[i] = a;
                }
              }
            }
          }
        });
  };
  if (data.dtype() == DataType::kBool) {
    make(uint8_t{});
  } else {
    visit_real_type(context, data.dtype(), make);
  }
  return kernel;
}

std::unique_ptr<Kernel> create_cumsum(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  bool exclusive = context.node.int_attribute("exclusive", 0) != 0;
  bool reverse = context.node.int_attribute("reverse", 0) != 0;
  std::vector<int64_t> shape = data.shape();
  std::string where = context.where();
  scalar_int_input(context, 1, "axis");  // Checked now so that a bad node fails early.
  std::unique_ptr<Kernel> kernel;
  visit_real_type(context, data.dtype(), [&](auto typed) {
    using T = decltype(typed);
    kernel = make_kernel(
        context, {OutputSpec{data.dtype(), shape, std::nullopt, -1}},
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
          std::vector<int64_t> axis_values = inputs[1]->to_int64_vector();
          if (axis_values.size() != 1 || axis_values[0] < -rank || axis_values[0] >= rank) {
            throw Error(
                fmt::format("{}: axis should be one value in [{}, {}]", where, -rank, rank - 1));
          }
          int64_t axis = axis_values[0] < 0 ? axis_values[0] + rank : axis_values[0];
          AxisSplit split = split_at(shape, axis);
          const T* source = inputs[0]->data<T>();
          T* target = outputs[0]->data<T>();
          std::vector<T> sum(split.inner);
          for (int64_t o = 0; o < split.outer; ++o) {
            std::fill(sum.begin(), sum.end(), T{0});
            for (int64_t step = 0; step < split.size; ++step) {
              int64_t a = reverse ? split.size - 1 - step : step;
              int64_t offset = (o * split.size + a) * split.inner;
              for (int64_t i = 0; i < split.inner; ++i) {
                T value = source[offset + i];
                if (exclusive) {
                  target[offset + i] = sum[i];
                  sum[i] = static_cast<T>(sum[i] + value);
                } else {
                  sum[i] = static_cast<T>(sum[i] + value);
                  target[offset + i] = sum[i];
                }
              }
            }
          }
        });
  });
  return kernel;
}

// Reverses the first sequence_lens[b] steps of each batch entry b along the time axis.
std::unique_ptr<Kernel> create_reverse_sequence(const KernelContext& context) {
  const Tensor& data = context.input(0);
  if (data.rank() < 2) {
    throw Error(fmt::format("{}: the input should have rank 2 or more, is {}", context.where(),
                            data.describe()));
  }
  auto rank = static_cast<int64_t>(data.rank());
  int64_t batch_axis =
      normalize_axis(context, context.node.int_attribute("batch_axis", 1), rank, "batch_axis");
  int64_t time_axis =
      normalize_axis(context, context.node.int_attribute("time_axis", 0), rank, "time_axis");
  if ((batch_axis > 1 || time_axis > 1) || batch_axis == time_axis) {
    throw Error(fmt::format("{}: batch_axis {} and time_axis {} should be 0 and 1", context.where(),
                            batch_axis, time_axis));
  }
  int64_t batch = data.dim(batch_axis), steps = data.dim(time_axis);
  if (context.input(1).shape() != std::vector<int64_t>{batch}) {
    throw Error(fmt::format("{}: sequence_lens {} should have the shape [{}]", context.where(),
                            context.input(1).describe(), batch));
  }
  auto block =
      static_cast<std::size_t>(product(std::span<const int64_t>(data.shape()).subspan(2))) *
      element_size(data.dtype());
  std::string where = context.where();
  return make_kernel(
      context, {OutputSpec{data.dtype(), data.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> lengths = inputs[1]->to_int64_vector();
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        for (int64_t b = 0; b < batch; ++b) {
          int64_t length = lengths[b];
          if (length < 0 || length > steps) {
            throw Error(fmt::format("{}: sequence length {} should be between 0 and {}", where,
                                    length, steps));
          }
          for (int64_t t = 0; t < steps; ++t) {
            int64_t from = t < length ? length - 1 - t : t;
            // Blocks of [dim 0, dim 1]: everything after the two axes moves together.
            auto index = [&](int64_t step) {
              return batch_axis == 0 ? b * steps + step : step * batch + b;
            };
            std::memcpy(target + index(t) * block, source + index(from) * block, block);
          }
        }
      });
}

}  // namespace

void register_order_kernels(KernelRegistry& registry) {
  std::vector<DataType> real_types = kNumericTypes;
  std::erase(real_types, DataType::kBool);
  add_kernel(registry, "TopK", create_topk, real_types);
  add_kernel(
      registry, "ArgMax", [](const KernelContext& c) { return create_arg(c, true); },
      kNumericTypes);
  add_kernel(
      registry, "ArgMin", [](const KernelContext& c) { return create_arg(c, false); },
      kNumericTypes);
  add_kernel(registry, "CumSum", create_cumsum, real_types);
  add_kernel(registry, "ReverseSequence", create_reverse_sequence);
}

}  // namespace cleave::shape
