// Unary elementwise kernels: activations, math functions, Clip, IsNaN/IsInf and Not.
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/registration.h"

namespace cleave::elementwise {

namespace {

using dnnl::algorithm;

// -x without signed overflow: integers wrap (the most negative value stays itself).
template <typename T>
T negate(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(v));
  } else {
    return -v;
  }
}

template <typename T>
T absolute(T v) {
  if constexpr (std::is_unsigned_v<T>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return v < 0 ? negate(v) : v;
  } else {
    return std::abs(v);
  }
}

template <typename T>
T sign(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return v;
  }
  return static_cast<T>((T(0) < v) - (v < T(0)));
}

// Reads input 0 and writes output 0 of the same shape: in input 0's own layout where it is
// unpadded and consumers take it (unpadded_layout_as), else plain (a blocked input converted).
template <typename In, typename Out, typename Op>
std::unique_ptr<Kernel> map_kernel(const KernelContext& context, DataType output_type, Op op) {
  const Tensor& x = context.input(0);
  const int64_t count = x.element_count();
  const int threads = context.threads;
  OutputSpec output = plain_output(output_type, x.shape());
  if (context.blocked_outputs_allowed) output.layout = unpadded_layout_as(context, x, output_type);
  std::shared_ptr<PlainInputs> plain;
  if (x.is_blocked() && !output.layout) plain = std::make_shared<PlainInputs>(context);
  return make_kernel({output}, [=](const std::vector<const Tensor*>& inputs,
                                   const std::vector<Tensor*>& outputs, dnnl::stream& stream) {
    const Tensor* in = plain ? plain->convert(inputs, stream)[0] : inputs[0];
    unary_loop(in->data<In>(), outputs[0]->data<Out>(), count, threads, op);
  });
}

// A same-type unary op: `op` for each of `Types`, oneDNN's `eltwise` for big or blocked floats.
template <DataType... Types, typename Op>
std::unique_ptr<Kernel> make_unary(const KernelContext& context, Op op,
                                   std::optional<Eltwise> eltwise = std::nullopt) {
  const Tensor& x = context.input(0);
  if (eltwise && use_dnnl(x, x.shape(), eltwise->min_elements)) {
    return make_dnnl_eltwise(context, *eltwise);
  }
  return visit_type<Types...>(context, x.dtype(), [&]<typename T>() {
    return map_kernel<T, T>(context, x.dtype(), [op](T v) { return static_cast<T>(op(v)); });
  });
}

// A float predicate producing bool.
template <typename Predicate>
std::unique_ptr<Kernel> make_float_predicate(const KernelContext& context, Predicate predicate) {
  const Tensor& x = context.input(0);
  return visit_type<CLEAVE_FLOAT_TYPES>(context, x.dtype(), [&]<typename T>() {
    return map_kernel<T, uint8_t>(context, DataType::kBool,
                                  [predicate](T v) { return static_cast<uint8_t>(predicate(v)); });
  });
}

float attribute(const KernelContext& context, std::string_view key, float fallback) {
  return context.node.float_attribute(key, fallback);
}

void add(KernelRegistry& registry, std::string op_type, std::vector<DataType> types,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create,
         bool accepts_blocked = false) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.dtypes = std::move(types);
  info.create = std::move(create);
  if (accepts_blocked) info.accepts_blocked = [](std::size_t input) { return input == 0; };
  registry.add(std::move(info));
}

// Registers a float-only op computed by `op` (a generic lambda over float and double).
template <typename Op>
void add_float(KernelRegistry& registry, std::string op_type, Op op,
               std::optional<Eltwise> eltwise = std::nullopt) {
  add(
      registry, std::move(op_type), kFloatTypes,
      [op, eltwise](const KernelContext& context) {
        return make_unary<CLEAVE_FLOAT_TYPES>(context, op, eltwise);
      },
      eltwise.has_value());
}

// ---- Clip ------------------------------------------------------------------------------------

// The bound given by input `index` (a scalar of x's type), or nullopt when omitted.
template <typename T>
std::optional<T> bound_input(const std::vector<const Tensor*>& inputs, std::size_t index) {
  if (index >= inputs.size() || !inputs[index]) return std::nullopt;
  return *inputs[index]->data<T>();
}

void check_bound(const KernelContext& context, std::size_t index, std::string_view name) {
  if (!context.has_input(index)) return;
  const Tensor& bound = context.input(index);
  if (bound.dtype() != context.input(0).dtype()) {
    throw Error(fmt::format("{}: Clip's {} has type {}, the input {}", context.where(), name,
                            dtype_name(bound.dtype()), dtype_name(context.input(0).dtype())));
  }
  if (bound.element_count() != 1) {
    throw Error(fmt::format("{}: Clip's {} must be a scalar, got {}", context.where(), name,
                            bound.describe()));
  }
}

std::unique_ptr<Kernel> make_clip(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (context.opset < 11) {
    // Bounds are attributes before opset 11.
    const float low = attribute(context, "min", -std::numeric_limits<float>::max());
    const float high = attribute(context, "max", std::numeric_limits<float>::max());
    if (use_dnnl(x, x.shape())) {
      return make_dnnl_eltwise(context, {algorithm::eltwise_clip, std::min(low, high), high});
    }
    return make_unary<CLEAVE_FLOAT_TYPES>(context, [low, high](auto v) -> decltype(v) {
      using T = decltype(v);
      return std::min(std::max(v, static_cast<T>(low)), static_cast<T>(high));
    });
  }
  check_bound(context, 1, "min");
  check_bound(context, 2, "max");
  const bool bounds_fixed = (!context.has_input(1) || context.constant[1]) &&
                            (!context.has_input(2) || context.constant[2]);
  if (bounds_fixed && use_dnnl(x, x.shape())) {
    const float infinity = std::numeric_limits<float>::infinity();
    const float low = context.has_input(1) ? *context.input(1).data<float>() : -infinity;
    const float high = context.has_input(2) ? *context.input(2).data<float>() : infinity;
    return make_dnnl_eltwise(context, {algorithm::eltwise_clip, std::min(low, high), high});
  }
  // Bounds are read at every run: they may be computed by the graph.
  return visit_type<CLEAVE_NUMERIC_TYPES>(context, x.dtype(), [&]<typename T>() {
    const int64_t count = x.element_count();
    const int threads = context.threads;
    std::shared_ptr<PlainInputs> plain;
    if (x.is_blocked()) plain = std::make_shared<PlainInputs>(context);
    return make_kernel(
        {plain_output(x.dtype(), x.shape())},
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
            dnnl::stream& stream) {
          const Tensor* in = plain ? plain->convert(inputs, stream)[0] : inputs[0];
          const T low = bound_input<T>(inputs, 1).value_or(std::numeric_limits<T>::lowest());
          const T high = bound_input<T>(inputs, 2).value_or(std::numeric_limits<T>::max());
          unary_loop(in->data<T>(), outputs[0]->data<T>(), count, threads,
                     [low, high](T v) { return std::min(std::max(v, low), high); });
        });
  });
}

}  // namespace

void register_unary_kernels(KernelRegistry& registry) {
  // Activations.
  add(
      registry, "Relu", kSignedTypes,
      [](const KernelContext& context) {
        return make_unary<CLEAVE_SIGNED_TYPES>(
            context, [](auto v) { return v < 0 ? decltype(v)(0) : v; },
            Eltwise{algorithm::eltwise_relu});
      },
      true);
  add(
      registry, "LeakyRelu", kFloatTypes,
      [](const KernelContext& context) {
        const float alpha = attribute(context, "alpha", 0.01f);
        return make_unary<CLEAVE_FLOAT_TYPES>(
            context, [alpha](auto v) { return v < 0 ? v * alpha : v; },
            Eltwise{algorithm::eltwise_relu, alpha});
      },
      true);
  add(
      registry, "Elu", kFloatTypes,
      [](const KernelContext& context) {
        const float alpha = attribute(context, "alpha", 1.0f);
        return make_unary<CLEAVE_FLOAT_TYPES>(
            context, [alpha](auto v) { return v < 0 ? alpha * std::expm1(v) : v; },
            transcendental(algorithm::eltwise_elu, alpha));
      },
      true);
  add(registry, "Selu", kFloatTypes, [](const KernelContext& context) {
    const float alpha = attribute(context, "alpha", 1.67326319217681884765625f);
    const float gamma = attribute(context, "gamma", 1.05070102214813232421875f);
    return make_unary<CLEAVE_FLOAT_TYPES>(context, [alpha, gamma](auto v) {
      return v <= 0 ? gamma * alpha * std::expm1(v) : gamma * v;
    });
  });
  add(registry, "Celu", kFloatTypes, [](const KernelContext& context) {
    const float alpha = attribute(context, "alpha", 1.0f);
    if (alpha == 0) throw Error(fmt::format("{}: Celu's alpha must not be 0", context.where()));
    return make_unary<CLEAVE_FLOAT_TYPES>(context, [alpha](auto v) {
      using T = decltype(v);
      return std::max(T(0), v) + std::min(T(0), alpha * std::expm1(v / alpha));
    });
  });
  add(registry, "ThresholdedRelu", kFloatTypes, [](const KernelContext& context) {
    const float alpha = attribute(context, "alpha", 1.0f);
    return make_unary<CLEAVE_FLOAT_TYPES>(
        context, [alpha](auto v) { return v > alpha ? v : decltype(v)(0); });
  });
  // oneDNN 2.6 has no hardsigmoid: the plain loop, in an unpadded input's layout (map_kernel).
  add(
      registry, "HardSigmoid", kFloatTypes,
      [](const KernelContext& context) {
        const float alpha = attribute(context, "alpha", 0.2f);
        const float beta = attribute(context, "beta", 0.5f);
        return make_unary<CLEAVE_FLOAT_TYPES>(context, [alpha, beta](auto v) {
          using T = decltype(v);
          return std::max(T(0), std::min(T(1), alpha * v + beta));
        });
      },
      /*accepts_blocked=*/true);
  add(registry, "Shrink", kNumericTypes, [](const KernelContext& context) {
    const double lambd = attribute(context, "lambd", 0.5f);
    const double bias = attribute(context, "bias", 0.0f);
    return make_unary<CLEAVE_NUMERIC_TYPES>(context, [lambd, bias](auto v) {
      const double d = static_cast<double>(v);
      return static_cast<decltype(v)>(d < -lambd ? d + bias : d > lambd ? d - bias : 0.0);
    });
  });
  add_float(
      registry, "Sigmoid",
      [](auto v) {
        using T = decltype(v);
        // Written so that exp never overflows.
        if (v >= 0) return T(1) / (T(1) + std::exp(-v));
        const T e = std::exp(v);
        return e / (T(1) + e);
      },
      transcendental(algorithm::eltwise_logistic));
  add_float(
      registry, "HardSwish",
      [](auto v) {
        using T = decltype(v);
        return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
      },
      Eltwise{algorithm::eltwise_hardswish});
  add_float(
      registry, "Tanh", [](auto v) { return std::tanh(v); },
      transcendental(algorithm::eltwise_tanh));
  add_float(
      registry, "Softplus",
      [](auto v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); },
      transcendental(algorithm::eltwise_soft_relu));
  add_float(registry, "Softsign", [](auto v) { return v / (decltype(v)(1) + std::abs(v)); });

  // Math.
  add_float(
      registry, "Exp", [](auto v) { return std::exp(v); }, transcendental(algorithm::eltwise_exp));
  add_float(
      registry, "Log", [](auto v) { return std::log(v); }, transcendental(algorithm::eltwise_log));
  add_float(
      registry, "Sqrt", [](auto v) { return std::sqrt(v); },
      transcendental(algorithm::eltwise_sqrt));
  add_float(
      registry, "Reciprocal", [](auto v) { return decltype(v)(1) / v; },
      Eltwise{algorithm::eltwise_pow, 1.0f, -1.0f});
  add_float(registry, "Floor", [](auto v) { return std::floor(v); });
  add_float(registry, "Ceil", [](auto v) { return std::ceil(v); });
  // nearbyint rounds halves to even in the default rounding mode, as ONNX's Round does.
  add_float(
      registry, "Round", [](auto v) { return std::nearbyint(v); },
      transcendental(algorithm::eltwise_round));
  add(registry, "Erf", kFloatTypes, [](const KernelContext& context) {
    const Tensor& x = context.input(0);
    if (x.dtype() == DataType::kFloat) {
      const int64_t count = x.element_count();
      const int threads = context.threads;
      return make_kernel({plain_output(x.dtype(), x.shape())},
                         [=](const std::vector<const Tensor*>& inputs,
                             const std::vector<Tensor*>& outputs, dnnl::stream&) {
                           const float* in = inputs[0]->data<float>();
                           float* out = outputs[0]->data<float>();
                           parallel_for(count, threads, [&](int64_t begin, int64_t end) {
                             erf_float(in + begin, out + begin, end - begin);
                           });
                         });
    }
    return make_unary<CLEAVE_FLOAT_TYPES>(context, [](auto v) { return std::erf(v); });
  });
  add_float(registry, "Sin", [](auto v) { return std::sin(v); });
  add_float(registry, "Cos", [](auto v) { return std::cos(v); });
  add_float(registry, "Tan", [](auto v) { return std::tan(v); });
  add_float(registry, "Asin", [](auto v) { return std::asin(v); });
  add_float(registry, "Acos", [](auto v) { return std::acos(v); });
  add_float(registry, "Atan", [](auto v) { return std::atan(v); });
  add_float(registry, "Sinh", [](auto v) { return std::sinh(v); });
  add_float(registry, "Cosh", [](auto v) { return std::cosh(v); });
  add_float(registry, "Asinh", [](auto v) { return std::asinh(v); });
  add_float(registry, "Acosh", [](auto v) { return std::acosh(v); });
  add_float(registry, "Atanh", [](auto v) { return std::atanh(v); });

  // Ops on every signed or every numeric type.
  add(
      registry, "Abs", kNumericTypes,
      [](const KernelContext& context) {
        return make_unary<CLEAVE_NUMERIC_TYPES>(
            context, [](auto v) { return absolute(v); }, Eltwise{algorithm::eltwise_abs});
      },
      true);
  add(
      registry, "Neg", kSignedTypes,
      [](const KernelContext& context) {
        return make_unary<CLEAVE_SIGNED_TYPES>(
            context, [](auto v) { return negate(v); },
            Eltwise{algorithm::eltwise_linear, -1.0f, 0.0f});
      },
      true);
  add(registry, "Sign", kNumericTypes, [](const KernelContext& context) {
    return make_unary<CLEAVE_NUMERIC_TYPES>(context, [](auto v) { return sign(v); });
  });

  add(registry, "Clip", kNumericTypes, make_clip, true);

  // Predicates and Not.
  add(registry, "IsNaN", kFloatTypes, [](const KernelContext& context) {
    return make_float_predicate(context, [](auto v) { return std::isnan(v); });
  });
  add(registry, "IsInf", kFloatTypes, [](const KernelContext& context) {
    const bool negative = context.node.int_attribute("detect_negative", 1) != 0;
    const bool positive = context.node.int_attribute("detect_positive", 1) != 0;
    return make_float_predicate(context, [negative, positive](auto v) {
      return std::isinf(v) && (v > 0 ? positive : negative);
    });
  });
  add(registry, "Not", {DataType::kBool}, [](const KernelContext& context) {
    const Tensor& x = context.input(0);
    if (x.dtype() != DataType::kBool) throw_unsupported_type(context, x.dtype());
    return map_kernel<uint8_t, uint8_t>(context, DataType::kBool,
                                        [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
  });
}

}  // namespace cleave::elementwise
