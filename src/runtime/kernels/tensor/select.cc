// Kernels whose output shapes follow their inputs' values: NonZero, Compress and Unique.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// Bool tensors hold one byte per element, so they are read as uint8.
template <typename Visitor>
void visit_value_type(const KernelContext& context, DataType type, Visitor&& visit) {
  if (type == DataType::kBool) {
    visit(uint8_t{});
    return;
  }
  visit_real_type(context, type, std::forward<Visitor>(visit));
}

// Ascending with NaN last, so that sorting never breaks a strict weak order.
template <typename T>
bool value_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return false;
    if (b != b) return true;
  }
  return a < b;
}

// NonZero's coordinates, written in order into `out` ([rank, count] row-major). They advance
// with the flat position like an odometer: no division per element (a scalar's coordinate is
// 0). A vector's coordinate is its position, written whether or not the element counts (the
// next one overwrites it otherwise): no branch on the data to mispredict. Returns how many
// elements are non-zero; never writes past `count`.
template <typename T>
int64_t write_coordinates(std::span<const T> values, std::span<const int64_t> dims, int64_t rank,
                          int64_t count, int64_t* out) {
  int64_t n = 0;
  if (dims.size() == 1) {
    const auto length = static_cast<int64_t>(values.size());
    for (int64_t i = 0; i < length; ++i) {
      if (n < count) out[n] = i;
      n += values[i] != T{} ? 1 : 0;
    }
    return n;
  }
  const std::vector<int64_t> shape =
      dims.empty() ? std::vector<int64_t>{1} : std::vector<int64_t>(dims.begin(), dims.end());
  std::vector<int64_t> coordinate(rank, 0);
  for (const T value : values) {
    if (value != T{}) {
      if (n < count)
        for (int64_t axis = 0; axis < rank; ++axis) out[axis * count + n] = coordinate[axis];
      ++n;
    }
    for (int64_t axis = rank - 1; axis >= 0 && ++coordinate[axis] == shape[axis]; --axis)
      coordinate[axis] = 0;
  }
  return n;
}

// Counts when it is prepared (the count is its output's shape) and writes the coordinates when
// it runs, straight into the buffer the executor gives it: a detector's score filter reads
// millions of elements per run, and every buffer made on the way (a result to copy from, a
// vector that grows) is fresh memory whose pages fault in each run.
class NonZeroKernel : public Kernel {
 public:
  using Writer = std::function<int64_t(const Tensor& data, int64_t* out)>;
  NonZeroKernel(std::string where, int64_t rank, int64_t count, Writer write)
      : where_(std::move(where)), rank_(rank), count_(count), write_(std::move(write)) {}
  std::vector<OutputSpec> output_specs() const override {
    return {OutputSpec{DataType::kInt64, {rank_, count_}, std::nullopt, -1}};
  }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream&) override {
    const int64_t written = write_(*inputs.at(0), outputs.at(0)->data<int64_t>());
    ran_ = true;
    if (written != count_) {
      throw Error(fmt::format(
          "{}: its input has other non-zero elements than when it was prepared ({} then)", where_,
          count_));
    }
  }
  /// False once the kernel has run: the next run's values may give another count.
  bool prepared_for_values(const std::vector<const Tensor*>&) const override { return !ran_; }

 private:
  std::string where_;
  int64_t rank_;
  int64_t count_;
  Writer write_;
  bool ran_ = false;
};

std::unique_ptr<Kernel> create_nonzero(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(data.rank()));
  int64_t count = 0;
  NonZeroKernel::Writer write;
  visit_value_type(context, data.dtype(), [&](auto typed) {
    using T = decltype(typed);
    for (const T value : data.values<T>()) count += value != T{} ? 1 : 0;
    write = [rank, count](const Tensor& values, int64_t* out) {
      return write_coordinates(values.values<T>(), values.shape(), rank, count, out);
    };
  });
  return std::make_unique<NonZeroKernel>(context.where(), rank, count, std::move(write));
}

std::unique_ptr<Kernel> create_compress(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& condition = context.input(1);
  if (condition.rank() != 1) {
    throw Error(
        fmt::format("{}: condition must be 1-D, got {}", context.where(), condition.describe()));
  }
  std::vector<int64_t> keep;
  std::vector<double> flags = condition.to_double_vector();
  const bool flat = context.node.attribute("axis") == nullptr;
  const int64_t axis = flat ? 0
                            : normalize_axis(context, context.node.int_attribute("axis", 0),
                                             static_cast<int64_t>(data.rank()));
  const int64_t length = flat ? data.element_count() : data.dim(axis);
  if (static_cast<int64_t>(flags.size()) > length) {
    throw Error(fmt::format("{}: condition has {} entries, more than the {} it selects from",
                            context.where(), flags.size(), length));
  }
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] != 0) keep.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> shape =
      flat ? std::vector<int64_t>{static_cast<int64_t>(keep.size())} : data.shape();
  if (!flat) shape[axis] = static_cast<int64_t>(keep.size());
  // Every slice kept is copied in below.
  Tensor result = Tensor::allocate_uninitialised(data.dtype(), shape);
  const std::size_t element = element_size(data.dtype());
  int64_t outer = 1, inner = 1;
  if (!flat) {
    for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
    for (int64_t d = axis + 1; d < static_cast<int64_t>(data.rank()); ++d) inner *= data.dim(d);
  }
  const auto* in = static_cast<const std::byte*>(data.raw());
  auto* out = static_cast<std::byte*>(result.raw());
  const std::size_t slice = inner * element;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : keep) {
      std::memcpy(out, in + (o * length + index) * slice, slice);
      out += slice;
    }
  }
  return std::make_unique<ComputedKernel>(std::vector<Tensor>{std::move(result)});
}

// Unique over slices along an axis (the flattened tensor is one axis of scalars): slices
// compare element by element, as NumPy's unique with an axis does.
template <typename T>
std::vector<Tensor> unique_slices(const Tensor& data, int64_t outer, int64_t length, int64_t inner,
                                  bool sorted, const std::vector<int64_t>& shape, int64_t axis) {
  const T* values = data.data<T>();
  // Slice s gathers values[o * length * inner + s * inner + i] over o and i.
  const auto at = [&](int64_t s, int64_t k) {
    const int64_t o = k / inner, i = k % inner;
    return values[(o * length + s) * inner + i];
  };
  const int64_t width = outer * inner;
  const auto slice_less = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < width; ++k) {
      if (value_less(at(a, k), at(b, k))) return true;
      if (value_less(at(b, k), at(a, k))) return false;
    }
    return false;
  };
  const auto slice_equal = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < width; ++k) {
      T x = at(a, k), y = at(b, k);
      if (!(x == y) && !(x != x && y != y)) return false;
    }
    return true;
  };
  std::vector<int64_t> order(length);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), slice_less);
  // Groups of equal slices in sorted order; each group's first is its first occurrence.
  std::vector<int64_t> first, counts, group_of(length);
  for (std::size_t p = 0; p < order.size(); ++p) {
    if (p == 0 || !slice_equal(order[p - 1], order[p])) {
      first.push_back(order[p]);
      counts.push_back(0);
    }
    group_of[order[p]] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  std::vector<int64_t> rank_of(first.size());
  std::iota(rank_of.begin(), rank_of.end(), 0);
  if (!sorted) {
    // Unsorted: unique slices in the order they first occur.
    std::vector<int64_t> by_occurrence(first.size());
    std::iota(by_occurrence.begin(), by_occurrence.end(), 0);
    std::sort(by_occurrence.begin(), by_occurrence.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (std::size_t r = 0; r < by_occurrence.size(); ++r) rank_of[by_occurrence[r]] = r;
  }
  const auto unique = static_cast<int64_t>(first.size());
  std::vector<int64_t> y_shape = shape;
  y_shape[axis] = unique;
  // Each group writes its rank's slice, index and count, and each slice its inverse entry.
  Tensor y = Tensor::allocate_uninitialised(data.dtype(), y_shape);
  Tensor indices = Tensor::allocate_uninitialised(DataType::kInt64, {unique});
  Tensor inverse = Tensor::allocate_uninitialised(DataType::kInt64, {length});
  Tensor count = Tensor::allocate_uninitialised(DataType::kInt64, {unique});
  T* y_values = y.data<T>();
  for (int64_t g = 0; g < unique; ++g) {
    const int64_t r = rank_of[g];
    indices.data<int64_t>()[r] = first[g];
    count.data<int64_t>()[r] = counts[g];
    for (int64_t k = 0; k < width; ++k) {
      const int64_t o = k / inner, i = k % inner;
      y_values[(o * unique + r) * inner + i] = at(first[g], k);
    }
  }
  for (int64_t s = 0; s < length; ++s) inverse.data<int64_t>()[s] = rank_of[group_of[s]];
  return {std::move(y), std::move(indices), std::move(inverse), std::move(count)};
}

std::unique_ptr<Kernel> create_unique(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const bool sorted = context.node.int_attribute("sorted", 1) != 0;
  const bool flat = context.node.attribute("axis") == nullptr;
  const auto rank = static_cast<int64_t>(data.rank());
  const int64_t axis =
      flat ? 0 : normalize_axis(context, context.node.int_attribute("axis", 0), rank);
  std::vector<int64_t> shape = flat ? std::vector<int64_t>{data.element_count()} : data.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
  std::vector<Tensor> results;
  visit_value_type(context, data.dtype(), [&](auto typed) {
    using T = decltype(typed);
    results = unique_slices<T>(data, outer, shape[axis], inner, sorted, shape, axis);
  });
  return std::make_unique<ComputedKernel>(std::move(results));
}

}  // namespace

void register_select_kernels(KernelRegistry& registry) {
  std::vector<DataType> with_bool = kNumericTypes;
  add_kernel(registry, "NonZero", create_nonzero, with_bool);
  add_kernel(registry, "Compress", create_compress, kMovableTypes);
  add_kernel(registry, "Unique", create_unique, with_bool);
}

}  // namespace cleave::shape
