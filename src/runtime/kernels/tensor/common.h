// Shared pieces of the plain C++ shape and index kernels: axes, shape inputs, N-D copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave::shape {

/// Longest axis that Pad and Resize build per-index tables for (their outputs could not be
/// allocated anyway beyond it); longer requests are errors rather than allocation failures.
inline constexpr int64_t kMaxAxisLength = int64_t{1} << 31;

/// Every element type of a fixed size: what kernels that only move bytes accept.
extern const std::vector<DataType> kMovableTypes;
/// Real numeric types (and bool) that kernels computing on values handle.
extern const std::vector<DataType> kNumericTypes;

/// A prepared kernel whose work is one function. It also remembers the values of the
/// non-constant inputs that fixed its output shapes (Reshape's shape, Slice's starts) and
/// refuses to run when they change, since the shapes it announced would then be wrong.
class FunctionKernel : public Kernel {
 public:
  using Body = std::function<void(const std::vector<const Tensor*>&, const std::vector<Tensor*>&)>;
  /// A body that also runs oneDNN primitives (layout reorders) on the executor's stream.
  using StreamBody = std::function<void(const std::vector<const Tensor*>&,
                                        const std::vector<Tensor*>&, dnnl::stream&)>;
  FunctionKernel(const KernelContext& context, std::vector<OutputSpec> specs, Body body,
                 std::vector<std::size_t> shape_inputs = {});
  FunctionKernel(const KernelContext& context, std::vector<OutputSpec> specs, StreamBody body,
                 std::vector<std::size_t> shape_inputs = {});
  std::vector<OutputSpec> output_specs() const override { return specs_; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override;
  bool prepared_for_values(const std::vector<const Tensor*>& inputs) const override;

 private:
  std::string where_;
  std::vector<OutputSpec> specs_;
  StreamBody body_;
  std::vector<std::pair<std::size_t, std::vector<double>>> prepared_values_;
};

/// A kernel whose output shapes follow the values of its data inputs (NonZero, Compress,
/// Unique, NonMaxSuppression): the result is computed when the node is prepared, which happens
/// once per run, and run() copies it into the buffers sized for it.
class ComputedKernel : public Kernel {
 public:
  explicit ComputedKernel(std::vector<Tensor> results) : results_(std::move(results)) {}
  std::vector<OutputSpec> output_specs() const override;
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override;
  /// False once the kernel has run: the next run's values may give other shapes.
  bool prepared_for_values(const std::vector<const Tensor*>& inputs) const override;

 private:
  std::vector<Tensor> results_;
  bool ran_ = false;
};

/// Wraps a body into a FunctionKernel (the usual return of a factory).
std::unique_ptr<Kernel> make_kernel(const KernelContext& context, std::vector<OutputSpec> specs,
                                    FunctionKernel::Body body,
                                    std::vector<std::size_t> shape_inputs = {});
std::unique_ptr<Kernel> make_kernel(const KernelContext& context, std::vector<OutputSpec> specs,
                                    FunctionKernel::StreamBody body,
                                    std::vector<std::size_t> shape_inputs = {});

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelContext&)>;
/// Registers `create` for every opset of a standard-domain op (kernels branch on the opset).
void add_kernel(KernelRegistry& registry, std::string op_type, KernelFactory create,
                std::vector<DataType> dtypes = kMovableTypes);

/// Maps a possibly negative axis into [0, rank); throws Error naming the node otherwise.
int64_t normalize_axis(const KernelContext& context, int64_t axis, int64_t rank,
                       std::string_view what = "axis");
/// Normalizes a list of axes against `rank` and rejects duplicates.
std::vector<int64_t> normalize_axes(const KernelContext& context, std::vector<int64_t> axes,
                                    int64_t rank, std::string_view what = "axes");

/// Integer contents of input `index` (int32 or int64), with an error naming the node.
std::vector<int64_t> int_input(const KernelContext& context, std::size_t index,
                               std::string_view what);
/// A single integer from a scalar or one-element input.
int64_t scalar_int_input(const KernelContext& context, std::size_t index, std::string_view what);
/// Float contents of input `index` (any real type).
std::vector<double> real_input(const KernelContext& context, std::size_t index,
                               std::string_view what);

int64_t product(std::span<const int64_t> dims);
std::vector<int64_t> row_major_strides(std::span<const int64_t> shape);
std::string format_dims(std::span<const int64_t> dims);

/// The bytes of one element of `type` holding `value` (converted as static_cast would).
std::vector<std::byte> encode_scalar(const KernelContext& context, DataType type, double value);

/// Copies an N-D view: out[i] = in[offset + Σ i_d · in_strides[d]] with `out` dense row-major.
/// Strides are in elements and may be zero (broadcast) or negative (reversed slices).
void strided_copy(std::size_t element_bytes, std::span<const int64_t> out_shape,
                  std::span<const int64_t> in_strides, int64_t in_offset, const void* in, void* out,
                  int threads = 1);

/// Copies through per-axis index tables: out[i] = in[table_0[i_0], ..., table_r[i_r]] where a
/// table entry of -1 means "outside": that element gets `fill` (one element's bytes).
/// `in_shape` is the source shape; every table entry must be -1 or inside it.
void table_copy(std::size_t element_bytes, std::span<const int64_t> in_shape,
                const std::vector<std::vector<int64_t>>& tables, std::span<const std::byte> fill,
                const void* in, void* out, int threads = 1);

/// Copies `from` into `to` unless the executor already made them share bytes.
void copy_unless_aliased(const Tensor& from, Tensor& to);

/// Calls `visit(T{})` with the C++ type of a real numeric `type`; UnsupportedError otherwise.
template <typename Visitor>
void visit_real_type(const KernelContext& context, DataType type, Visitor&& visit);

[[noreturn]] void throw_unsupported_type(const KernelContext& context, DataType type);

template <typename Visitor>
void visit_real_type(const KernelContext& context, DataType type, Visitor&& visit) {
  switch (type) {
    case DataType::kFloat:
      visit(float{});
      return;
    case DataType::kDouble:
      visit(double{});
      return;
    case DataType::kInt8:
      visit(int8_t{});
      return;
    case DataType::kInt16:
      visit(int16_t{});
      return;
    case DataType::kInt32:
      visit(int32_t{});
      return;
    case DataType::kInt64:
      visit(int64_t{});
      return;
    case DataType::kUInt8:
      visit(uint8_t{});
      return;
    case DataType::kUInt16:
      visit(uint16_t{});
      return;
    case DataType::kUInt32:
      visit(uint32_t{});
      return;
    case DataType::kUInt64:
      visit(uint64_t{});
      return;
    default:
      throw_unsupported_type(context, type);
  }
}

}  // namespace cleave::shape
