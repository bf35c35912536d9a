// Broadcasting arithmetic kernels: Add, Sub, Mul, Div, Pow, Mod, BitShift, PRelu, Max/Min/Sum/Mean.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/registration.h"
#include "support/half_float.h"

namespace cleave::elementwise {

namespace {

using dnnl::algorithm;

// Checks run on the inputs right before computing (e.g. integer division by zero); they may
// throw, which the OpenMP loops themselves must not.
using InputCheck = std::function<void(const Tensor& a, const Tensor& b)>;

// out = op(a, b) with numpy broadcasting (input 1 seen with `second_shape`); blocked inputs
// are read through plain copies.
template <typename A, typename B, typename Out, typename Op>
std::unique_ptr<Kernel> make_broadcast(const KernelContext& context, DataType output_type, Op op,
                                       InputCheck check = {},
                                       std::optional<std::vector<int64_t>> second_shape = {}) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  const std::vector<std::vector<int64_t>> shapes = {
      a.shape(), second_shape ? *second_shape : second_operand_shape(context)};
  std::vector<int64_t> output = broadcast_shape(context, shapes);
  const BroadcastPlan plan = plan_broadcast(output, shapes);
  const int threads = context.threads;
  std::shared_ptr<PlainInputs> plain;
  if (a.is_blocked() || b.is_blocked()) plain = std::make_shared<PlainInputs>(context);
  return make_kernel({plain_output(output_type, std::move(output))},
                     [=](const std::vector<const Tensor*>& given,
                         const std::vector<Tensor*>& outputs, dnnl::stream& stream) {
                       const auto& inputs = plain ? plain->convert(given, stream) : given;
                       if (check) check(*inputs[0], *inputs[1]);
                       broadcast_binary(plan, inputs[0]->data<A>(), inputs[1]->data<B>(),
                                        outputs[0]->data<Out>(), threads, op);
                     });
}

void check_same_types(const KernelContext& context) {
  for (std::size_t i = 1; i < context.inputs.size(); ++i) {
    if (context.has_input(i) && context.input(i).dtype() != context.input(0).dtype()) {
      throw Error(fmt::format("{}: input {} has type {}, input 0 has {}; {} needs one type",
                              context.where(), i, dtype_name(context.input(i).dtype()),
                              dtype_name(context.input(0).dtype()), context.node.op_type));
    }
  }
}

// Integer arithmetic wraps instead of overflowing (signed overflow is undefined in C++, and
// small unsigned types would be promoted to int and overflow there).
template <typename T>
using Wrapping =
    std::conditional_t<sizeof(T) < sizeof(unsigned), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wrapping<T>>(a) + static_cast<Wrapping<T>>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T subtract_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wrapping<T>>(a) - static_cast<Wrapping<T>>(b));
  } else {
    return a - b;
  }
}
template <typename T>
T multiply_values(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wrapping<T>>(a) * static_cast<Wrapping<T>>(b));
  } else {
    return a * b;
  }
}

// An integer divisor of zero would crash the process: it becomes an Error naming the node.
template <typename T>
InputCheck nonzero_divisor(const KernelContext& context) {
  if constexpr (std::is_integral_v<T>) {
    return [where = context.where()](const Tensor&, const Tensor& divisor) {
      const auto values = divisor.values<T>();
      if (std::find(values.begin(), values.end(), T(0)) != values.end()) {
        throw Error(fmt::format("{}: integer division by zero", where));
      }
    };
  } else {
    return {};
  }
}

// Integer quotient truncated toward zero; the most negative value divided by -1 wraps.
template <typename T>
T divide(T a, T b) {
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) {
    if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
  }
  return static_cast<T>(a / b);
}

// Remainder with the divisor's sign (Python's %, ONNX Mod with fmod=0).
template <typename T>
T floor_mod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(0);
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

template <typename T>
T truncated_mod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(0);
  }
  return static_cast<T>(a % b);
}

// A same-type arithmetic op: oneDNN's binary `algorithm` for big or blocked floats, else `op`.
template <typename Op>
std::unique_ptr<Kernel> make_arithmetic(const KernelContext& context,
                                        std::optional<algorithm> dnnl_algorithm, bool commutative,
                                        Op op, bool integer_division = false) {
  check_same_types(context);
  if (dnnl_algorithm && !uses_legacy_broadcast(context)) {
    if (auto kernel = try_dnnl_binary(context, *dnnl_algorithm, commutative)) return kernel;
  }
  return visit_type<CLEAVE_NUMERIC_TYPES>(context, context.input(0).dtype(), [&]<typename T>() {
    InputCheck check;
    if (integer_division) check = nonzero_divisor<T>(context);
    return make_broadcast<T, T, T>(
        context, context.input(0).dtype(), [op](T a, T b) { return static_cast<T>(op(a, b)); },
        check);
  });
}

// ---- Pow ---------------------------------------------------------------------------------------

// Integer power by squaring, wrapping on overflow as integer arithmetic does.
template <typename T, typename E>
T integer_power(T base, E exponent) {
  if (exponent < 0) {
    if (base == 1) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exponent % 2 == 0) ? T(1) : T(-1);
    }
    return T(0);
  }
  using Unsigned = std::make_unsigned_t<T>;
  Unsigned result = 1;
  Unsigned factor = static_cast<Unsigned>(base);
  auto remaining = static_cast<std::make_unsigned_t<E>>(exponent);
  while (remaining != 0) {
    if (remaining & 1) result = static_cast<Unsigned>(result * factor);
    factor = static_cast<Unsigned>(factor * factor);
    remaining >>= 1;
  }
  return static_cast<T>(result);
}

template <typename T, typename E>
T power(T base, E exponent) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
    return integer_power(base, exponent);
  } else if constexpr (std::is_integral_v<T>) {
    return convert<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  } else {
    return static_cast<T>(std::pow(base, static_cast<T>(exponent)));
  }
}

std::unique_ptr<Kernel> make_pow(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& y = context.input(1);
  // A constant scalar exponent (x², √x in decomposed norms) becomes oneDNN's pow eltwise on
  // big float bases; x² is computed as x·x, which matches std::pow exactly.
  if (context.constant[1] && y.element_count() == 1 && x.dtype() == DataType::kFloat &&
      broadcasts_to(y.shape(), x.shape())) {
    double exponent = 0;
    bool known = true;
    switch (y.dtype()) {
      case DataType::kFloat:
        exponent = *y.data<float>();
        break;
      case DataType::kDouble:
        exponent = *y.data<double>();
        break;
      case DataType::kInt32:
        exponent = *y.data<int32_t>();
        break;
      case DataType::kInt64:
        exponent = static_cast<double>(*y.data<int64_t>());
        break;
      default:
        known = false;
    }
    if (known && exponent == 2.0) {
      if (use_dnnl(x, x.shape())) return make_dnnl_eltwise(context, {algorithm::eltwise_square});
      const int64_t count = x.element_count();
      const int threads = context.threads;
      return make_kernel({plain_output(DataType::kFloat, x.shape())},
                         [=](const std::vector<const Tensor*>& inputs,
                             const std::vector<Tensor*>& outputs, dnnl::stream&) {
                           unary_loop(inputs[0]->data<float>(), outputs[0]->data<float>(), count,
                                      threads, [](float v) { return v * v; });
                         });
    }
  }
  return visit_type<DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64>(
      context, x.dtype(), [&]<typename T>() {
        return visit_type<CLEAVE_NUMERIC_TYPES>(context, y.dtype(), [&]<typename E>() {
          return make_broadcast<T, E, T>(context, x.dtype(), [](T a, E b) { return power(a, b); });
        });
      });
}

// ---- Variadic ops ------------------------------------------------------------------------------

// The `finish` of variadic ops that need none.
struct Identity {
  template <typename T>
  T operator()(T v) const {
    return v;
  }
};

// Folds `op` over every input with broadcasting; `finish` then maps each output element
// (Mean's division).
template <typename T, typename Op, typename Finish>
std::unique_ptr<Kernel> make_variadic(const KernelContext& context, Op op, Finish finish) {
  std::vector<std::vector<int64_t>> shapes;
  for (std::size_t i = 0; i < context.inputs.size(); ++i)
    shapes.push_back(context.input(i).shape());
  if (shapes.empty()) {
    throw Error(
        fmt::format("{}: {} needs at least one input", context.where(), context.node.op_type));
  }
  std::vector<int64_t> output = broadcast_shape(context, shapes);
  std::vector<BroadcastPlan> plans;
  if (shapes.size() == 1) {
    plans.push_back(plan_broadcast(output, std::array{shapes[0], shapes[0]}));
  } else {
    plans.push_back(plan_broadcast(output, std::array{shapes[0], shapes[1]}));
    for (std::size_t i = 2; i < shapes.size(); ++i) {
      plans.push_back(plan_broadcast(output, std::array{output, shapes[i]}));
    }
  }
  const int64_t count = plans.front().count;
  const int threads = context.threads;
  return make_kernel(
      {plain_output(context.input(0).dtype(), std::move(output))},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
          dnnl::stream&) {
        T* out = outputs[0]->data<T>();
        if (inputs.size() == 1) {
          // Same shape: the output is the input (then finished).
          std::memcpy(out, inputs[0]->raw(), count * sizeof(T));
        } else {
          broadcast_binary(plans[0], inputs[0]->data<T>(), inputs[1]->data<T>(), out, threads, op);
          for (std::size_t i = 2; i < inputs.size(); ++i) {
            broadcast_binary(plans[i - 1], out, inputs[i]->data<T>(), out, threads, op);
          }
        }
        if constexpr (!std::is_same_v<Finish, Identity>) {
          unary_loop(out, out, count, threads, finish);
        }
      });
}

// Max/Min propagate NaN, as numpy's maximum/minimum do.
template <typename T>
T maximum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a > b || a != a) ? a : b;
  } else {
    return std::max(a, b);
  }
}
template <typename T>
T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a < b || a != a) ? a : b;
  } else {
    return std::min(a, b);
  }
}

std::unique_ptr<Kernel> make_max_min(const KernelContext& context, bool is_max) {
  check_same_types(context);
  return visit_type<CLEAVE_NUMERIC_TYPES>(context, context.input(0).dtype(), [&]<typename T>() {
    if (is_max) {
      return make_variadic<T>(
          context, [](T a, T b) { return maximum(a, b); }, Identity{});
    }
    return make_variadic<T>(
        context, [](T a, T b) { return minimum(a, b); }, Identity{});
  });
}

using Factory = std::function<std::unique_ptr<Kernel>(const KernelContext&)>;

// An f16 node computed in f32, as ONNX Runtime does: the inputs widened, the f32 kernel
// (prepared on the widened inputs), its results narrowed back to f16.
class ThroughFloatKernel final : public Kernel {
 public:
  ThroughFloatKernel(const KernelContext& context, const Factory& create) {
    for (const Tensor* input : context.inputs) {
      wide_.push_back(input ? Tensor::allocate(DataType::kFloat, input->shape()) : Tensor());
      if (input) widen(*input, wide_.back());
    }
    std::vector<const Tensor*> inputs = wide_inputs(context.inputs);
    KernelContext wide{context.graph, context.node_id,  context.node,   context.opset,
                       inputs,        context.constant, context.engine, context.threads};
    inner_ = create(wide);
    for (const OutputSpec& spec : inner_->output_specs()) {
      if (spec.layout || spec.alias_of >= 0 || spec.dtype != DataType::kFloat) {
        throw UnsupportedError(fmt::format("{}: f16 inputs are not supported", context.where()));
      }
      results_.push_back(Tensor::allocate(DataType::kFloat, spec.shape));
      specs_.push_back(plain_output(DataType::kFloat16, spec.shape));
    }
  }

  std::vector<OutputSpec> output_specs() const override { return specs_; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    for (std::size_t i = 0; i < inputs.size() && i < wide_.size(); ++i) {
      if (inputs[i]) widen(*inputs[i], wide_[i]);
    }
    std::vector<Tensor*> results;
    for (Tensor& result : results_) results.push_back(&result);
    inner_->run(wide_inputs(inputs), results, stream);
    stream.wait();
    for (std::size_t k = 0; k < outputs.size() && k < results_.size(); ++k) {
      if (!outputs[k]) continue;
      const float* from = results_[k].data<float>();
      auto* to = outputs[k]->data<uint16_t>();
      for (int64_t e = 0; e < results_[k].element_count(); ++e) to[e] = float_to_half(from[e]);
    }
  }

 private:
  static void widen(const Tensor& from, Tensor& to) {
    const auto* half = from.data<uint16_t>();
    float* wide = to.data<float>();
    for (int64_t e = 0; e < from.element_count(); ++e) wide[e] = half_to_float(half[e]);
  }
  std::vector<const Tensor*> wide_inputs(const std::vector<const Tensor*>& given) const {
    std::vector<const Tensor*> inputs;
    for (std::size_t i = 0; i < given.size() && i < wide_.size(); ++i) {
      inputs.push_back(given[i] ? &wide_[i] : nullptr);
    }
    return inputs;
  }

  std::vector<Tensor> wide_;
  std::vector<Tensor> results_;
  std::vector<OutputSpec> specs_;
  std::unique_ptr<Kernel> inner_;
};

// `create` for every type it covers, and f16 inputs computed through it in f32.
Factory with_half(Factory create) {
  return [create](const KernelContext& context) -> std::unique_ptr<Kernel> {
    if (context.input(0).dtype() == DataType::kFloat16) {
      return std::make_unique<ThroughFloatKernel>(context, create);
    }
    return create(context);
  };
}

std::vector<DataType> and_half(std::vector<DataType> types) {
  types.push_back(DataType::kFloat16);
  return types;
}

void add(KernelRegistry& registry, std::string op_type, std::vector<DataType> types,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create,
         bool accepts_blocked = false) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.dtypes = std::move(types);
  info.create = std::move(create);
  if (accepts_blocked) info.accepts_blocked = [](std::size_t input) { return input <= 1; };
  registry.add(std::move(info));
}

}  // namespace

void register_binary_kernels(KernelRegistry& registry) {
  add(
      registry, "Add", kNumericTypes,
      [](const KernelContext& context) {
        return make_arithmetic(context, algorithm::binary_add, true,
                               [](auto a, auto b) { return add_values(a, b); });
      },
      true);
  add(
      registry, "Sub", kNumericTypes,
      [](const KernelContext& context) {
        return make_arithmetic(context, algorithm::binary_sub, false,
                               [](auto a, auto b) { return subtract_values(a, b); });
      },
      true);
  add(
      registry, "Mul", kNumericTypes,
      [](const KernelContext& context) {
        return make_arithmetic(context, algorithm::binary_mul, true,
                               [](auto a, auto b) { return multiply_values(a, b); });
      },
      true);
  add(
      registry, "Div", kNumericTypes,
      [](const KernelContext& context) {
        return make_arithmetic(
            context, algorithm::binary_div, false, [](auto a, auto b) { return divide(a, b); },
            true);
      },
      true);
  add(registry, "Pow", {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64},
      make_pow);
  add(registry, "Mod", and_half(kNumericTypes), with_half([](const KernelContext& context) {
        check_same_types(context);
        const bool fmod = context.node.int_attribute("fmod", 0) != 0;
        return visit_type<CLEAVE_NUMERIC_TYPES>(
            context, context.input(0).dtype(), [&]<typename T>() -> std::unique_ptr<Kernel> {
              if constexpr (std::is_floating_point_v<T>) {
                if (!fmod) {
                  throw Error(fmt::format("{}: Mod of floating-point inputs needs fmod=1",
                                          context.where()));
                }
                return make_broadcast<T, T, T>(context, context.input(0).dtype(),
                                               [](T a, T b) { return std::fmod(a, b); });
              } else {
                if (fmod) {
                  return make_broadcast<T, T, T>(
                      context, context.input(0).dtype(),
                      [](T a, T b) { return truncated_mod(a, b); }, nonzero_divisor<T>(context));
                }
                return make_broadcast<T, T, T>(
                    context, context.input(0).dtype(), [](T a, T b) { return floor_mod(a, b); },
                    nonzero_divisor<T>(context));
              }
            });
      }));
  add(registry, "BitShift",
      {DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64},
      [](const KernelContext& context) {
        check_same_types(context);
        const std::string direction = context.node.string_attribute("direction", "");
        if (direction != "LEFT" && direction != "RIGHT") {
          throw Error(fmt::format("{}: BitShift's direction must be LEFT or RIGHT, got '{}'",
                                  context.where(), direction));
        }
        const bool left = direction == "LEFT";
        return visit_type<DataType::kUInt8, DataType::kUInt16, DataType::kUInt32,
                          DataType::kUInt64>(context, context.input(0).dtype(), [&]<typename T>() {
          return make_broadcast<T, T, T>(context, context.input(0).dtype(), [left](T a, T b) {
            // Shifting by the width or more is undefined in C++; all bits leave.
            if (b >= sizeof(T) * 8) return T(0);
            return static_cast<T>(left ? a << b : a >> b);
          });
        });
      });
  add(registry, "PRelu", kNumericTypes, [](const KernelContext& context) {
    check_same_types(context);
    const Tensor& x = context.input(0);
    const Tensor& slope = context.input(1);
    std::vector<int64_t> slope_shape = slope.shape();
    if (context.opset < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.dim(0) == x.dim(1)) {
      // Before opset 7 a 1-D slope holds one value per channel (axis 1).
      slope_shape.resize(x.rank() - 1, 1);
    }
    if (!broadcasts_to(slope_shape, x.shape())) {
      throw Error(fmt::format("{}: PRelu's slope {} does not broadcast to the input {}",
                              context.where(), slope.describe(), x.describe()));
    }
    return visit_type<CLEAVE_NUMERIC_TYPES>(context, x.dtype(), [&]<typename T>() {
      return make_broadcast<T, T, T>(
          context, x.dtype(), [](T v, T s) { return v < 0 ? multiply_values(v, s) : v; }, {},
          slope_shape);
    });
  });

  add(registry, "Max", and_half(kNumericTypes),
      with_half([](const KernelContext& context) { return make_max_min(context, true); }));
  add(registry, "Min", and_half(kNumericTypes),
      with_half([](const KernelContext& context) { return make_max_min(context, false); }));
  add(registry, "Sum", kNumericTypes, [](const KernelContext& context) {
    check_same_types(context);
    return visit_type<CLEAVE_NUMERIC_TYPES>(context, context.input(0).dtype(), [&]<typename T>() {
      return make_variadic<T>(
          context, [](T a, T b) { return add_values(a, b); }, Identity{});
    });
  });
  add(registry, "Mean", kFloatTypes, [](const KernelContext& context) {
    check_same_types(context);
    const auto inputs = static_cast<double>(context.inputs.size());
    return visit_type<CLEAVE_FLOAT_TYPES>(context, context.input(0).dtype(), [&]<typename T>() {
      return make_variadic<T>(
          context, [](T a, T b) { return a + b; },
          [inputs](T v) { return static_cast<T>(v / inputs); });
    });
  });
}

}  // namespace cleave::elementwise
