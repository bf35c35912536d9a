// Runtime tensors: element type, shape, plain or oneDNN-blocked layout, owned or borrowed bytes.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// Bytes with 64-byte alignment (what AVX-512 kernels want), owned by whoever holds the pointer.
class Buffer {
 public:
  /// What a new buffer holds: zeros, or whatever the allocator left (for a writer that sets
  /// every byte before anyone reads one: filling megabytes that are then overwritten costs a
  /// page fault and a memset per page).
  enum class Fill { kZeros, kUninitialised };
  explicit Buffer(std::size_t bytes, Fill fill = Fill::kZeros);
  /// `bytes` at `data`, which someone else owns and keeps alive (a slice of an arena).
  static std::unique_ptr<Buffer> borrowed(std::byte* data, std::size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Buffer() = default;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool owned_ = true;
};

/// A tensor. Plain tensors are dense row-major (strides follow from the shape). A tensor
/// whose `layout` is set holds float data in that oneDNN memory layout (e.g. nChw16c), which
/// only oneDNN kernels that declare they accept it may read; the executor reorders to plain
/// for everyone else.
class Tensor {
 public:
  Tensor() = default;
  /// Fresh zeroed storage for a plain tensor.
  static Tensor allocate(DataType dtype, std::vector<int64_t> shape);
  /// Fresh storage left as the allocator gave it, for a caller that writes every element.
  static Tensor allocate_uninitialised(DataType dtype, std::vector<int64_t> shape);
  /// Plain tensor over existing bytes that outlive it (initializers, caller buffers).
  static Tensor borrow(DataType dtype, std::vector<int64_t> shape, const void* data);
  /// Plain tensor sharing a storage (and keeping it alive), at a byte offset.
  static Tensor view(DataType dtype, std::vector<int64_t> shape, std::shared_ptr<Buffer> storage,
                     std::size_t offset = 0);
  /// Copies an initializer's bytes into a plain tensor (borrowing would tie lifetimes).
  static Tensor from_data(const TensorData& data);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  int64_t dim(std::size_t axis) const { return shape_.at(axis); }
  int64_t element_count() const;
  /// Bytes of the data: element_count × element size for plain tensors, the oneDNN layout's
  /// size (with padding) for blocked ones.
  std::size_t byte_size() const;
  std::vector<int64_t> strides() const;  ///< In elements, row-major.

  bool is_blocked() const { return layout_.has_value(); }
  const std::optional<dnnl::memory::desc>& layout() const { return layout_; }
  /// Sets a oneDNN layout for the same logical shape; the storage must be large enough.
  void set_layout(std::optional<dnnl::memory::desc> layout) { layout_ = std::move(layout); }

  bool empty() const { return data_ == nullptr && element_count() != 0; }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<std::size_t>(element_count())};
  }
  const std::shared_ptr<Buffer>& storage() const { return storage_; }

  /// Integer contents of a small shape-like input (int32 or int64), as int64.
  std::vector<int64_t> to_int64_vector() const;
  /// Float contents converted to double (float, double, ints, bool); for tests and tools.
  std::vector<double> to_double_vector() const;
  std::string describe() const;  ///< "f32[1,3,224,224]"

 private:
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> shape_;
  std::shared_ptr<Buffer> storage_;  // Null for borrowed tensors.
  void* data_ = nullptr;
  std::optional<dnnl::memory::desc> layout_;
};

/// Bytes of a plain tensor of this type and shape; throws Error on int64 overflow.
std::size_t plain_byte_size(DataType dtype, std::span<const int64_t> shape);

}  // namespace cleave
