// Shared pieces of the plain C++ shape and index kernels: axes, shape inputs, N-D copies.
#include "runtime/kernels/tensor/common.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/intra_op_team.h"

namespace cleave::shape {

const std::vector<DataType> kMovableTypes = {
    DataType::kFloat, DataType::kDouble,   DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt8,  DataType::kInt16,    DataType::kInt32,   DataType::kInt64,
    DataType::kUInt8, DataType::kUInt16,   DataType::kUInt32,  DataType::kUInt64,
    DataType::kBool,  DataType::kComplex64};

const std::vector<DataType> kNumericTypes = {
    DataType::kFloat,  DataType::kDouble, DataType::kInt8,  DataType::kInt16,
    DataType::kInt32,  DataType::kInt64,  DataType::kUInt8, DataType::kUInt16,
    DataType::kUInt32, DataType::kUInt64, DataType::kBool};

namespace {

// Below this many bytes a copy is not worth waking more threads for.
constexpr std::size_t kParallelBytes = 1 << 18;

// Runs fn(begin, end) over [0, total) split into `threads` contiguous ranges.
template <typename RangeFn>
void parallel_ranges(int64_t total, int threads, std::size_t bytes, RangeFn fn) {
  int parts = static_cast<int>(std::min<int64_t>(std::max(threads, 1), total));
  if (parts <= 1 || bytes < kParallelBytes) {
    fn(int64_t{0}, total);
    return;
  }
#pragma omp parallel for num_threads(loop_team(parts, threads)) schedule(static, 1)
  for (int part = 0; part < parts; ++part) {
    fn(total * part / parts, total * (part + 1) / parts);
  }
}

// Walks the multi-indices [begin, end) of `shape` in row-major order, keeping two linear
// offsets (input and output) in step, and calls fn(in_offset, out_offset) for each.
template <typename Fn>
void walk(std::span<const int64_t> shape, std::span<const int64_t> in_strides,
          std::span<const int64_t> out_strides, int64_t begin, int64_t end, Fn fn) {
  std::size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t in_offset = 0, out_offset = 0, rest = begin;
  for (std::size_t d = rank; d-- > 0;) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    in_offset += index[d] * in_strides[d];
    out_offset += index[d] * out_strides[d];
  }
  for (int64_t item = begin; item < end; ++item) {
    fn(in_offset, out_offset);
    for (std::size_t d = rank; d-- > 0;) {
      in_offset += in_strides[d];
      out_offset += out_strides[d];
      if (++index[d] < shape[d]) break;
      in_offset -= shape[d] * in_strides[d];
      out_offset -= shape[d] * out_strides[d];
      index[d] = 0;
    }
  }
}

template <typename T>
void copy_typed(std::span<const int64_t> shape, std::span<const int64_t> in_strides,
                int64_t in_offset, const T* in, T* out, int threads) {
  std::size_t rank = shape.size();
  std::vector<int64_t> out_strides = row_major_strides(shape);
  int64_t total = product(shape);
  std::size_t bytes = static_cast<std::size_t>(total) * sizeof(T);
  const T* base = in + in_offset;
  int64_t inner = shape[rank - 1];
  int64_t inner_stride = in_strides[rank - 1];
  std::span<const int64_t> outer_shape = shape.first(rank - 1);
  std::span<const int64_t> outer_in = in_strides.first(rank - 1);
  std::span<const int64_t> outer_out = std::span<const int64_t>(out_strides).first(rank - 1);
  int64_t rows = total / inner;

  if (inner_stride == 1) {
    parallel_ranges(rows, threads, bytes, [&](int64_t begin, int64_t end) {
      walk(outer_shape, outer_in, outer_out, begin, end, [&](int64_t i, int64_t o) {
        std::memcpy(out + o, base + i, static_cast<std::size_t>(inner) * sizeof(T));
      });
    });
    return;
  }

  // A transpose that moves the unit-stride axis: copy in square tiles so that both the reads
  // and the writes stay within a few cache lines (NCHW <-> NHWC and friends).
  std::size_t unit_axis = rank;
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    if (in_strides[d] == 1) unit_axis = d;
  }
  if (unit_axis < rank && inner > 1) {
    constexpr int64_t kTile = 16;
    int64_t unit_size = shape[unit_axis];
    int64_t unit_out_stride = out_strides[unit_axis];
    std::vector<int64_t> rest_shape, rest_in, rest_out;
    for (std::size_t d = 0; d + 1 < rank; ++d) {
      if (d == unit_axis) continue;
      rest_shape.push_back(shape[d]);
      rest_in.push_back(in_strides[d]);
      rest_out.push_back(out_strides[d]);
    }
    int64_t rest_total = product(rest_shape);
    int64_t blocks = (unit_size + kTile - 1) / kTile;
    parallel_ranges(rest_total * blocks, threads, bytes, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        int64_t rest = item / blocks, block = item % blocks;
        int64_t in_offset_rest = 0, out_offset_rest = 0;
        for (std::size_t d = rest_shape.size(); d-- > 0;) {
          int64_t i = rest % rest_shape[d];
          rest /= rest_shape[d];
          in_offset_rest += i * rest_in[d];
          out_offset_rest += i * rest_out[d];
        }
        int64_t a_end = std::min(unit_size, (block + 1) * kTile);
        for (int64_t b0 = 0; b0 < inner; b0 += kTile) {
          int64_t b_end = std::min(inner, b0 + kTile);
          for (int64_t a = block * kTile; a < a_end; ++a) {
            const T* source = base + in_offset_rest + a;
            T* target = out + out_offset_rest + a * unit_out_stride;
            for (int64_t b = b0; b < b_end; ++b) target[b] = source[b * inner_stride];
          }
        }
      }
    });
    return;
  }

  parallel_ranges(rows, threads, bytes, [&](int64_t begin, int64_t end) {
    walk(outer_shape, outer_in, outer_out, begin, end, [&](int64_t i, int64_t o) {
      const T* source = base + i;
      T* target = out + o;
      for (int64_t k = 0; k < inner; ++k) target[k] = source[k * inner_stride];
    });
  });
}

// Element types by size, so that copies move whole elements rather than bytes.
struct Bytes16 {
  uint64_t low, high;
};

template <typename Fn>
void visit_element_size(std::size_t element_bytes, Fn fn) {
  switch (element_bytes) {
    case 1:
      fn(uint8_t{});
      return;
    case 2:
      fn(uint16_t{});
      return;
    case 4:
      fn(uint32_t{});
      return;
    case 8:
      fn(uint64_t{});
      return;
    case 16:
      fn(Bytes16{});
      return;
    default:
      throw Error(fmt::format("no copy for elements of {} bytes", element_bytes));
  }
}

template <typename T>
void table_copy_typed(std::span<const int64_t> in_shape,
                      const std::vector<std::vector<int64_t>>& tables, T fill, const T* in, T* out,
                      int threads) {
  std::size_t rank = in_shape.size();
  std::vector<int64_t> in_strides = row_major_strides(in_shape);
  std::vector<int64_t> out_shape;
  for (const auto& table : tables) out_shape.push_back(static_cast<int64_t>(table.size()));
  int64_t total = product(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  // The last axis as runs: stretches that read consecutive inputs (or all fill).
  struct Run {
    int64_t out_start, in_start, length;
  };
  std::vector<Run> runs;
  const std::vector<int64_t>& last = tables[rank - 1];
  for (int64_t o = 0; o < static_cast<int64_t>(last.size()); ++o) {
    int64_t i = last[o];
    if (!runs.empty()) {
      Run& run = runs.back();
      bool extends =
          (i < 0) ? run.in_start < 0 : (run.in_start >= 0 && i == run.in_start + run.length);
      if (extends) {
        ++run.length;
        continue;
      }
    }
    runs.push_back({o, i < 0 ? -1 : i, 1});
  }
  int64_t row_length = out_shape[rank - 1];
  // Short runs (nearest upsampling repeats each input a few times) copy faster element by
  // element through the table than run by run.
  bool gather_last = static_cast<int64_t>(runs.size()) * 4 > row_length &&
                     std::find(last.begin(), last.end(), -1) == last.end();
  int64_t rows = total / row_length;
  parallel_ranges(
      rows, threads, static_cast<std::size_t>(total) * sizeof(T), [&](int64_t begin, int64_t end) {
        int64_t previous_source = -2;  // Row offset copied last (-1: a fill row).
        for (int64_t row = begin; row < end; ++row) {
          int64_t rest = row, in_offset = 0;
          bool outside = false;
          for (std::size_t d = rank - 1; d-- > 0;) {
            int64_t i = tables[d][rest % out_shape[d]];
            rest /= out_shape[d];
            if (i < 0) outside = true;
            in_offset += i * in_strides[d];
          }
          T* target = out + row * row_length;
          if (outside) {
            std::fill(target, target + row_length, fill);
            previous_source = -2;
            continue;
          }
          if (row > begin && in_offset == previous_source) {
            std::memcpy(target, target - row_length,
                        static_cast<std::size_t>(row_length) * sizeof(T));
            continue;
          }
          previous_source = in_offset;
          const T* source = in + in_offset;
          if (gather_last) {
            for (int64_t o = 0; o < row_length; ++o) target[o] = source[last[o]];
            continue;
          }
          for (const Run& run : runs) {
            if (run.in_start < 0) {
              std::fill(target + run.out_start, target + run.out_start + run.length, fill);
            } else if (run.length == 1) {
              target[run.out_start] = source[run.in_start];
            } else {
              std::memcpy(target + run.out_start, source + run.in_start,
                          static_cast<std::size_t>(run.length) * sizeof(T));
            }
          }
        }
      });
}

}  // namespace

FunctionKernel::FunctionKernel(const KernelContext& context, std::vector<OutputSpec> specs,
                               Body body, std::vector<std::size_t> shape_inputs)
    : FunctionKernel(context, std::move(specs),
                     StreamBody([body = std::move(body)](const std::vector<const Tensor*>& inputs,
                                                         const std::vector<Tensor*>& outputs,
                                                         dnnl::stream&) { body(inputs, outputs); }),
                     std::move(shape_inputs)) {}

FunctionKernel::FunctionKernel(const KernelContext& context, std::vector<OutputSpec> specs,
                               StreamBody body, std::vector<std::size_t> shape_inputs)
    : where_(context.where()), specs_(std::move(specs)), body_(std::move(body)) {
  for (std::size_t index : shape_inputs) {
    bool constant = index < context.constant.size() && context.constant[index];
    if (!context.has_input(index) || constant) continue;
    prepared_values_.emplace_back(index, context.inputs[index]->to_double_vector());
  }
}

void FunctionKernel::run(const std::vector<const Tensor*>& inputs,
                         const std::vector<Tensor*>& outputs, dnnl::stream& stream) {
  for (const auto& [index, values] : prepared_values_) {
    if (index >= inputs.size() || !inputs[index] || inputs[index]->to_double_vector() != values) {
      throw Error(fmt::format(
          "{}: input {} changed its values since the kernel was prepared; the output shapes "
          "depend on them, so the node must be prepared again",
          where_, index));
    }
  }
  for (std::size_t i = 0; i < outputs.size() && i < specs_.size(); ++i) {
    if (!outputs[i]) continue;
    if (outputs[i]->shape() != specs_[i].shape || outputs[i]->dtype() != specs_[i].dtype) {
      throw Error(fmt::format("{}: output {} is {}, the kernel was prepared for {}[{}]", where_, i,
                              outputs[i]->describe(), dtype_name(specs_[i].dtype),
                              fmt::join(specs_[i].shape, ",")));
    }
  }
  body_(inputs, outputs, stream);
}

bool FunctionKernel::prepared_for_values(const std::vector<const Tensor*>& inputs) const {
  for (const auto& [index, values] : prepared_values_) {
    if (index >= inputs.size() || !inputs[index] || inputs[index]->to_double_vector() != values)
      return false;
  }
  return true;
}

std::vector<OutputSpec> ComputedKernel::output_specs() const {
  std::vector<OutputSpec> specs;
  for (const Tensor& result : results_)
    specs.push_back(OutputSpec{result.dtype(), result.shape(), std::nullopt, -1});
  return specs;
}

void ComputedKernel::run(const std::vector<const Tensor*>&, const std::vector<Tensor*>& outputs,
                         dnnl::stream&) {
  for (std::size_t i = 0; i < outputs.size() && i < results_.size(); ++i) {
    if (outputs[i] && results_[i].byte_size() > 0)
      std::memcpy(outputs[i]->raw(), results_[i].raw(), results_[i].byte_size());
  }
  ran_ = true;
}

bool ComputedKernel::prepared_for_values(const std::vector<const Tensor*>&) const {
  return !ran_;
}

std::unique_ptr<Kernel> make_kernel(const KernelContext& context, std::vector<OutputSpec> specs,
                                    FunctionKernel::Body body,
                                    std::vector<std::size_t> shape_inputs) {
  return std::make_unique<FunctionKernel>(context, std::move(specs), std::move(body),
                                          std::move(shape_inputs));
}

std::unique_ptr<Kernel> make_kernel(const KernelContext& context, std::vector<OutputSpec> specs,
                                    FunctionKernel::StreamBody body,
                                    std::vector<std::size_t> shape_inputs) {
  return std::make_unique<FunctionKernel>(context, std::move(specs), std::move(body),
                                          std::move(shape_inputs));
}

void add_kernel(KernelRegistry& registry, std::string op_type, KernelFactory create,
                std::vector<DataType> dtypes) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.dtypes = std::move(dtypes);
  info.create = std::move(create);
  registry.add(std::move(info));
}

int64_t normalize_axis(const KernelContext& context, int64_t axis, int64_t rank,
                       std::string_view what) {
  if (axis < -rank || axis >= rank) {
    throw Error(fmt::format("{}: {} {} is out of range for rank {} (expected {} to {})",
                            context.where(), what, axis, rank, -rank, rank - 1));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const KernelContext& context, std::vector<int64_t> axes,
                                    int64_t rank, std::string_view what) {
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t& axis : axes) {
    axis = normalize_axis(context, axis, rank, what);
    if (seen[axis]) {
      throw Error(fmt::format("{}: {} lists axis {} twice", context.where(), what, axis));
    }
    seen[axis] = true;
  }
  return axes;
}

std::vector<int64_t> int_input(const KernelContext& context, std::size_t index,
                               std::string_view what) {
  const Tensor& tensor = context.input(index);
  if (tensor.dtype() != DataType::kInt64 && tensor.dtype() != DataType::kInt32) {
    throw Error(fmt::format("{}: input {} ({}) should be int32 or int64, is {}", context.where(),
                            index, what, tensor.describe()));
  }
  return tensor.to_int64_vector();
}

int64_t scalar_int_input(const KernelContext& context, std::size_t index, std::string_view what) {
  std::vector<int64_t> values = int_input(context, index, what);
  if (values.size() != 1) {
    throw Error(fmt::format("{}: input {} ({}) should hold one value, holds {}", context.where(),
                            index, what, values.size()));
  }
  return values[0];
}

std::vector<double> real_input(const KernelContext& context, std::size_t index,
                               std::string_view what) {
  const Tensor& tensor = context.input(index);
  try {
    return tensor.to_double_vector();
  } catch (const Error&) {
    throw Error(fmt::format("{}: input {} ({}) should be numeric, is {}", context.where(), index,
                            what, tensor.describe()));
  }
}

int64_t product(std::span<const int64_t> dims) {
  int64_t result = 1;
  for (int64_t d : dims) result *= d;
  return result;
}

std::vector<int64_t> row_major_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::string format_dims(std::span<const int64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

[[noreturn]] void throw_unsupported_type(const KernelContext& context, DataType type) {
  throw UnsupportedError(fmt::format("{}: {} does not support element type {}", context.where(),
                                     context.node.op_type, dtype_name(type)));
}

std::vector<std::byte> encode_scalar(const KernelContext& context, DataType type, double value) {
  std::vector<std::byte> bytes(element_size(type));
  auto put = [&](auto typed) {
    using T = decltype(typed);
    T converted = static_cast<T>(value);
    std::memcpy(bytes.data(), &converted, sizeof(T));
  };
  switch (type) {
    case DataType::kBool:
      bytes[0] = static_cast<std::byte>(value != 0 ? 1 : 0);
      break;
    case DataType::kBFloat16: {
      float f = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      auto upper = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      std::memcpy(bytes.data(), &upper, sizeof upper);
      break;
    }
    default:
      if (value == 0 && !bytes.empty()) break;  // Zero is all-zero bytes in every real type.
      visit_real_type(context, type, put);
  }
  return bytes;
}

void strided_copy(std::size_t element_bytes, std::span<const int64_t> out_shape,
                  std::span<const int64_t> in_strides, int64_t in_offset, const void* in, void* out,
                  int threads) {
  if (product(out_shape) == 0) return;
  // Drop unit axes and merge neighbours that are contiguous in the input too, so that the
  // copy runs over as few and as long rows as possible.
  std::vector<int64_t> shape, strides;
  for (std::size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    if (!shape.empty() && strides.back() == in_strides[d] * out_shape[d]) {
      shape.back() *= out_shape[d];
      strides.back() = in_strides[d];
      continue;
    }
    shape.push_back(out_shape[d]);
    strides.push_back(in_strides[d]);
  }
  if (shape.empty()) {
    shape.push_back(1);
    strides.push_back(1);
  }
  visit_element_size(element_bytes, [&](auto typed) {
    using T = decltype(typed);
    copy_typed<T>(shape, strides, in_offset, static_cast<const T*>(in), static_cast<T*>(out),
                  threads);
  });
}

void table_copy(std::size_t element_bytes, std::span<const int64_t> in_shape,
                const std::vector<std::vector<int64_t>>& tables, std::span<const std::byte> fill,
                const void* in, void* out, int threads) {
  visit_element_size(element_bytes, [&](auto typed) {
    using T = decltype(typed);
    T fill_value{};
    if (fill.size() == sizeof(T)) std::memcpy(&fill_value, fill.data(), sizeof(T));
    table_copy_typed<T>(in_shape, tables, fill_value, static_cast<const T*>(in),
                        static_cast<T*>(out), threads);
  });
}

void copy_unless_aliased(const Tensor& from, Tensor& to) {
  if (from.raw() == to.raw()) return;
  std::size_t bytes = std::min(from.byte_size(), to.byte_size());
  if (bytes > 0) std::memmove(to.raw(), from.raw(), bytes);
}

}  // namespace cleave::shape
