// Kernels computed from shapes and attributes: Shape, Size, Constant, ConstantOfShape, Range,
// EyeLike, the window functions (Hann, Hamming, Blackman) and MelWeightMatrix.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// A kernel writing fixed bytes, computed at preparation, into its single output.
// `shape_inputs`: inputs whose values decided the bytes (a window's size).
std::unique_ptr<Kernel> fixed_output(const KernelContext& context, DataType dtype,
                                     std::vector<int64_t> shape, std::vector<std::byte> bytes,
                                     std::vector<std::size_t> shape_inputs = {}) {
  auto shared = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  return make_kernel(
      context, {OutputSpec{dtype, std::move(shape), std::nullopt, -1}},
      [shared](const std::vector<const Tensor*>&, const std::vector<Tensor*>& outputs) {
        if (!shared->empty()) {
          std::memcpy(outputs[0]->raw(), shared->data(), shared->size());
        }
      },
      std::move(shape_inputs));
}

std::vector<std::byte> int64_bytes(const std::vector<int64_t>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::unique_ptr<Kernel> create_shape(const KernelContext& context) {
  const std::vector<int64_t>& dims = context.input(0).shape();
  auto rank = static_cast<int64_t>(dims.size());
  auto clamp_bound = [rank](int64_t bound) {
    if (bound < 0) bound += rank;
    return std::clamp<int64_t>(bound, 0, rank);
  };
  int64_t start = 0, end = rank;
  if (context.opset >= 15) {
    start = clamp_bound(context.node.int_attribute("start", 0));
    end = clamp_bound(context.node.int_attribute("end", rank));
  }
  std::vector<int64_t> selected;
  for (int64_t d = start; d < end; ++d) selected.push_back(dims[d]);
  std::vector<int64_t> shape = {static_cast<int64_t>(selected.size())};
  return fixed_output(context, DataType::kInt64, shape, int64_bytes(selected));
}

std::unique_ptr<Kernel> create_size(const KernelContext& context) {
  return fixed_output(context, DataType::kInt64, {},
                      int64_bytes({context.input(0).element_count()}));
}

std::vector<std::byte> checked_bytes(const KernelContext& context, const TensorData& data,
                                     std::string_view attribute) {
  if (data.dtype == DataType::kString || data.strings) {
    throw UnsupportedError(fmt::format("{}: string constants are not supported", context.where()));
  }
  std::size_t size = element_size(data.dtype);
  if (size == 0) {
    throw UnsupportedError(fmt::format("{}: constants of type {} are not supported",
                                       context.where(), dtype_name(data.dtype)));
  }
  std::size_t expected = plain_byte_size(data.dtype, data.dims);
  std::size_t held = data.bytes ? data.bytes->size() : 0;
  if (held != expected) {
    throw Error(fmt::format("{}: attribute '{}' holds {} bytes, its shape {} of {} needs {}",
                            context.where(), attribute, held, format_dims(data.dims),
                            dtype_name(data.dtype), expected));
  }
  return data.bytes ? *data.bytes : std::vector<std::byte>{};
}

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::unique_ptr<Kernel> create_constant(const KernelContext& context) {
  const Node& node = context.node;
  for (const char* text : {"value_string", "value_strings"}) {
    if (node.attribute(text)) {
      throw UnsupportedError(
          fmt::format("{}: string constants are not supported", context.where()));
    }
  }
  if (node.attribute("sparse_value")) {
    throw UnsupportedError(fmt::format("{}: sparse constants are not supported", context.where()));
  }
  if (const Attribute* value = node.attribute("value")) {
    if (value->kind != AttributeKind::kTensor) {
      throw Error(fmt::format("{}: attribute 'value' should be a tensor, is {}", context.where(),
                              value->kind_name()));
    }
    return fixed_output(context, value->t.dtype, value->t.dims,
                        checked_bytes(context, value->t, "value"));
  }
  if (const Attribute* value = node.attribute("value_float")) {
    std::vector<float> values = {value->kind == AttributeKind::kInt ? static_cast<float>(value->i)
                                                                    : value->f};
    return fixed_output(context, DataType::kFloat, {}, bytes_of(values));
  }
  if (const Attribute* value = node.attribute("value_floats")) {
    std::vector<int64_t> shape = {static_cast<int64_t>(value->floats.size())};
    return fixed_output(context, DataType::kFloat, shape, bytes_of(value->floats));
  }
  if (node.attribute("value_int")) {
    std::vector<int64_t> values = {node.int_attribute("value_int", 0)};
    return fixed_output(context, DataType::kInt64, {}, bytes_of(values));
  }
  if (node.attribute("value_ints")) {
    std::vector<int64_t> values = node.ints_attribute("value_ints");
    std::vector<int64_t> shape = {static_cast<int64_t>(values.size())};
    return fixed_output(context, DataType::kInt64, shape, bytes_of(values));
  }
  throw Error(
      fmt::format("{}: Constant has none of the attributes value, value_float(s), "
                  "value_int(s)",
                  context.where()));
}

std::unique_ptr<Kernel> create_constant_of_shape(const KernelContext& context) {
  std::vector<int64_t> shape = int_input(context, 0, "shape");
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(fmt::format("{}: shape {} has a negative dimension", context.where(),
                              format_dims(shape)));
    }
  }
  DataType dtype = DataType::kFloat;
  std::vector<std::byte> element(sizeof(float), std::byte{0});
  if (const Attribute* value = context.node.attribute("value")) {
    if (value->kind != AttributeKind::kTensor || value->t.element_count() != 1) {
      throw Error(
          fmt::format("{}: attribute 'value' should be a one-element tensor", context.where()));
    }
    dtype = value->t.dtype;
    element = checked_bytes(context, value->t, "value");
  }
  plain_byte_size(dtype, shape);  // Rejects shapes whose size overflows before anything runs.
  return make_kernel(
      context, {OutputSpec{dtype, shape, std::nullopt, -1}},
      [element](const std::vector<const Tensor*>&, const std::vector<Tensor*>& outputs) {
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        int64_t count = outputs[0]->element_count();
        bool zero = std::all_of(element.begin(), element.end(),
                                [](std::byte b) { return b == std::byte{0}; });
        if (zero) {
          std::memset(target, 0, static_cast<std::size_t>(count) * element.size());
          return;
        }
        for (int64_t i = 0; i < count; ++i) {
          std::memcpy(target + i * element.size(), element.data(), element.size());
        }
      },
      {0});
}

// Number of elements of a Range, or an Error naming the node.
template <typename T>
int64_t range_count(const KernelContext& context, T start, T limit, T delta) {
  if (delta == 0) throw Error(fmt::format("{}: delta is zero", context.where()));
  if constexpr (std::is_floating_point_v<T>) {
    double count = std::ceil((static_cast<double>(limit) - start) / delta);
    if (!std::isfinite(count) || count > static_cast<double>(std::numeric_limits<int32_t>::max())) {
      throw Error(fmt::format("{}: range from {} to {} by {} is not a finite, reasonable length",
                              context.where(), start, limit, delta));
    }
    return std::max<int64_t>(0, static_cast<int64_t>(count));
  } else {
    __int128 difference = static_cast<__int128>(limit) - static_cast<__int128>(start);
    __int128 count = difference / delta;
    if (difference % delta != 0 && ((difference > 0) == (delta > 0))) ++count;
    if (count > std::numeric_limits<int64_t>::max()) {
      throw Error(fmt::format("{}: range is too long", context.where()));
    }
    return std::max<int64_t>(0, static_cast<int64_t>(count));
  }
}

std::unique_ptr<Kernel> create_range(const KernelContext& context) {
  const Tensor& start = context.input(0);
  for (std::size_t i = 0; i < 3; ++i) {
    const Tensor& input = context.input(i);
    if (input.dtype() != start.dtype() || input.element_count() != 1) {
      throw Error(
          fmt::format("{}: start, limit and delta should be one-element tensors of one "
                      "type, input {} is {}",
                      context.where(), i, input.describe()));
    }
  }
  DataType dtype = start.dtype();
  std::unique_ptr<Kernel> kernel;
  visit_real_type(context, dtype, [&](auto typed) {
    using T = decltype(typed);
    T first = context.input(0).data<T>()[0];
    T delta = context.input(2).data<T>()[0];
    int64_t count = range_count<T>(context, first, context.input(1).data<T>()[0], delta);
    kernel = make_kernel(context, {OutputSpec{dtype, {count}, std::nullopt, -1}},
                         [first, delta, count](const std::vector<const Tensor*>&,
                                               const std::vector<Tensor*>& outputs) {
                           T* target = outputs[0]->data<T>();
                           for (int64_t i = 0; i < count; ++i) {
                             if constexpr (std::is_floating_point_v<T>) {
                               target[i] = static_cast<T>(first + static_cast<T>(i) * delta);
                             } else {
                               // Exact in 128 bits; every value lies between start and limit.
                               target[i] = static_cast<T>(static_cast<__int128>(first) +
                                                          static_cast<__int128>(i) * delta);
                             }
                           }
                         },
                         {0, 1, 2});
  });
  return kernel;
}

// The element type an attribute names (EyeLike's dtype, a window's output_datatype).
DataType attribute_type(const KernelContext& context, std::string_view key, DataType fallback) {
  int64_t number = context.node.int_attribute(key, static_cast<int64_t>(fallback));
  if (number <= 0 || number > static_cast<int64_t>(DataType::kBFloat16)) {
    throw Error(fmt::format("{}: {} {} is not an ONNX element type", context.where(), key, number));
  }
  return static_cast<DataType>(number);
}

// Writes `values` into a tensor of `type` (a real type, or bool for non-zero).
std::vector<std::byte> encode_values(const KernelContext& context, DataType type,
                                     const std::vector<double>& values) {
  std::vector<std::byte> bytes(values.size() * element_size(type));
  if (type == DataType::kBool) {
    for (std::size_t i = 0; i < values.size(); ++i) bytes[i] = std::byte{values[i] != 0};
    return bytes;
  }
  visit_real_type(context, type, [&](auto typed) {
    using T = decltype(typed);
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto value = static_cast<T>(values[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
    }
  });
  return bytes;
}

std::unique_ptr<Kernel> create_eye_like(const KernelContext& context) {
  const Tensor& input = context.input(0);
  if (input.rank() != 2) {
    throw Error(
        fmt::format("{}: the input should be 2-D, is {}", context.where(), input.describe()));
  }
  DataType type = attribute_type(context, "dtype", input.dtype());
  int64_t rows = input.dim(0), columns = input.dim(1), k = context.node.int_attribute("k", 0);
  std::vector<double> values(static_cast<std::size_t>(rows * columns), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    if (r + k >= 0 && r + k < columns) values[r * columns + r + k] = 1.0;
  }
  return fixed_output(context, type, input.shape(), encode_values(context, type, values));
}

// Generalised cosine windows: w[n] = Σ_j (-1)^j a_j cos(2πjn / D), D = N (periodic) or N - 1.
std::unique_ptr<Kernel> create_window(const KernelContext& context,
                                      std::vector<double> coefficients) {
  int64_t size = scalar_int_input(context, 0, "size");
  if (size < 0 || size > kMaxAxisLength) {
    throw Error(fmt::format("{}: size {} should be between 0 and {}", context.where(), size,
                            kMaxAxisLength));
  }
  DataType type = attribute_type(context, "output_datatype", DataType::kFloat);
  bool periodic = context.node.int_attribute("periodic", 1) != 0;
  double denominator = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> values(static_cast<std::size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double sum = 0, sign = 1;
    for (std::size_t j = 0; j < coefficients.size(); ++j, sign = -sign) {
      sum += sign * coefficients[j] * std::cos(2 * M_PI * static_cast<double>(j * n) / denominator);
    }
    values[n] = denominator > 0 ? sum : 1.0;
  }
  return fixed_output(context, type, {size}, encode_values(context, type, values), {0});
}

// Triangular mel filters over the DFT bins, as the ONNX reference builds them: edges evenly
// spaced in mel, snapped down to whole bins.
std::unique_ptr<Kernel> create_mel_weight_matrix(const KernelContext& context) {
  std::vector<double> scalars;
  for (std::size_t i = 0; i < 5; ++i) {
    std::vector<double> value = real_input(context, i, "a scalar input");
    if (value.size() != 1) {
      throw Error(fmt::format("{}: input {} should be a scalar", context.where(), i));
    }
    scalars.push_back(value[0]);
  }
  auto bins = static_cast<int64_t>(scalars[0]), dft_length = static_cast<int64_t>(scalars[1]);
  auto sample_rate = static_cast<int64_t>(scalars[2]);
  if (bins < 1 || dft_length < 1 || sample_rate < 1 || bins > kMaxAxisLength ||
      dft_length > kMaxAxisLength) {
    throw Error(
        fmt::format("{}: num_mel_bins {}, dft_length {} and sample_rate {} should be "
                    "positive",
                    context.where(), bins, dft_length, sample_rate));
  }
  auto mel = [](double hertz) { return 2595.0 * std::log10(1.0 + hertz / 700.0); };
  double low = mel(scalars[3]), step = (mel(scalars[4]) - low) / static_cast<double>(bins + 2);
  std::vector<int64_t> edges(static_cast<std::size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hertz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low) / 2595.0) - 1);
    edges[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hertz / static_cast<double>(sample_rate)));
  }
  int64_t spectrum = dft_length / 2 + 1;
  std::vector<double> values(static_cast<std::size_t>(spectrum * bins), 0.0);
  auto set = [&](int64_t row, int64_t column, double value) {
    if (row >= 0 && row < spectrum) values[row * bins + column] = value;
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = left; j <= center; ++j) {
        set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
      }
    }
    for (int64_t j = center; j < right; ++j) {
      set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
    }
  }
  DataType type = attribute_type(context, "output_datatype", DataType::kFloat);
  return fixed_output(context, type, {spectrum, bins}, encode_values(context, type, values),
                      {0, 1, 2, 3, 4});
}

}  // namespace

void register_source_kernels(KernelRegistry& registry) {
  // Shape and Size read only the logical shape, which a blocked tensor keeps: no reorder.
  for (const char* op_type : {"Shape", "Size"}) {
    KernelInfo info;
    info.op_type = op_type;
    info.dtypes = kMovableTypes;
    info.accepts_blocked = [](std::size_t input) { return input == 0; };
    info.create = std::string_view(op_type) == "Shape" ? create_shape : create_size;
    registry.add(std::move(info));
  }
  add_kernel(registry, "Constant", create_constant);
  add_kernel(registry, "ConstantOfShape", create_constant_of_shape,
             {DataType::kInt64, DataType::kInt32});
  add_kernel(
      registry, "Range", create_range,
      {DataType::kFloat, DataType::kDouble, DataType::kInt16, DataType::kInt32, DataType::kInt64});
  add_kernel(registry, "EyeLike", create_eye_like, kNumericTypes);
  const std::vector<DataType> sizes = {DataType::kInt32, DataType::kInt64};
  add_kernel(
      registry, "HannWindow",
      [](const KernelContext& context) {
        return create_window(context, {0.5, 0.5});
      },
      sizes);
  add_kernel(
      registry, "HammingWindow",
      [](const KernelContext& context) {
        return create_window(context, {25.0 / 46, 21.0 / 46});
      },
      sizes);
  add_kernel(registry, "MelWeightMatrix", create_mel_weight_matrix, kNumericTypes);
  add_kernel(
      registry, "BlackmanWindow",
      [](const KernelContext& context) {
        return create_window(context, {0.42, 0.5, 0.08});
      },
      sizes);
}

}  // namespace cleave::shape
