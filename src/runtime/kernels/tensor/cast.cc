// Cast and CastLike between every real element type, bool, float16 and bfloat16.
#include <cmath>
#include <cstring>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/registration.h"
#include "support/half_float.h"

namespace cleave::elementwise {

namespace {

// Storage types that tell the three non-arithmetic element types apart.
struct Bool {
  uint8_t value;
};
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename To, typename From>
To cast_value(From value) {
  if constexpr (std::is_same_v<From, Half>) {
    return cast_value<To>(half_to_float(value.bits));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return cast_value<To>(bfloat16_to_float(value.bits));
  } else if constexpr (std::is_same_v<From, Bool>) {
    return cast_value<To>(static_cast<uint8_t>(value.value != 0));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{float_to_half(static_cast<float>(value))};
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16{float_to_bfloat16(static_cast<float>(value))};
  } else if constexpr (std::is_same_v<To, Bool>) {
    return Bool{static_cast<uint8_t>(value != From(0))};
  } else {
    return convert<To>(value);
  }
}

template <typename Visitor>
decltype(auto) visit_cast_type(const KernelContext& context, DataType type, Visitor&& visit) {
  switch (type) {
    case DataType::kFloat:
      return visit.template operator()<float>();
    case DataType::kDouble:
      return visit.template operator()<double>();
    case DataType::kFloat16:
      return visit.template operator()<Half>();
    case DataType::kBFloat16:
      return visit.template operator()<BFloat16>();
    case DataType::kInt8:
      return visit.template operator()<int8_t>();
    case DataType::kInt16:
      return visit.template operator()<int16_t>();
    case DataType::kInt32:
      return visit.template operator()<int32_t>();
    case DataType::kInt64:
      return visit.template operator()<int64_t>();
    case DataType::kUInt8:
      return visit.template operator()<uint8_t>();
    case DataType::kUInt16:
      return visit.template operator()<uint16_t>();
    case DataType::kUInt32:
      return visit.template operator()<uint32_t>();
    case DataType::kUInt64:
      return visit.template operator()<uint64_t>();
    case DataType::kBool:
      return visit.template operator()<Bool>();
    default:
      throw_unsupported_type(context, type);
  }
}

std::unique_ptr<Kernel> make_cast(const KernelContext& context, DataType target) {
  const Tensor& x = context.input(0);
  if (target == x.dtype()) {
    // Same type: the output shares the input's bytes.
    OutputSpec spec = plain_output(target, x.shape());
    spec.alias_of = 0;
    return make_kernel({spec}, [](const std::vector<const Tensor*>&, const std::vector<Tensor*>&,
                                  dnnl::stream&) {});
  }
  const int64_t count = x.element_count();
  const int threads = context.threads;
  return visit_cast_type(context, x.dtype(), [&]<typename From>() {
    return visit_cast_type(context, target, [&]<typename To>() {
      return make_kernel({plain_output(target, x.shape())},
                         [=](const std::vector<const Tensor*>& inputs,
                             const std::vector<Tensor*>& outputs, dnnl::stream&) {
                           unary_loop(inputs[0]->data<From>(), outputs[0]->data<To>(), count,
                                      threads, [](From v) { return cast_value<To>(v); });
                         });
    });
  });
}

const std::vector<DataType> kCastTypes = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt8,  DataType::kInt16,  DataType::kInt32,   DataType::kInt64,
    DataType::kUInt8, DataType::kUInt16, DataType::kUInt32,  DataType::kUInt64,
    DataType::kBool};

}  // namespace

void register_cast_kernels(KernelRegistry& registry) {
  KernelInfo cast;
  cast.op_type = "Cast";
  cast.dtypes = kCastTypes;
  cast.create = [](const KernelContext& context) {
    const Attribute* to = context.node.attribute("to");
    if (!to || to->kind != AttributeKind::kInt) {
      throw Error(fmt::format("{}: Cast needs an int attribute 'to'", context.where()));
    }
    return make_cast(context, static_cast<DataType>(to->i));
  };
  registry.add(std::move(cast));

  KernelInfo cast_like;
  cast_like.op_type = "CastLike";
  cast_like.dtypes = kCastTypes;
  cast_like.create = [](const KernelContext& context) {
    return make_cast(context, context.input(1).dtype());
  };
  registry.add(std::move(cast_like));
}

}  // namespace cleave::elementwise
