// Runtime tensors: aligned storage, plain views and conversions used by tools and tests.
#include "runtime/tensor.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "support/half_float.h"

namespace cleave {

namespace {
constexpr std::size_t kAlignment = 64;
}

Buffer::Buffer(std::size_t bytes, Fill fill) : size_(bytes) {
  std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
  if (!data_) throw Error(fmt::format("out of memory allocating {} bytes", bytes));
  if (fill == Fill::kZeros) std::memset(data_, 0, rounded);
}

std::unique_ptr<Buffer> Buffer::borrowed(std::byte* data, std::size_t bytes) {
  std::unique_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = data;
  buffer->size_ = bytes;
  buffer->owned_ = false;
  return buffer;
}

Buffer::~Buffer() {
  if (owned_) std::free(data_);
}

std::size_t plain_byte_size(DataType dtype, std::span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("negative dimension {} in a tensor shape", d));
    if (d != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d) {
      throw Error(
          fmt::format("the element count of shape [{}] overflows int64", fmt::join(shape, ",")));
    }
    count *= static_cast<uint64_t>(d);
  }
  std::size_t size = element_size(dtype);
  if (size == 0)
    throw Error(
        fmt::format("tensors of type {} are not supported by the runtime", dtype_name(dtype)));
  if (count > std::numeric_limits<std::size_t>::max() / size)
    throw Error(fmt::format("tensor byte size overflows: shape [{}] of {} ({} bytes each)",
                            fmt::join(shape, ","), dtype_name(dtype), size));
  return count * size;
}

Tensor Tensor::allocate(DataType dtype, std::vector<int64_t> shape) {
  std::size_t bytes = plain_byte_size(dtype, shape);
  return view(dtype, std::move(shape), std::make_shared<Buffer>(bytes));
}

Tensor Tensor::allocate_uninitialised(DataType dtype, std::vector<int64_t> shape) {
  std::size_t bytes = plain_byte_size(dtype, shape);
  return view(dtype, std::move(shape),
              std::make_shared<Buffer>(bytes, Buffer::Fill::kUninitialised));
}

Tensor Tensor::borrow(DataType dtype, std::vector<int64_t> shape, const void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = const_cast<void*>(data);
  return t;
}

Tensor Tensor::view(DataType dtype, std::vector<int64_t> shape, std::shared_ptr<Buffer> storage,
                    std::size_t offset) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = storage->data() + offset;
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::from_data(const TensorData& data) {
  Tensor t = allocate(data.dtype, data.dims);
  if (data.bytes) {
    if (data.bytes->size() != t.byte_size()) {
      throw Error(fmt::format("constant tensor holds {} bytes, its shape {} needs {}",
                              data.bytes->size(), t.describe(), t.byte_size()));
    }
    // An empty tensor has no bytes to copy, and memcpy from a null pointer is undefined.
    if (!data.bytes->empty()) std::memcpy(t.raw(), data.bytes->data(), data.bytes->size());
  }
  return t;
}

int64_t Tensor::element_count() const {
  int64_t count = 1;
  for (int64_t d : shape_) count *= d;
  return count;
}

std::size_t Tensor::byte_size() const {
  if (layout_) return layout_->get_size();
  return plain_byte_size(dtype_, shape_);
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> strides(shape_.size(), 1);
  for (std::size_t i = shape_.size(); i-- > 1;) strides[i - 1] = strides[i] * shape_[i];
  return strides;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out;
  out.reserve(element_count());
  if (dtype_ == DataType::kInt64) {
    for (int64_t v : values<int64_t>()) out.push_back(v);
  } else if (dtype_ == DataType::kInt32) {
    for (int32_t v : values<int32_t>()) out.push_back(v);
  } else {
    throw Error(fmt::format("expected an int32 or int64 tensor, got {}", describe()));
  }
  return out;
}

std::vector<double> Tensor::to_double_vector() const {
  if (is_blocked()) throw Error("to_double_vector on a blocked tensor");
  std::vector<double> out;
  out.reserve(element_count());
  auto copy = [&](auto typed) {
    using T = decltype(typed);
    for (T v : values<T>()) out.push_back(static_cast<double>(v));
  };
  switch (dtype_) {
    case DataType::kFloat:
      copy(float{});
      break;
    case DataType::kDouble:
      copy(double{});
      break;
    case DataType::kInt64:
      copy(int64_t{});
      break;
    case DataType::kInt32:
      copy(int32_t{});
      break;
    case DataType::kInt16:
      copy(int16_t{});
      break;
    case DataType::kInt8:
      copy(int8_t{});
      break;
    case DataType::kUInt8:
    case DataType::kBool:
      copy(uint8_t{});
      break;
    case DataType::kUInt16:
      copy(uint16_t{});
      break;
    case DataType::kUInt32:
      copy(uint32_t{});
      break;
    case DataType::kUInt64:
      copy(uint64_t{});
      break;
    case DataType::kFloat16:
      for (uint16_t v : values<uint16_t>()) out.push_back(half_to_float(v));
      break;
    case DataType::kBFloat16:
      for (uint16_t v : values<uint16_t>()) out.push_back(bfloat16_to_float(v));
      break;
    default:
      throw Error(fmt::format("cannot convert a {} tensor to numbers", dtype_name(dtype_)));
  }
  return out;
}

std::string Tensor::describe() const {
  return fmt::format("{}[{}]{}", dtype_name(dtype_), fmt::join(shape_, ","),
                     is_blocked() ? " (blocked)" : "");
}

}  // namespace cleave
