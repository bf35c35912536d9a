// com.microsoft QLinearAdd, ONNX Runtime's int8 Add, which QDQ fusion writes for
// DequantizeLinear → Add → QuantizeLinear: computed as ONNX Runtime computes it, so that its
// roundings are ONNX Runtime's; operands in one channels-last layout are added as they lie.
#include <fmt/core.h>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_loops.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using elementwise::make_kernel;
using elementwise::parallel_for;
using elementwise::plain_output;

// Inputs: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point.
constexpr std::size_t kA = 0, kB = 3, kC = 6;

int32_t zero_point_at(const std::vector<const Tensor*>& inputs, std::size_t i) {
  return quantize_detail::zero_point_values(i < inputs.size() ? inputs[i] : nullptr)[0];
}

// Whether A and B lie in one layout without padding (channels-last from int8 convolutions), so
// that the sum runs on the bytes as they lie and the output keeps that layout.
bool shared_layout(const KernelContext& context) {
  const Tensor& a = context.input(kA);
  const Tensor& b = context.input(kB);
  if (!context.blocked_outputs_allowed || !a.is_blocked() || !b.is_blocked()) return false;
  const dnnl::memory::desc layout = desc_of(a);
  return a.shape() == b.shape() && desc_of(b) == layout &&
         layout.get_size() == static_cast<std::size_t>(a.element_count());
}

template <typename T>
std::unique_ptr<Kernel> make_qlinear_add(const KernelContext& context, DataType type) {
  const std::vector<std::vector<int64_t>> shapes = {context.input(kA).shape(),
                                                    context.input(kB).shape()};
  const std::vector<int64_t> output = elementwise::broadcast_shape(context, shapes);
  const elementwise::BroadcastPlan plan = elementwise::plan_broadcast(output, shapes);
  const int threads = context.threads;
  OutputSpec spec = plain_output(type, output);
  std::shared_ptr<elementwise::PlainInputs> plain;
  if (shared_layout(context)) {
    spec.layout = desc_of(context.input(kA));
  } else if (context.input(kA).is_blocked() || context.input(kB).is_blocked()) {
    plain = std::make_shared<elementwise::PlainInputs>(context);
  }
  return make_kernel({spec}, [=](const std::vector<const Tensor*>& given,
                                 const std::vector<Tensor*>& outputs, dnnl::stream& stream) {
    const auto& inputs = plain ? plain->convert(given, stream) : given;
    const quantize_loops::AddRatios ratios =
        quantize_loops::add_ratios(inputs[kA + 1]->data<float>()[0], zero_point_at(inputs, kA + 2),
                                   inputs[kB + 1]->data<float>()[0], zero_point_at(inputs, kB + 2),
                                   inputs[kC]->data<float>()[0], zero_point_at(inputs, kC + 1));
    const T* a = inputs[kA]->data<T>();
    const T* b = inputs[kB]->data<T>();
    T* out = outputs[0]->data<T>();
    parallel_for(plan.count, threads, [&](int64_t begin, int64_t end) {
      auto run = [&](int64_t at, const std::array<int64_t, 2>& offsets, int64_t length,
                     const std::array<int64_t, 2>& steps) {
        quantize_loops::qlinear_add(a + offsets[0], steps[0], b + offsets[1], steps[1], ratios,
                                    out + at, length);
      };
      elementwise::for_each_run<2>(plan, begin, end, run);
    });
  });
}

std::unique_ptr<Kernel> create_qlinear_add(const KernelContext& context) {
  const DataType type = context.input(kA).dtype();
  quantize_detail::check_8_bit(context, type, "input A");
  const char* names[] = {"A", "B", "C"};
  for (std::size_t k = 0; k < 3; ++k) {
    const std::size_t scale = k * 3 + (k < 2 ? 1 : 0);
    const std::string what = fmt::format("the scale of {}", names[k]);
    quantize_detail::check_scale(context, scale, 1, what.c_str());
    const std::string zero = fmt::format("the zero point of {}", names[k]);
    quantize_detail::check_zero_point(context, scale + 1, 1, zero.c_str());
    const DataType own = k == 0 ? type
                         : k == 1
                             ? context.input(kB).dtype()
                             : (context.has_input(kC + 1) ? context.input(kC + 1).dtype() : type);
    if (own != type) {
      throw UnsupportedError(fmt::format("{}: {} is {}; QLinearAdd computes in one type, A's ({})",
                                         context.where(), k == 1 ? "input B" : zero,
                                         dtype_name(own), dtype_name(type)));
    }
  }
  if (type == DataType::kUInt8) return make_qlinear_add<uint8_t>(context, type);
  return make_qlinear_add<int8_t>(context, type);
}

}  // namespace

void register_quantized_add_kernels(KernelRegistry& registry) {
  KernelInfo info;
  info.op_type = "QLinearAdd";
  info.domain = "com.microsoft";
  info.since_opset = 1;
  info.dtypes = {DataType::kUInt8, DataType::kInt8};
  info.accepts_blocked = [](std::size_t input) { return input == kA || input == kB; };
  info.create = create_qlinear_add;
  registry.add(std::move(info));
}

}  // namespace cleave
