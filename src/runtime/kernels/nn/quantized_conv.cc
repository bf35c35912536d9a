// ConvInteger and QLinearConv: int8 convolutions (any rank, groups, dilations, pads) as int32
// sums or requantized to u8/i8.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <memory>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using conv_detail::ConvProblem;
using elementwise::make_kernel;
using elementwise::parallel_for;
using elementwise::plain_output;
using quantize_detail::check_8_bit;
using quantize_detail::check_zero_point;
using quantize_detail::per_channel;
using quantize_detail::zero_point_values;

// Where a node keeps its operands: data, weights and their zero points.
struct Operands {
  std::size_t x = 0, w = 1, x_zero = 2, w_zero = 3;
};

// Up to three spatial dims, unused ones of size 1, so that one loop nest covers 1-D to 3-D.
struct Geometry {
  int64_t batch = 0, channels_in = 0, channels_out = 0, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, strides{1, 1, 1},
      dilations{1, 1, 1}, pads{0, 0, 0};
};

ConvProblem problem_of(const KernelContext& context, const Operands& at) {
  const Tensor& x = context.input(at.x);
  const Tensor& w = context.input(at.w);
  check_8_bit(context, x.dtype(), "the input");
  check_8_bit(context, w.dtype(), "the weights");
  KernelContext conv = context;  // conv_problem reads data and weights at inputs 0 and 1.
  conv.inputs = {&x, &w};
  conv.constant = {context.constant[at.x], context.constant[at.w]};
  ConvProblem p = conv_detail::conv_problem(conv);
  if (p.kernel.size() > 3) {
    throw UnsupportedError(fmt::format("{}: {}-D convolutions are not supported (1-D to 3-D are)",
                                       context.where(), p.kernel.size()));
  }
  check_zero_point(context, at.x_zero, 1, "the input zero point");
  check_zero_point(context, at.w_zero, p.channels_out, "the weight zero point");
  return p;
}

Geometry geometry_of(const ConvProblem& p, const Tensor& x) {
  Geometry g;
  g.batch = p.batch;
  g.channels_in = p.channels_in;
  g.channels_out = p.channels_out;
  g.groups = p.groups;
  for (std::size_t d = 0; d < p.kernel.size(); ++d) {
    g.in[d] = x.dim(d + 2);
    g.out[d] = p.output_shape[d + 2];
    g.kernel[d] = p.kernel[d];
    g.strides[d] = p.strides[d];
    g.dilations[d] = p.dilations[d];
    g.pads[d] = p.pads_begin[d];
  }
  return g;
}

// sums[n, m, ...] = bias[m] + Σ (x - x_zero)(w[m] - w_zero[m]) over the window; padding reads
// as x_zero, so contributes nothing.
template <typename X, typename W>
void integer_convolution(const Geometry& g, const X* x, const W* w, int32_t x_zero,
                         const std::vector<int32_t>& w_zero, const int32_t* bias, int32_t* sums,
                         int threads) {
  const int64_t per_group_in = g.channels_in / g.groups;
  const int64_t per_group_out = g.channels_out / g.groups;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  parallel_for(
      g.batch * g.channels_out, threads,
      [&](int64_t begin, int64_t end) {
        std::vector<int32_t> weights(static_cast<std::size_t>(per_group_in * taps));
        for (int64_t job = begin; job < end; ++job) {
          const int64_t n = job / g.channels_out, m = job % g.channels_out;
          const int64_t group = m / per_group_out;
          for (std::size_t i = 0; i < weights.size(); ++i) {
            weights[i] = static_cast<int32_t>(w[m * per_group_in * taps + i]) - w_zero[m];
          }
          const X* image = x + (n * g.channels_in + group * per_group_in) * in_plane;
          int32_t* out = sums + job * out_plane;
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
              for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                int32_t sum = bias ? bias[m] : 0;
                for (int64_t c = 0; c < per_group_in; ++c) {
                  const X* plane = image + c * in_plane;
                  const int32_t* tap = weights.data() + c * taps;
                  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
                    const int64_t i0 = o0 * g.strides[0] - g.pads[0] + k0 * g.dilations[0];
                    if (i0 < 0 || i0 >= g.in[0]) continue;
                    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
                      const int64_t i1 = o1 * g.strides[1] - g.pads[1] + k1 * g.dilations[1];
                      if (i1 < 0 || i1 >= g.in[1]) continue;
                      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                        const int64_t i2 = o2 * g.strides[2] - g.pads[2] + k2 * g.dilations[2];
                        if (i2 < 0 || i2 >= g.in[2]) continue;
                        const int32_t value =
                            static_cast<int32_t>(plane[(i0 * g.in[1] + i1) * g.in[2] + i2]) -
                            x_zero;
                        sum += value * tap[(k0 * g.kernel[1] + k1) * g.kernel[2] + k2];
                      }
                    }
                  }
                }
                out[(o0 * g.out[1] + o1) * g.out[2] + o2] = sum;
              }
            }
          }
        }
      },
      2);
}

template <typename Visitor>
std::unique_ptr<Kernel> visit_operands(DataType x, DataType w, Visitor&& visit) {
  if (x == DataType::kUInt8) {
    return w == DataType::kUInt8 ? visit.template operator()<uint8_t, uint8_t>()
                                 : visit.template operator()<uint8_t, int8_t>();
  }
  return w == DataType::kUInt8 ? visit.template operator()<int8_t, uint8_t>()
                               : visit.template operator()<int8_t, int8_t>();
}

template <typename X, typename W>
void sums_of(const Geometry& g, const Operands& at, const std::vector<const Tensor*>& inputs,
             const int32_t* bias, int32_t* sums, int threads) {
  auto optional = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  const int32_t x_zero = zero_point_values(optional(at.x_zero))[0];
  const std::vector<int32_t> w_zero =
      per_channel(zero_point_values(optional(at.w_zero)), g.channels_out);
  integer_convolution(g, inputs[at.x]->data<X>(), inputs[at.w]->data<W>(), x_zero, w_zero, bias,
                      sums, threads);
}

std::unique_ptr<Kernel> create_conv_integer(const KernelContext& context) {
  const Operands at;
  const ConvProblem p = problem_of(context, at);
  const Geometry g = geometry_of(p, context.input(0));
  const int threads = context.threads;
  return visit_operands(
      context.input(0).dtype(), context.input(1).dtype(), [&]<typename X, typename W>() {
        return make_kernel({plain_output(DataType::kInt32, p.output_shape)},
                           [=](const std::vector<const Tensor*>& inputs,
                               const std::vector<Tensor*>& outputs, dnnl::stream&) {
                             sums_of<X, W>(g, at, inputs, nullptr, outputs[0]->data<int32_t>(),
                                           threads);
                           });
      });
}

std::unique_ptr<Kernel> create_qlinear_conv(const KernelContext& context) {
  const Operands at{0, 3, 2, 5};
  const ConvProblem p = problem_of(context, at);
  quantize_detail::check_requantize(context, p.channels_out);
  const bool with_bias = context.has_input(8);
  if (with_bias && (context.input(8).dtype() != DataType::kInt32 ||
                    context.input(8).element_count() != p.channels_out)) {
    throw Error(fmt::format("{}: the bias is {}; expected i32[{}]", context.where(),
                            context.input(8).describe(), p.channels_out));
  }
  const Geometry g = geometry_of(p, context.input(0));
  const int threads = context.threads;
  const int64_t plane = volume(p.output_shape) / std::max<int64_t>(1, g.batch * g.channels_out);
  auto sums =
      std::make_shared<std::vector<int32_t>>(static_cast<std::size_t>(volume(p.output_shape)));
  return visit_operands(
      context.input(0).dtype(), context.input(3).dtype(), [&]<typename X, typename W>() {
        return make_kernel(
            {plain_output(quantize_detail::requantized_type(context), p.output_shape)},
            [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                dnnl::stream&) {
              const int32_t* bias = with_bias ? inputs[8]->data<int32_t>() : nullptr;
              sums_of<X, W>(g, at, inputs, bias, sums->data(), threads);
              quantize_detail::write_requantized(
                  quantize_detail::requantize_of(inputs, g.channels_out), sums->data(),
                  static_cast<int64_t>(sums->size()), g.channels_out, plane, outputs[0]->raw());
            });
      });
}

void add(KernelRegistry& registry, std::string op_type,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.since_opset = 10;
  info.dtypes = {DataType::kUInt8, DataType::kInt8};
  info.create = guarded(std::move(create));
  registry.add(std::move(info));
}

}  // namespace

void register_quantized_conv_kernels(KernelRegistry& registry) {
  add(registry, "ConvInteger", create_conv_integer);
  add(registry, "QLinearConv", create_qlinear_conv);
}

}  // namespace cleave
