// com.microsoft QLinearConcat, ONNX Runtime's int8 Concat, which QDQ fusion writes for
// DequantizeLinear'd inputs → Concat → QuantizeLinear: each input is copied as it is where its
// scale and zero point are the output's, else mapped through a 256-entry table.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <variant>
#include <vector>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_loops.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using dnnl::memory;

// Inputs: Y_scale, Y_zero_point, then X, X_scale, X_zero_point for each part.
constexpr std::size_t kFirstPart = 2, kPartInputs = 3;

// The output byte of each input byte: dequantized and quantized again, as ONNX Runtime's table
// (QlinearBuildLookupTable with the identity) computes it, and so the same as the
// DequantizeLinear → QuantizeLinear it replaces.
template <typename T>
std::array<T, 256> requantize_table(float x_scale, int32_t x_zero, float y_scale, int32_t y_zero) {
  std::array<T, 256> bytes;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<T>(static_cast<uint8_t>(i));
  }
  std::array<float, 256> real;
  quantize_loops::dequantize_reference(bytes.data(), x_scale, x_zero, real.data(), 256);
  std::array<T, 256> table;
  quantize_loops::quantize_reference(real.data(), y_scale, y_zero, table.data(), 256);
  return table;
}

int32_t zero_point_at(const std::vector<const Tensor*>& inputs, std::size_t i) {
  return quantize_detail::zero_point_values(i < inputs.size() ? inputs[i] : nullptr)[0];
}

// out[i] = table[in[i]]. The one-byte stores may alias anything (a char type), so every bound
// and pointer the loop reads is a local; eight loads go before their eight stores.
template <typename T>
void map_bytes(const T* table, const T* in, T* out, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    T mapped[8];
    for (int j = 0; j < 8; ++j) mapped[j] = table[static_cast<uint8_t>(in[i + j])];
    std::memcpy(out + i, mapped, sizeof mapped);
  }
  for (; i < count; ++i) out[i] = table[static_cast<uint8_t>(in[i])];
}

// Rows [begin, end) of the output: each the parts' rows side by side, copied or mapped.
template <typename T>
void concat_rows(const std::vector<const void*>& sources, const std::vector<int64_t>& part_rows,
                 const std::vector<std::optional<std::array<T, 256>>>& tables, T* out,
                 int64_t begin, int64_t end) {
  int64_t row = 0;
  for (int64_t part_row : part_rows) row += part_row;
  for (int64_t o = begin; o < end; ++o) {
    T* target = out + o * row;
    for (std::size_t k = 0; k < part_rows.size(); ++k) {
      const T* source = static_cast<const T*>(sources[k]) + o * part_rows[k];
      const int64_t count = part_rows[k];
      if (!tables[k]) {
        std::memcpy(target, source, static_cast<std::size_t>(count) * sizeof(T));
      } else {
        map_bytes(tables[k]->data(), source, target, count);
      }
      target += count;
    }
  }
}

// Whether every part is channels-last (as int8 convolutions hand their outputs on), where a
// concat of the channels puts each pixel's channel runs side by side.
bool all_channels_last(const std::vector<const Tensor*>& parts, int64_t axis,
                       memory::data_type type) {
  if (axis != 1 || parts[0]->rank() != 4) return false;
  return std::all_of(parts.begin(), parts.end(), [&](const Tensor* part) {
    return part->is_blocked() && desc_of(*part) == memory::desc(to_dnnl_dims(part->shape()), type,
                                                                memory::format_tag::acdb);
  });
}

class QLinearConcatKernel : public Kernel {
 public:
  QLinearConcatKernel(const KernelContext& context, const std::vector<const Tensor*>& parts,
                      int64_t axis) {
    const Tensor& first = *parts[0];
    const memory::data_type type = dnnl_data_type(first.dtype(), context);
    spec_.dtype = first.dtype();
    if (spec_.dtype == DataType::kInt8) tables_ = Tables<int8_t>{};
    spec_.shape = first.shape();
    spec_.shape[axis] = 0;
    for (const Tensor* part : parts) spec_.shape[axis] += part->dim(axis);
    threads_ = context.threads;
    if (context.blocked_outputs_allowed && all_channels_last(parts, axis, type)) {
      outer_ = spec_.shape[0] * spec_.shape[2] * spec_.shape[3];
      for (const Tensor* part : parts) part_rows_.push_back(part->dim(1));
      spec_.layout = recorded_layout(
          memory::desc(to_dnnl_dims(spec_.shape), type, memory::format_tag::acdb), spec_.shape);
      return;
    }
    outer_ = volume(std::span<const int64_t>(spec_.shape).first(axis));
    bool blocked = false;
    for (const Tensor* part : parts) {
      part_rows_.push_back(volume(std::span<const int64_t>(part->shape()).subspan(axis)));
      blocked = blocked || part->is_blocked();
    }
    if (blocked) plain_ = std::make_shared<elementwise::PlainInputs>(context);
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& given, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const auto& inputs = plain_ ? plain_->convert(given, stream) : given;
    std::vector<const void*> sources;
    for (std::size_t k = 0; k < part_rows_.size(); ++k) {
      sources.push_back(inputs[kFirstPart + k * kPartInputs]->raw());
    }
    if (spec_.dtype == DataType::kUInt8) {
      run_typed<uint8_t>(inputs, sources, outputs[0]->data<uint8_t>());
    } else {
      run_typed<int8_t>(inputs, sources, outputs[0]->data<int8_t>());
    }
  }

 private:
  template <typename T>
  void run_typed(const std::vector<const Tensor*>& inputs, const std::vector<const void*>& sources,
                 T* out) {
    const float y_scale = inputs[0]->data<float>()[0];
    const int32_t y_zero = zero_point_at(inputs, 1);
    // The tables of the last run's scales and zero points are kept: in the models seen they are
    // constants, so a run maps without building any (squeezenet1_1_int8 on AVX2: 16 a run).
    auto& tables = std::get<Tables<T>>(tables_);
    tables.resize(part_rows_.size());
    keys_.resize(part_rows_.size());
    int64_t row = 0;
    for (std::size_t k = 0; k < part_rows_.size(); ++k) {
      const std::size_t at = kFirstPart + k * kPartInputs;
      const TableKey key{inputs[at + 1]->data<float>()[0], zero_point_at(inputs, at + 2), y_scale,
                         y_zero};
      if (!keys_[k] || !(*keys_[k] == key)) {
        tables[k].reset();
        if (key.x_scale != y_scale || key.x_zero != y_zero) {
          tables[k] = requantize_table<T>(key.x_scale, key.x_zero, y_scale, y_zero);
        }
        keys_[k] = key;
      }
      row += part_rows_[k];
    }
    elementwise::parallel_for(
        outer_, threads_,
        [&](int64_t begin, int64_t end) {
          concat_rows(sources, part_rows_, tables, out, begin, end);
        },
        std::max<int64_t>(1, elementwise::kParallelThreshold / std::max<int64_t>(1, row)));
  }

  template <typename T>
  using Tables = std::vector<std::optional<std::array<T, 256>>>;
  struct TableKey {
    float x_scale = 0;
    int32_t x_zero = 0;
    float y_scale = 0;
    int32_t y_zero = 0;
    bool operator==(const TableKey&) const = default;
  };

  OutputSpec spec_;
  // Per part: the table of the scales and zero points in keys_ (none where they are the
  // output's).
  std::variant<Tables<uint8_t>, Tables<int8_t>> tables_;
  std::vector<std::optional<TableKey>> keys_;
  int64_t outer_ = 0;
  std::vector<int64_t> part_rows_;  // Elements of each part per output row.
  int threads_ = 1;
  // Plain copies of blocked parts outside the channels-last case.
  std::shared_ptr<elementwise::PlainInputs> plain_;
};

std::unique_ptr<Kernel> create_qlinear_concat(const KernelContext& context) {
  const std::size_t count = context.inputs.size();
  if (count < kFirstPart + kPartInputs || (count - kFirstPart) % kPartInputs != 0) {
    throw Error(
        fmt::format("{}: expected Y_scale, Y_zero_point and then (X, X_scale, "
                    "X_zero_point) per input, got {} inputs",
                    context.where(), count));
  }
  quantize_detail::check_scale(context, 0, 1, "Y_scale");
  quantize_detail::check_zero_point(context, 1, 1, "Y_zero_point");
  const Tensor& first = context.input(kFirstPart);
  quantize_detail::check_8_bit(context, first.dtype(), "the first input");
  if (first.rank() == 0) throw Error(fmt::format("{}: QLinearConcat of scalars", context.where()));
  const auto rank = static_cast<int64_t>(first.rank());
  const int64_t axis = normalized_axis(context, context.node.int_attribute("axis", 0), rank);
  std::vector<const Tensor*> parts;
  for (std::size_t at = kFirstPart; at < count; at += kPartInputs) {
    const Tensor& part = context.input(at);
    bool fits = part.rank() == first.rank() && part.dtype() == first.dtype();
    for (int64_t a = 0; fits && a < rank; ++a) fits = a == axis || part.dim(a) == first.dim(a);
    if (!fits) {
      throw Error(
          fmt::format("{}: inputs {} and {} differ in type, rank or a dim other than axis {}",
                      context.where(), first.describe(), part.describe(), axis));
    }
    quantize_detail::check_scale(context, at + 1, 1, "an input's scale");
    quantize_detail::check_zero_point(context, at + 2, 1, "an input's zero point");
    parts.push_back(&part);
  }
  return std::make_unique<QLinearConcatKernel>(context, parts, axis);
}

}  // namespace

void register_quantized_concat_kernels(KernelRegistry& registry) {
  KernelInfo info;
  info.op_type = "QLinearConcat";
  info.domain = "com.microsoft";
  info.since_opset = 1;
  info.dtypes = {DataType::kFloat};  // Of the first input, Y_scale; the parts are checked above.
  info.accepts_blocked = [](std::size_t i) {
    return i >= kFirstPart && (i - kFirstPart) % kPartInputs == 0;
  };
  info.create = create_qlinear_concat;
  registry.add(std::move(info));
}

}  // namespace cleave
