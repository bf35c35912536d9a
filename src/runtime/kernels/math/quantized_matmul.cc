// MatMulInteger and QLinearMatMul: int8 matrix products with numpy batch broadcasting, as int32
// sums or requantized to u8/i8.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/int8_implementation.h"
#include "runtime/kernels/math/f32_int8_matmul.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/math/split_weights.h"
#include "runtime/kernels/math/widened_int8.h"
#include "runtime/kernels/nn/f32_int8_conv.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using elementwise::make_kernel;
using elementwise::parallel_for;
using elementwise::plain_output;
using quantize_detail::all_constant;
using quantize_detail::check_8_bit;
using quantize_detail::check_zero_point;
using quantize_detail::per_channel;
using quantize_detail::visit_operands;
using quantize_detail::zero_point_values;

// A batched product [.., M, K] x [.., K, N] after numpy's matmul rules: 1-D operands gain a
// unit dim (dropped from the output), batch dims broadcast.
struct Product {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> a_offsets, b_offsets;  // Per output matrix, in elements.
  std::vector<int64_t> output_shape;
};

Product product_of(const KernelContext& context, const Tensor& a_tensor, const Tensor& b_tensor) {
  std::vector<int64_t> a = a_tensor.shape(), b = b_tensor.shape();
  if (a.empty() || b.empty()) {
    throw Error(fmt::format("{}: operands {} and {} must have rank 1 or more", context.where(),
                            a_tensor.describe(), b_tensor.describe()));
  }
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  Product p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k) {
    throw Error(fmt::format("{}: {} times {}: inner dims {} and {} differ", context.where(),
                            a_tensor.describe(), b_tensor.describe(), p.k, b[b.size() - 2]));
  }
  const std::vector<std::vector<int64_t>> batches = {{a.begin(), a.end() - 2},
                                                     {b.begin(), b.end() - 2}};
  const std::vector<int64_t> batch = elementwise::broadcast_shape(context, batches);
  const int64_t count = volume(batch);
  // Each operand's matrix index for each output matrix, right-aligned broadcasting.
  for (std::size_t which = 0; which < 2; ++which) {
    const std::vector<int64_t>& own = batches[which];
    std::vector<int64_t>& offsets = which == 0 ? p.a_offsets : p.b_offsets;
    const int64_t matrix = which == 0 ? p.m * p.k : p.k * p.n;
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t rest = flat, index = 0, stride = 1;
      for (std::size_t d = batch.size(); d-- > 0;) {
        const int64_t at = rest % batch[d];
        rest /= batch[d];
        const std::size_t shift = batch.size() - own.size();
        if (d < shift) continue;
        const int64_t size = own[d - shift];
        index += (size == 1 ? 0 : at) * stride;
        stride *= size;
      }
      offsets.push_back(index * matrix);
    }
  }
  p.output_shape = batch;
  if (!a_vector) p.output_shape.push_back(p.m);
  if (!b_vector) p.output_shape.push_back(p.n);
  return p;
}

// sums = bias[column] + (a - a_zero) x (b - b_zero[column]) for every output matrix (no bias:
// 0).
template <typename A, typename B>
void integer_products(const Product& p, const A* a, const B* b, int32_t a_zero,
                      const std::vector<int32_t>& b_zero, const int32_t* bias, int32_t* sums,
                      int threads) {
  const auto rows = static_cast<int64_t>(p.a_offsets.size()) * p.m;
  parallel_for(
      rows, threads,
      [&](int64_t begin, int64_t end) {
        std::vector<int32_t> b_row(static_cast<std::size_t>(p.n));
        for (int64_t row = begin; row < end; ++row) {
          const int64_t matrix = row / p.m;
          const A* a_row = a + p.a_offsets[matrix] + (row % p.m) * p.k;
          int32_t* out = sums + row * p.n;
          if (bias) {
            std::copy_n(bias, p.n, out);
          } else {
            std::fill_n(out, p.n, 0);
          }
          for (int64_t i = 0; i < p.k; ++i) {
            const int32_t left = static_cast<int32_t>(a_row[i]) - a_zero;
            if (left == 0) continue;
            const B* right = b + p.b_offsets[matrix] + i * p.n;
            for (int64_t j = 0; j < p.n; ++j) {
              out[j] += left * (static_cast<int32_t>(right[j]) - b_zero[j]);
            }
          }
        }
      },
      2);
}

// Where a node keeps its operands and zero points, its int32 bias (QGemm) and its output scale
// (the zero point follows it).
struct Operands {
  std::size_t a = 0, b = 1, a_zero = 2, b_zero = 3;
  std::size_t bias = kNone, y_scale = 6;
  static constexpr std::size_t kNone = ~std::size_t{0};
};

Product checked_product(const KernelContext& context, const Operands& at) {
  const Tensor& a = context.input(at.a);
  const Tensor& b = context.input(at.b);
  check_8_bit(context, a.dtype(), "the first operand");
  check_8_bit(context, b.dtype(), "the second operand");
  Product p = product_of(context, a, b);
  check_zero_point(context, at.a_zero, 1, "the first operand's zero point");
  check_zero_point(context, at.b_zero, p.n, "the second operand's zero point");
  return p;
}

template <typename A, typename B>
void sums_of(const Product& p, const Operands& at, const std::vector<const Tensor*>& inputs,
             int32_t* sums, int threads) {
  auto optional = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  const int32_t a_zero = zero_point_values(optional(at.a_zero))[0];
  const std::vector<int32_t> b_zero = per_channel(zero_point_values(optional(at.b_zero)), p.n);
  const Tensor* bias = at.bias < inputs.size() ? inputs[at.bias] : nullptr;
  integer_products(p, inputs[at.a]->data<A>(), inputs[at.b]->data<B>(), a_zero, b_zero,
                   bias ? bias->data<int32_t>() : nullptr, sums, threads);
}

// An int8 product with constant 2-D s8 weights on oneDNN's matmul: the data's batch dims fold
// into its rows, the data's zero point and (QLinearMatMul) the output scales and zero point are
// primitive attributes, the weights are packed once.
class DnnlInt8Matmul final : public Kernel, public PackedConstants {
 public:
  DnnlInt8Matmul(const KernelContext& context, const Product& p, const Operands& at,
                 DataType output_type, const dnnl::primitive_attr& attr)
      : spec_(plain_output(output_type, p.output_shape)) {
    using dnnl::memory;
    const int64_t rows = volume(p.output_shape) / p.n;
    const memory::desc src = plain_desc(std::vector<int64_t>{rows, p.k},
                                        dnnl_data_type(context.input(at.a).dtype(), context));
    const memory::desc dst =
        plain_desc(std::vector<int64_t>{rows, p.n}, dnnl_data_type(output_type, context));
    const memory::desc weights({p.k, p.n}, memory::data_type::s8, memory::format_tag::any);
    const memory::desc bias = plain_desc(std::vector<int64_t>{1, p.n}, memory::data_type::s32);
    bias_ = context.has_input(at.bias) ? at.bias : Operands::kNone;
    // The descriptor's implementation iterator points at `op`: it lives through the choice.
    const dnnl::matmul::desc op = bias_ == Operands::kNone
                                      ? dnnl::matmul::desc(src, weights, dst)
                                      : dnnl::matmul::desc(src, weights, bias, dst);
    dnnl::matmul::primitive_desc descriptor = with_chosen_implementation(
        [&] { return dnnl::matmul::primitive_desc(op, attr, context.engine); },
        Int8Work{rows * p.k * p.n, context.threads, p.k});
    step_ = DnnlStep(dnnl::matmul(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, src);
    step_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    step_.declare(DNNL_ARG_DST, dst);
    if (bias_ != Operands::kNone) step_.declare(DNNL_ARG_BIAS, bias);
    weights_ = pack_constant(context.input(at.b).raw(),
                             plain_desc(std::vector<int64_t>{p.k, p.n}, memory::data_type::s8),
                             descriptor.weights_desc(), context.engine);
    a_ = at.a;
    b_ = at.b;
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return step_.implementation(); }
  // The int8 weights run from the packed copy: the loaded ones may go (a weight held once).
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != b_;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    step_.set(DNNL_ARG_SRC, inputs[a_]->raw());
    step_.set(DNNL_ARG_WEIGHTS, weights_->data());
    step_.set(DNNL_ARG_DST, outputs[0]->raw());
    if (bias_ != Operands::kNone) step_.set(DNNL_ARG_BIAS, inputs[bias_]->raw());
    step_.execute(stream);
  }

 private:
  OutputSpec spec_;
  std::size_t a_ = 0, b_ = 1, bias_ = Operands::kNone;
  DnnlStep step_;
  std::shared_ptr<Buffer> weights_;
};

// The oneDNN kernel where oneDNN 2.6 has the form: constant 2-D s8 weights with zero point 0,
// data with more than one row, constant zero points and scales; nullptr otherwise (or when
// oneDNN offers only its reference code), so the loops run.
// Without VNNI (split_weights.h): the two halves' products of u8 data to int32 sums, added and
// requantized; nullptr where oneDNN lacks them. Only weights of a nonzero zero point come here
// (the widened products take the others).
std::unique_ptr<Kernel> try_split_weights_matmul(const KernelContext& context, const Product& p,
                                                 const Operands& at, bool requantized) {
  if (context.input(at.a).dtype() != DataType::kUInt8) return nullptr;
  const auto [high, low] = quantize_detail::split_weights(context.input(at.b));
  auto sums_with = [&](const Tensor& part) {
    KernelContext split = context;
    split.inputs[at.b] = &part;
    Operands sums_at = at;
    sums_at.bias = Operands::kNone;  // Added once, to the whole sums.
    return quantize_detail::make_dnnl_int8(
        split, at.a_zero, at.b_zero, false, p.n, at.y_scale,
        [&](DataType output, const dnnl::primitive_attr& attr) -> std::unique_ptr<Kernel> {
          return std::make_unique<DnnlInt8Matmul>(split, p, sums_at, output, attr);
        });
  };
  std::unique_ptr<Kernel> high_sums = sums_with(high);
  std::unique_ptr<Kernel> low_sums = high_sums ? sums_with(low) : nullptr;
  if (!low_sums) return nullptr;
  quantize_detail::SplitSums how;
  how.weights = at.b;
  how.channels = p.n;
  how.channel_stride = 1;
  if (context.has_input(at.bias)) how.bias = at.bias;
  if (requantized) how.y_scale = at.y_scale;
  return quantize_detail::make_split_sums_kernel(
      std::move(high_sums), std::move(low_sums),
      plain_output(
          requantized ? quantize_detail::requantized_type(context, at.y_scale) : DataType::kInt32,
          p.output_shape),
      how, context.threads);
}

// Without VNNI, products of u8 or s8 data with constant s8 weights of zero point 0 run as one
// pass of cleave's widened int16 products, at any row count: the split's two oneDNN passes and
// the add of their sums took 1.35-1.66x its time at 1 thread on every shape timed, from
// 37 x 75 x 45 through transformer_decoder_int8's 80 x 128 x 384 to 784 x 512 x 512
// (bench/kernels/int8_matmul_shapes.py, docs/results/heldout-speed.md, 2026-12-01 hi8mm), and
// s8 data, which the split cannot take, would run the loops.
std::unique_ptr<Kernel> try_widened_matmul(const KernelContext& context, const Product& p,
                                           const Operands& at, bool requantized) {
  const int64_t rows = volume(p.output_shape) / p.n;
  if (!quantize_detail::widened_products_available()) return nullptr;
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  for (int32_t zero : zero_point_values(optional(at.b_zero))) {
    if (zero != 0) return nullptr;
  }
  quantize_detail::WidenedProduct how;
  how.data = at.a;
  how.weights = at.b;
  how.data_zero = zero_point_values(optional(at.a_zero))[0];
  if (how.data_zero < -128 || how.data_zero > 255) return nullptr;
  how.rows.rows = rows;
  how.rows.per_batch = rows;
  how.rows.row_stride = p.k;
  how.rows.out_row_stride = p.n;
  how.channels = p.n;
  if (context.has_input(at.bias)) how.bias = at.bias;
  if (requantized) how.y_scale = at.y_scale;
  how.name = "int8 matmul (int16 pairs)";
  return quantize_detail::make_widened_kernel(
      quantize_detail::pack_widened(context.input(at.b).data<int8_t>(), p.k, p.n, p.n, 1),
      plain_output(
          requantized ? quantize_detail::requantized_type(context, at.y_scale) : DataType::kInt32,
          p.output_shape),
      how, context.threads);
}

// The f32 route (f32_int8_matmul.h) under CLEAVE_INT8_F32=always only: without VNNI it did not
// beat the split on mel_frontend_int8 (1.044 of its CPU time a run) nor transformer_decoder_int8
// (0.991) at 1 thread (docs/results/heldout-speed.md, 2026-12-01), so "auto" leaves products be.
std::unique_ptr<Kernel> try_f32_matmul(const KernelContext& context, const Product& p,
                                       const Operands& at, bool requantized) {
  if (quantize_detail::f32_route_from_environment() != quantize_detail::F32Route::kAlways) {
    return nullptr;
  }
  quantize_detail::F32MatmulOperands where{at.a, at.b, at.a_zero, at.b_zero, {}, {}};
  if (context.has_input(at.bias)) where.bias = at.bias;
  if (requantized) where.y_scale = at.y_scale;
  return quantize_detail::make_f32_int8_matmul(context, volume(p.output_shape) / p.n, p.k, p.n,
                                               p.output_shape, where);
}

std::unique_ptr<Kernel> try_dnnl_int8_matmul(const KernelContext& context, const Product& p,
                                             const Operands& at, bool requantized) {
  const Tensor& b = context.input(at.b);
  if (b.dtype() != DataType::kInt8 || b.rank() != 2 || !context.constant[at.b] ||
      volume(p.output_shape) == 0 || context.input(at.a).rank() < 2 ||
      !all_constant(context, {at.a_zero, at.b_zero})) {
    return nullptr;
  }
  if (requantized && !all_constant(context, {1, 4, at.y_scale, at.y_scale + 1, at.bias})) {
    return nullptr;
  }
  if (auto kernel = try_f32_matmul(context, p, at, requantized)) return kernel;
  if (quantize_detail::int8_products_need_split()) {
    if (auto kernel = try_widened_matmul(context, p, at, requantized)) return kernel;
    return try_split_weights_matmul(context, p, at, requantized);
  }
  return quantize_detail::make_dnnl_int8(
      context, at.a_zero, at.b_zero, requantized, p.n, at.y_scale,
      [&](DataType output, const dnnl::primitive_attr& attr) -> std::unique_ptr<Kernel> {
        return std::make_unique<DnnlInt8Matmul>(context, p, at, output, attr);
      });
}

std::unique_ptr<Kernel> create_matmul_integer(const KernelContext& context) {
  const Operands at;
  const Product p = checked_product(context, at);
  if (auto kernel = try_dnnl_int8_matmul(context, p, at, false)) return kernel;
  const int threads = context.threads;
  return visit_operands(
      context.input(0).dtype(), context.input(1).dtype(), [&]<typename A, typename B>() {
        return make_kernel({plain_output(DataType::kInt32, p.output_shape)},
                           [=](const std::vector<const Tensor*>& inputs,
                               const std::vector<Tensor*>& outputs, dnnl::stream&) {
                             sums_of<A, B>(p, at, inputs, outputs[0]->data<int32_t>(), threads);
                           });
      });
}

// QLinearMatMul, or QGemm's subset that QDQ fusion writes: the int32 sums requantized.
std::unique_ptr<Kernel> make_requantized(const KernelContext& context, const Operands& at) {
  const Product p = checked_product(context, at);
  quantize_detail::check_requantize(context, p.n, at.y_scale);
  if (context.has_input(at.bias) && (context.input(at.bias).dtype() != DataType::kInt32 ||
                                     context.input(at.bias).element_count() != p.n)) {
    throw UnsupportedError(fmt::format("{}: a bias {} is not supported (i32[{}] is)",
                                       context.where(), context.input(at.bias).describe(), p.n));
  }
  if (auto kernel = try_dnnl_int8_matmul(context, p, at, true)) return kernel;
  const int threads = context.threads;
  auto sums =
      std::make_shared<std::vector<int32_t>>(static_cast<std::size_t>(volume(p.output_shape)));
  return visit_operands(
      context.input(at.a).dtype(), context.input(at.b).dtype(), [&]<typename A, typename B>() {
        return make_kernel(
            {plain_output(quantize_detail::requantized_type(context, at.y_scale), p.output_shape)},
            [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                dnnl::stream&) {
              sums_of<A, B>(p, at, inputs, sums->data(), threads);
              quantize_detail::write_requantized(
                  quantize_detail::requantize_of(inputs, p.n, at.y_scale), sums->data(),
                  static_cast<int64_t>(sums->size()), p.n, 1, outputs[0]->raw());
            });
      });
}

std::unique_ptr<Kernel> create_qlinear_matmul(const KernelContext& context) {
  return make_requantized(context, Operands{0, 3, 2, 5});
}

// com.microsoft QGemm (ONNX Runtime's contrib op, which QDQ fusion writes for a Gemm with a
// bias): A x B + C, requantized; here without transposes, with alpha 1 and a quantized output.
std::unique_ptr<Kernel> create_qgemm(const KernelContext& context) {
  const Node& node = context.node;
  if (node.int_attribute("transA", 0) != 0 || node.int_attribute("transB", 0) != 0 ||
      node.float_attribute("alpha", 1.0f) != 1.0f || !context.has_input(7)) {
    throw UnsupportedError(fmt::format(
        "{}: QGemm is supported without transposes, with alpha 1 and a quantized output",
        context.where()));
  }
  return make_requantized(context, Operands{0, 3, 2, 5, 6, 7});
}

void add(KernelRegistry& registry, std::string op_type,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create,
         std::string domain = "", int64_t since = 10) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.domain = std::move(domain);
  info.since_opset = since;
  info.dtypes = {DataType::kUInt8, DataType::kInt8};
  info.create = guarded(std::move(create));
  registry.add(std::move(info));
}

}  // namespace

void register_quantized_matmul_kernels(KernelRegistry& registry) {
  add(registry, "MatMulInteger", create_matmul_integer);
  add(registry, "QLinearMatMul", create_qlinear_matmul);
  add(registry, "QGemm", create_qgemm, "com.microsoft", 1);
}

}  // namespace cleave
