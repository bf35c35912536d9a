// The f32 route of int8 matrix products: exact where every partial sum is an integer f32 holds.
#include "runtime/kernels/math/f32_int8_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/nn/f32_int8_conv.h"
#include "runtime/kernels/staging.h"

namespace cleave::quantize_detail {

namespace {

using dnnl::memory;

// From this many elements the conversions run on the node's team (f32_int8_conv.cc's).
constexpr int64_t kOnTeam = 4096;

// The weights [K, N] less their column's zero point, as f32; empty where a column's sums could
// pass 2^24 with data deviating by up to `largest`.
template <typename T>
std::vector<float> centred_columns(const T* b, int64_t k, int64_t n,
                                   const std::vector<int32_t>& zero, int64_t largest) {
  std::vector<float> out(static_cast<std::size_t>(k * n));
  std::vector<int64_t> magnitude(static_cast<std::size_t>(n), 0);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const int32_t value = static_cast<int32_t>(b[r * n + c]) - zero[static_cast<std::size_t>(c)];
      out[static_cast<std::size_t>(r * n + c)] = static_cast<float>(value);
      magnitude[static_cast<std::size_t>(c)] += std::abs(value);
    }
  }
  for (int64_t m : magnitude) {
    if (largest * m >= kExactF32Integers) return {};
  }
  return out;
}

class F32Int8Matmul final : public Kernel {
 public:
  F32Int8Matmul(const KernelContext& context, int64_t rows, int64_t k, int64_t n,
                const std::vector<int64_t>& output_shape, const F32MatmulOperands& at,
                int32_t a_zero, const std::vector<float>& weights)
      : at_(at),
        a_zero_(static_cast<float>(a_zero)),
        data_type_(context.input(at.a).dtype()),
        rows_(rows),
        k_(k),
        n_(n),
        threads_(context.threads) {
    const memory::desc src = plain_desc(std::vector<int64_t>{rows, k});
    const memory::desc dst = plain_desc(std::vector<int64_t>{rows, n});
    const memory::desc packed({k, n}, memory::data_type::f32, memory::format_tag::any);
    const dnnl::matmul::desc op(src, packed, dst);
    const dnnl::matmul::primitive_desc descriptor(op, kernel_attr(), context.engine);
    step_ = DnnlStep(dnnl::matmul(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, src);
    step_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    step_.declare(DNNL_ARG_DST, dst);
    weights_ = pack_constant(weights.data(), plain_desc(std::vector<int64_t>{k, n}),
                             descriptor.weights_desc(), context.engine);
    spec_ = elementwise::plain_output(
        at.y_scale ? requantized_type(context, *at.y_scale) : DataType::kInt32, output_shape);
  }

  bool usable() const { return !step_.implementation().starts_with("ref"); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override {
    return step_.implementation() + " (int8 as exact f32)";
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const std::size_t src_bytes = static_cast<std::size_t>(rows_ * k_) * sizeof(float);
    const std::size_t dst_bytes = static_cast<std::size_t>(rows_ * n_) * sizeof(float);
    auto* src = reinterpret_cast<float*>(staging_buffer(StagingSlot::kRewrittenInput, src_bytes));
    auto* dst = reinterpret_cast<float*>(staging_buffer(StagingSlot::kFirstSums, dst_bytes));
    const Tensor& a = *inputs[at_.a];
    const float zero = a_zero_;
    const auto convert = [&](const auto* from) {
      elementwise::parallel_for(
          rows_ * k_, threads_,
          [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) src[i] = static_cast<float>(from[i]) - zero;
          },
          kOnTeam);
    };
    if (data_type_ == DataType::kUInt8) {
      convert(a.data<uint8_t>());
    } else {
      convert(a.data<int8_t>());
    }
    step_.set(DNNL_ARG_SRC, src);
    step_.set(DNNL_ARG_WEIGHTS, weights_->data());
    step_.set(DNNL_ARG_DST, dst);
    step_.execute(stream);
    stream.wait();
    write_sums(inputs, dst, *outputs[0]);
  }

 private:
  // The f32 sums are integers: converted exactly, then written as the int8 path writes its
  // int32 sums (with the bias, requantized).
  void write_sums(const std::vector<const Tensor*>& inputs, const float* dst, Tensor& output) {
    const int64_t count = rows_ * n_;
    const int32_t* bias = at_.bias ? inputs[*at_.bias]->data<int32_t>() : nullptr;
    if (!at_.y_scale) {
      int32_t* out = output.data<int32_t>();
      elementwise::parallel_for(
          count, threads_,
          [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
              out[i] = static_cast<int32_t>(dst[i]) + (bias ? bias[i % n_] : 0);
            }
          },
          kOnTeam);
      return;
    }
    write_requantized_f32(requantize_of(inputs, n_, *at_.y_scale), dst, count, n_, 1, output.raw(),
                          bias, threads_);
  }

  F32MatmulOperands at_;
  float a_zero_;
  DataType data_type_;
  int64_t rows_, k_, n_;
  int threads_;
  DnnlStep step_;
  std::shared_ptr<Buffer> weights_;
  OutputSpec spec_;
};

}  // namespace

std::unique_ptr<Kernel> make_f32_int8_matmul(const KernelContext& context, int64_t rows, int64_t k,
                                             int64_t n, const std::vector<int64_t>& output_shape,
                                             const F32MatmulOperands& at) {
  const Tensor& b = context.input(at.b);
  if (b.rank() != 2 || !context.constant[at.b] || !all_constant(context, {at.a_zero, at.b_zero})) {
    return nullptr;
  }
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  const int32_t a_zero = zero_point_values(optional(at.a_zero))[0];
  const std::vector<int32_t> b_zero = per_channel(zero_point_values(optional(at.b_zero)), n);
  const int64_t largest = largest_deviation(context.input(at.a).dtype(), a_zero);
  const std::vector<float> weights = b.dtype() == DataType::kUInt8
                                         ? centred_columns(b.data<uint8_t>(), k, n, b_zero, largest)
                                         : centred_columns(b.data<int8_t>(), k, n, b_zero, largest);
  if (weights.empty()) return nullptr;
  try {
    auto kernel =
        std::make_unique<F32Int8Matmul>(context, rows, k, n, output_shape, at, a_zero, weights);
    if (!kernel->usable()) return nullptr;
    return kernel;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace cleave::quantize_detail
