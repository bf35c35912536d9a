// Index-driven kernels: Gather(Elements/ND), Scatter(Elements/ND), OneHot.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// Indices as int64 with negatives wrapped, checked against the axis size before anything is
// written, so a bad index never reads outside the data.
std::vector<int64_t> checked_indices(const std::string& where, const Tensor& indices, int64_t size,
                                     std::string_view what) {
  std::vector<int64_t> values;
  if (indices.dtype() == DataType::kInt64 || indices.dtype() == DataType::kInt32) {
    values = indices.to_int64_vector();
  } else {
    throw Error(
        fmt::format("{}: {} should be int32 or int64, is {}", where, what, indices.describe()));
  }
  for (int64_t& value : values) {
    if (value < -size || value >= size) {
      throw Error(
          fmt::format("{}: {} value {} is out of range for an axis of size {} (expected "
                      "{} to {})",
                      where, what, value, size, -size, size - 1));
    }
    if (value < 0) value += size;
  }
  return values;
}

void require_index_type(const KernelContext& context, std::size_t input) {
  DataType type = context.input(input).dtype();
  if (type != DataType::kInt64 && type != DataType::kInt32) {
    throw Error(fmt::format("{}: indices should be int32 or int64, are {}", context.where(),
                            context.input(input).describe()));
  }
}

std::unique_ptr<Kernel> create_gather(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& indices = context.input(1);
  require_index_type(context, 1);
  auto rank = static_cast<int64_t>(data.rank());
  if (rank == 0) throw Error(fmt::format("{}: cannot gather from a scalar", context.where()));
  int64_t axis = normalize_axis(context, context.node.int_attribute("axis", 0), rank);
  std::span<const int64_t> dims = data.shape();
  std::vector<int64_t> shape(dims.begin(), dims.begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), dims.begin() + axis + 1, dims.end());
  int64_t outer = product(dims.first(axis)), size = dims[axis];
  std::size_t block =
      static_cast<std::size_t>(product(dims.subspan(axis + 1))) * element_size(data.dtype());
  std::string where = context.where();
  return make_kernel(
      context, {OutputSpec{data.dtype(), shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> picks = checked_indices(where, *inputs[1], size, "indices");
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        auto count = static_cast<int64_t>(picks.size());
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t k = 0; k < count; ++k) {
            std::memcpy(target + (o * count + k) * block, source + (o * size + picks[k]) * block,
                        block);
          }
        }
      });
}

// Shared checks of GatherElements and ScatterElements: indices of the data's rank that fit
// inside the data on every axis but `axis`.
int64_t element_axis(const KernelContext& context, const Tensor& data, const Tensor& indices) {
  auto rank = static_cast<int64_t>(data.rank());
  int64_t axis = normalize_axis(context, context.node.int_attribute("axis", 0), rank);
  if (indices.rank() != data.rank()) {
    throw Error(fmt::format("{}: indices {} should have the rank of the data {}", context.where(),
                            indices.describe(), data.describe()));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices.dim(d) > data.dim(d)) {
      throw Error(fmt::format("{}: indices {} exceed the data {} along axis {}", context.where(),
                              indices.describe(), data.describe(), d));
    }
  }
  return axis;
}

// Data offsets (in elements) addressed by each position of an element-wise index tensor.
std::vector<int64_t> element_offsets(const std::vector<int64_t>& picks,
                                     std::span<const int64_t> index_shape,
                                     std::span<const int64_t> data_shape, int64_t axis) {
  std::vector<int64_t> data_strides = row_major_strides(data_shape);
  std::size_t rank = index_shape.size();
  std::vector<int64_t> index(rank, 0), offsets(picks.size());
  int64_t base = 0;  // Offset of the current position without its axis component.
  for (std::size_t p = 0; p < picks.size(); ++p) {
    offsets[p] = base + picks[p] * data_strides[axis];
    for (std::size_t d = rank; d-- > 0;) {
      int64_t step = static_cast<int64_t>(d) == axis ? 0 : data_strides[d];
      base += step;
      if (++index[d] < index_shape[d]) break;
      base -= index_shape[d] * step;
      index[d] = 0;
    }
  }
  return offsets;
}

std::unique_ptr<Kernel> create_gather_elements(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& indices = context.input(1);
  require_index_type(context, 1);
  int64_t axis = element_axis(context, data, indices);
  std::size_t element_bytes = element_size(data.dtype());
  std::vector<int64_t> data_shape = data.shape();
  std::string where = context.where();
  return make_kernel(
      context, {OutputSpec{data.dtype(), indices.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> picks =
            checked_indices(where, *inputs[1], data_shape[axis], "indices");
        std::vector<int64_t> offsets = element_offsets(picks, inputs[1]->shape(), data_shape, axis);
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        for (std::size_t p = 0; p < offsets.size(); ++p) {
          std::memcpy(target + p * element_bytes, source + offsets[p] * element_bytes,
                      element_bytes);
        }
      });
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction parse_reduction(const KernelContext& context) {
  if (context.opset < 16) return Reduction::kNone;
  std::string name = context.node.string_attribute("reduction", "none");
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (context.opset >= 18 && name == "max") return Reduction::kMax;
  if (context.opset >= 18 && name == "min") return Reduction::kMin;
  throw Error(fmt::format("{}: unknown reduction '{}'", context.where(), name));
}

// Writes `count` elements of `update` into `target` under a reduction.
template <typename T>
void combine(Reduction reduction, T* target, const T* update, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    switch (reduction) {
      case Reduction::kNone:
        target[i] = update[i];
        break;
      case Reduction::kAdd:
        target[i] = static_cast<T>(target[i] + update[i]);
        break;
      case Reduction::kMul:
        target[i] = static_cast<T>(target[i] * update[i]);
        break;
      case Reduction::kMax:
        target[i] = std::max(target[i], update[i]);
        break;
      case Reduction::kMin:
        target[i] = std::min(target[i], update[i]);
        break;
    }
  }
}

// Runs `body` with a typed combine function for the data type (any type for plain writes).
template <typename Body>
void with_combine(const KernelContext& context, DataType type, Reduction reduction, Body body) {
  if (reduction == Reduction::kNone || type == DataType::kBool) {
    if (type == DataType::kBool && reduction != Reduction::kNone) {
      throw UnsupportedError(
          fmt::format("{}: reductions over bool data are not supported", context.where()));
    }
    std::size_t bytes = element_size(type);
    body([bytes](void* target, const void* update, int64_t count) {
      std::memcpy(target, update, static_cast<std::size_t>(count) * bytes);
    });
    return;
  }
  visit_real_type(context, type, [&](auto typed) {
    using T = decltype(typed);
    body([reduction](void* target, const void* update, int64_t count) {
      combine<T>(reduction, static_cast<T*>(target), static_cast<const T*>(update), count);
    });
  });
}

using Combine = std::function<void(void*, const void*, int64_t)>;

// ScatterElements' writes, in position order, straight from the index tensor (a detector's
// RoI scatter has millions): every index is checked before anything is written, and positions
// that address consecutive data elements go to `apply` as one run (whole rows become a copy).
template <typename Index>
void scatter_in_runs(const std::string& where, const Index* indices, std::span<const int64_t> shape,
                     std::span<const int64_t> data_shape, int64_t axis, std::byte* target,
                     const std::byte* updates, std::size_t element_bytes, const Combine& apply) {
  const int64_t size = data_shape[axis];
  std::size_t count = 1;
  for (int64_t extent : shape) count *= static_cast<std::size_t>(extent);
  for (std::size_t p = 0; p < count; ++p) {
    const auto value = static_cast<int64_t>(indices[p]);
    if (value < -size || value >= size) {
      throw Error(
          fmt::format("{}: indices value {} is out of range for an axis of size {} "
                      "(expected {} to {})",
                      where, value, size, -size, size - 1));
    }
  }
  const std::vector<int64_t> strides = row_major_strides(data_shape);
  const std::size_t rank = shape.size();
  std::vector<int64_t> position(rank, 0);
  int64_t base = 0;  // Offset of the current position without its axis component.
  std::size_t run_start = 0;
  int64_t run_offset = 0, run_length = 0;
  const auto flush = [&] {
    if (run_length > 0)
      apply(target + run_offset * element_bytes, updates + run_start * element_bytes, run_length);
  };
  for (std::size_t p = 0; p < count; ++p) {
    auto value = static_cast<int64_t>(indices[p]);
    if (value < 0) value += size;
    const int64_t offset = base + value * strides[axis];
    if (run_length > 0 && offset == run_offset + run_length) {
      ++run_length;
    } else {
      flush();
      run_start = p;
      run_offset = offset;
      run_length = 1;
    }
    for (std::size_t d = rank; d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : strides[d];
      base += step;
      if (++position[d] < shape[d]) break;
      base -= shape[d] * step;
      position[d] = 0;
    }
  }
  flush();
}

std::unique_ptr<Kernel> create_scatter_elements(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& indices = context.input(1);
  const Tensor& updates = context.input(2);
  require_index_type(context, 1);
  if (updates.shape() != indices.shape() || updates.dtype() != data.dtype()) {
    throw Error(fmt::format(
        "{}: updates {} should match the indices' shape {} and the data's "
        "type {}",
        context.where(), updates.describe(), indices.describe(), dtype_name(data.dtype())));
  }
  int64_t axis = element_axis(context, data, indices);
  std::size_t element_bytes = element_size(data.dtype());
  std::vector<int64_t> data_shape = data.shape();
  std::string where = context.where();
  Combine apply;
  with_combine(context, data.dtype(), parse_reduction(context),
               [&](auto function) { apply = function; });
  return make_kernel(
      context, {OutputSpec{data.dtype(), data.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        copy_unless_aliased(*inputs[0], *outputs[0]);
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        const auto* updates = static_cast<const std::byte*>(inputs[2]->raw());
        const Tensor& indices = *inputs[1];
        if (indices.dtype() == DataType::kInt64) {
          scatter_in_runs(where, indices.data<int64_t>(), indices.shape(), data_shape, axis, target,
                          updates, element_bytes, apply);
        } else {
          scatter_in_runs(where, indices.data<int32_t>(), indices.shape(), data_shape, axis, target,
                          updates, element_bytes, apply);
        }
      });
}

std::unique_ptr<Kernel> create_gather_nd(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& indices = context.input(1);
  require_index_type(context, 1);
  auto batch = static_cast<std::size_t>(
      context.opset >= 12 ? context.node.int_attribute("batch_dims", 0) : 0);
  if (indices.rank() == 0 || batch >= indices.rank() || batch >= data.rank()) {
    throw Error(
        fmt::format("{}: batch_dims {} needs indices and data of a higher rank, got {} "
                    "and {}",
                    context.where(), batch, indices.describe(), data.describe()));
  }
  auto depth = static_cast<std::size_t>(indices.dim(indices.rank() - 1));
  if (batch + depth > data.rank()) {
    throw Error(fmt::format(
        "{}: indices {} address {} axes after {} batch axes, the data {} has "
        "only {}",
        context.where(), indices.describe(), depth, batch, data.describe(), data.rank()));
  }
  for (std::size_t d = 0; d < batch; ++d) {
    if (indices.dim(d) != data.dim(d)) {
      throw Error(fmt::format("{}: batch axis {} differs between data {} and indices {}",
                              context.where(), d, data.describe(), indices.describe()));
    }
  }
  std::span<const int64_t> data_dims = data.shape();
  std::span<const int64_t> index_dims = indices.shape();
  std::vector<int64_t> shape(index_dims.begin(), index_dims.end() - 1);
  shape.insert(shape.end(), data_dims.begin() + batch + depth, data_dims.end());
  int64_t batches = product(data_dims.first(batch));
  int64_t tuples_per_batch = product(index_dims.subspan(batch, index_dims.size() - batch - 1));
  int64_t batch_stride = product(data_dims.subspan(batch));
  std::size_t slice_bytes = static_cast<std::size_t>(product(data_dims.subspan(batch + depth))) *
                            element_size(data.dtype());
  std::vector<int64_t> data_shape = data.shape();
  std::vector<int64_t> data_strides = data.strides();
  std::size_t element_bytes = element_size(data.dtype());
  std::string where = context.where();
  return make_kernel(
      context, {OutputSpec{data.dtype(), shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        // Each tuple is read where it lies and its slice copied at once: a detector gathers
        // millions of them per run, and a copy of the indices or a list of offsets would be
        // fresh memory faulted in on every run.
        const Tensor& indices = *inputs[1];
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        const auto gather = [&](auto index_type) {
          using I = decltype(index_type);
          const I* tuples = indices.data<I>();
          for (int64_t b = 0; b < batches; ++b) {
            for (int64_t t = 0; t < tuples_per_batch; ++t) {
              const int64_t tuple = b * tuples_per_batch + t;
              int64_t offset = b * batch_stride;
              for (std::size_t j = 0; j < depth; ++j) {
                const auto value = static_cast<int64_t>(tuples[tuple * depth + j]);
                const int64_t size = data_shape[batch + j];
                if (value < -size || value >= size) {
                  throw Error(fmt::format("{}: index {} is out of range for axis {} of size {}",
                                          where, value, batch + j, size));
                }
                offset += (value < 0 ? value + size : value) * data_strides[batch + j];
              }
              if (slice_bytes > 0) {
                std::memcpy(target + tuple * slice_bytes, source + offset * element_bytes,
                            slice_bytes);
              }
            }
          }
        };
        if (indices.dtype() == DataType::kInt32) {
          gather(int32_t{});
        } else {
          gather(int64_t{});
        }
      });
}

std::unique_ptr<Kernel> create_scatter_nd(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Tensor& indices = context.input(1);
  const Tensor& updates = context.input(2);
  require_index_type(context, 1);
  if (indices.rank() == 0) {
    throw Error(fmt::format("{}: indices should have rank 1 or more", context.where()));
  }
  auto depth = static_cast<std::size_t>(indices.dim(indices.rank() - 1));
  if (depth > data.rank()) {
    throw Error(fmt::format("{}: indices {} address {} axes, the data {} has only {}",
                            context.where(), indices.describe(), depth, data.describe(),
                            data.rank()));
  }
  std::vector<int64_t> expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + depth, data.shape().end());
  if (updates.shape() != expected || updates.dtype() != data.dtype()) {
    throw Error(fmt::format("{}: updates are {}, expected {}{}", context.where(),
                            updates.describe(), dtype_name(data.dtype()), format_dims(expected)));
  }
  std::vector<int64_t> data_shape = data.shape();
  std::vector<int64_t> data_strides = data.strides();
  int64_t slice = product(std::span<const int64_t>(data_shape).subspan(depth));
  auto count = static_cast<std::size_t>(
      product(std::span<const int64_t>(indices.shape()).first(indices.rank() - 1)));
  std::size_t element_bytes = element_size(data.dtype());
  std::string where = context.where();
  Combine apply;
  with_combine(context, data.dtype(), parse_reduction(context),
               [&](auto function) { apply = function; });
  return make_kernel(
      context, {OutputSpec{data.dtype(), data.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> tuples = inputs[1]->to_int64_vector();
        std::vector<int64_t> offsets(count, 0);
        for (std::size_t i = 0; i < count; ++i) {
          for (std::size_t j = 0; j < depth; ++j) {
            int64_t value = tuples[i * depth + j], size = data_shape[j];
            if (value < -size || value >= size) {
              throw Error(fmt::format("{}: index {} is out of range for axis {} of size {}", where,
                                      value, j, size));
            }
            offsets[i] += (value < 0 ? value + size : value) * data_strides[j];
          }
        }
        copy_unless_aliased(*inputs[0], *outputs[0]);
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        const auto* update = static_cast<const std::byte*>(inputs[2]->raw());
        for (std::size_t i = 0; i < count; ++i) {
          apply(target + offsets[i] * element_bytes, update + i * slice * element_bytes, slice);
        }
      });
}

std::unique_ptr<Kernel> create_one_hot(const KernelContext& context) {
  const Tensor& indices = context.input(0);
  std::vector<double> depth_values = real_input(context, 1, "depth");
  if (depth_values.size() != 1 || !std::isfinite(depth_values[0]) || depth_values[0] < 0) {
    throw Error(fmt::format("{}: depth should be one non-negative number", context.where()));
  }
  auto depth = static_cast<int64_t>(depth_values[0]);
  const Tensor& values = context.input(2);
  if (values.element_count() != 2) {
    throw Error(
        fmt::format("{}: values should hold [off, on], is {}", context.where(), values.describe()));
  }
  auto rank = static_cast<int64_t>(indices.rank());
  int64_t axis = context.node.int_attribute("axis", -1);
  if (axis < -rank - 1 || axis > rank) {
    throw Error(fmt::format("{}: axis {} is out of range for an output of rank {}", context.where(),
                            axis, rank + 1));
  }
  if (axis < 0) axis += rank + 1;
  std::span<const int64_t> dims = indices.shape();
  std::vector<int64_t> shape(dims.begin(), dims.begin() + axis);
  shape.push_back(depth);
  shape.insert(shape.end(), dims.begin() + axis, dims.end());
  plain_byte_size(values.dtype(), shape);
  int64_t outer = product(dims.first(axis)), inner = product(dims.subspan(axis));
  std::size_t element_bytes = element_size(values.dtype());
  return make_kernel(
      context, {OutputSpec{values.dtype(), shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<double> picks = inputs[0]->to_double_vector();
        const auto* off = static_cast<const std::byte*>(inputs[2]->raw());
        const std::byte* on = off + element_bytes;
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        int64_t total = outer * depth * inner;
        for (int64_t i = 0; i < total; ++i) {
          std::memcpy(target + i * element_bytes, off, element_bytes);
        }
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            double pick = picks[o * inner + i];
            if (!std::isfinite(pick)) continue;
            auto index = static_cast<int64_t>(pick);
            if (index < 0) index += depth;
            if (index < 0 || index >= depth) continue;  // Out of range: all "off".
            std::memcpy(target + ((o * depth + index) * inner + i) * element_bytes, on,
                        element_bytes);
          }
        }
      },
      {1});
}

}  // namespace

void register_index_kernels(KernelRegistry& registry) {
  add_kernel(registry, "Gather", create_gather);
  add_kernel(registry, "GatherElements", create_gather_elements);
  add_kernel(registry, "ScatterElements", create_scatter_elements);
  add_kernel(registry, "Scatter", create_scatter_elements);
  add_kernel(registry, "GatherND", create_gather_nd);
  add_kernel(registry, "ScatterND", create_scatter_nd);
  std::vector<DataType> index_types = kNumericTypes;
  std::erase(index_types, DataType::kBool);
  add_kernel(registry, "OneHot", create_one_hot, index_types);
}

}  // namespace cleave::shape
