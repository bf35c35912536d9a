// Broadcasting comparison and logic kernels (bool results) and Where.
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/registration.h"

namespace cleave::elementwise {

namespace {

void add(KernelRegistry& registry, std::string op_type, std::vector<DataType> types,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.dtypes = std::move(types);
  info.create = std::move(create);
  registry.add(std::move(info));
}

void check_same_types(const KernelContext& context) {
  if (context.input(0).dtype() != context.input(1).dtype()) {
    throw Error(fmt::format("{}: {} compares {} with {}; both inputs need one type",
                            context.where(), context.node.op_type,
                            dtype_name(context.input(0).dtype()),
                            dtype_name(context.input(1).dtype())));
  }
}

// out = predicate(a, b) as bool, with numpy broadcasting.
template <typename T, typename Predicate>
std::unique_ptr<Kernel> make_comparison(const KernelContext& context, Predicate predicate) {
  const std::vector<std::vector<int64_t>> shapes = {context.input(0).shape(),
                                                    second_operand_shape(context)};
  std::vector<int64_t> output = broadcast_shape(context, shapes);
  const BroadcastPlan plan = plan_broadcast(output, shapes);
  const int threads = context.threads;
  return make_kernel({plain_output(DataType::kBool, std::move(output))},
                     [=](const std::vector<const Tensor*>& inputs,
                         const std::vector<Tensor*>& outputs, dnnl::stream&) {
                       broadcast_binary(
                           plan, inputs[0]->data<T>(), inputs[1]->data<T>(),
                           outputs[0]->data<uint8_t>(), threads,
                           [predicate](T a, T b) { return static_cast<uint8_t>(predicate(a, b)); });
                     });
}

template <typename Predicate>
void add_comparison(KernelRegistry& registry, std::string op_type, bool with_bool,
                    Predicate predicate) {
  std::vector<DataType> types = kNumericTypes;
  if (with_bool) types.push_back(DataType::kBool);
  add(registry, std::move(op_type), types, [predicate, with_bool](const KernelContext& context) {
    check_same_types(context);
    if (with_bool && context.input(0).dtype() == DataType::kBool) {
      return make_comparison<uint8_t>(
          context, [predicate](uint8_t a, uint8_t b) { return predicate(a != 0, b != 0); });
    }
    return visit_type<CLEAVE_NUMERIC_TYPES>(context, context.input(0).dtype(), [&]<typename T>() {
      return make_comparison<T>(context, predicate);
    });
  });
}

template <typename Predicate>
void add_logic(KernelRegistry& registry, std::string op_type, Predicate predicate) {
  add(registry, std::move(op_type), {DataType::kBool}, [predicate](const KernelContext& context) {
    check_same_types(context);
    return make_comparison<uint8_t>(
        context, [predicate](uint8_t a, uint8_t b) { return predicate(a != 0, b != 0); });
  });
}

// Where selects bytes: only the element size of X and Y matters.
template <typename T>
std::unique_ptr<Kernel> make_where(const KernelContext& context) {
  const std::vector<std::vector<int64_t>> shapes = {
      context.input(0).shape(), context.input(1).shape(), context.input(2).shape()};
  std::vector<int64_t> output = broadcast_shape(context, shapes);
  const BroadcastPlan plan = plan_broadcast(output, shapes);
  const int threads = context.threads;
  return make_kernel({plain_output(context.input(1).dtype(), std::move(output))},
                     [=](const std::vector<const Tensor*>& inputs,
                         const std::vector<Tensor*>& outputs, dnnl::stream&) {
                       const uint8_t* condition = inputs[0]->data<uint8_t>();
                       const T* x = inputs[1]->data<T>();
                       const T* y = inputs[2]->data<T>();
                       T* out = outputs[0]->data<T>();
                       parallel_for(plan.count, threads, [&](int64_t begin, int64_t end) {
                         auto body = [&](int64_t at, const std::array<int64_t, 3>& offsets,
                                         int64_t length, const std::array<int64_t, 3>& steps) {
                           const uint8_t* c = condition + offsets[0];
                           const T* px = x + offsets[1];
                           const T* py = y + offsets[2];
                           T* po = out + at;
                           if (steps[0] == 1 && steps[1] == 1 && steps[2] == 1) {
                             for (int64_t i = 0; i < length; ++i) po[i] = c[i] ? px[i] : py[i];
                           } else {
                             for (int64_t i = 0; i < length; ++i) {
                               po[i] = c[i * steps[0]] ? px[i * steps[1]] : py[i * steps[2]];
                             }
                           }
                         };
                         for_each_run<3>(plan, begin, end, body);
                       });
                     });
}

}  // namespace

void register_logic_kernels(KernelRegistry& registry) {
  add_comparison(registry, "Equal", true, [](auto a, auto b) { return a == b; });
  add_comparison(registry, "Greater", false, [](auto a, auto b) { return a > b; });
  add_comparison(registry, "Less", false, [](auto a, auto b) { return a < b; });
  add_comparison(registry, "GreaterOrEqual", false, [](auto a, auto b) { return a >= b; });
  add_comparison(registry, "LessOrEqual", false, [](auto a, auto b) { return a <= b; });
  add_logic(registry, "And", [](bool a, bool b) { return a && b; });
  add_logic(registry, "Or", [](bool a, bool b) { return a || b; });
  add_logic(registry, "Xor", [](bool a, bool b) { return a != b; });

  add(registry, "Where", {DataType::kBool}, [](const KernelContext& context) {
    if (context.input(0).dtype() != DataType::kBool) {
      throw Error(fmt::format("{}: Where's condition must be bool, got {}", context.where(),
                              dtype_name(context.input(0).dtype())));
    }
    const DataType type = context.input(1).dtype();
    if (context.input(2).dtype() != type) {
      throw Error(fmt::format("{}: Where's inputs have types {} and {}; they need one type",
                              context.where(), dtype_name(type),
                              dtype_name(context.input(2).dtype())));
    }
    switch (element_size(type)) {
      case 1:
        return make_where<uint8_t>(context);
      case 2:
        return make_where<uint16_t>(context);
      case 4:
        return make_where<uint32_t>(context);
      case 8:
        return make_where<uint64_t>(context);
      default:
        throw_unsupported_type(context, type);
    }
  });
}

}  // namespace cleave::elementwise
