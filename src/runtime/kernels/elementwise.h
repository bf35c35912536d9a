// Shared machinery of the elementwise kernels: broadcasting loops, type dispatch, oneDNN choice.
#pragma once

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/tensor.h"

namespace cleave::elementwise {

// Below this many elements a loop runs on one thread: waking a team costs more than it saves.
inline constexpr int64_t kParallelThreshold = int64_t{1} << 16;
// The same for data in a oneDNN channel-blocked layout, which a convolution has just written
// from all threads (see the channel-broadcast kernel).
inline constexpr int64_t kBlockedParallelThreshold = int64_t{1} << 15;
// Below this many elements a plain vectorised loop (add, max, ...) beats a oneDNN primitive,
// whose call costs about as much as 10K elements of such a loop.
inline constexpr int64_t kDnnlThreshold = int64_t{1} << 14;
// Transcendental functions have only scalar libm loops here, slower than oneDNN's vectorised
// code beyond a few dozen elements.
inline constexpr int64_t kTranscendentalThreshold = 64;
// oneDNN descriptors hold at most this many dimensions (DNNL_MAX_NDIMS).
inline constexpr std::size_t kDnnlMaxRank = 12;

// A prepared kernel whose work is one closure over the run's tensors.
class FunctionKernel final : public Kernel {
 public:
  using Body = std::function<void(const std::vector<const Tensor*>&, const std::vector<Tensor*>&,
                                  dnnl::stream&)>;
  FunctionKernel(std::vector<OutputSpec> specs, Body body)
      : specs_(std::move(specs)), body_(std::move(body)) {}
  std::vector<OutputSpec> output_specs() const override { return specs_; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    body_(inputs, outputs, stream);
  }

 private:
  std::vector<OutputSpec> specs_;
  Body body_;
};

inline OutputSpec plain_output(DataType dtype, std::vector<int64_t> shape) {
  OutputSpec spec;
  spec.dtype = dtype;
  spec.shape = std::move(shape);
  return spec;
}

inline std::unique_ptr<Kernel> make_kernel(std::vector<OutputSpec> specs,
                                           FunctionKernel::Body body) {
  return std::make_unique<FunctionKernel>(std::move(specs), std::move(body));
}

// ---- Element types -------------------------------------------------------------------------

template <DataType Type>
struct CppTypeOf;
template <>
struct CppTypeOf<DataType::kFloat> {
  using type = float;
};
template <>
struct CppTypeOf<DataType::kDouble> {
  using type = double;
};
template <>
struct CppTypeOf<DataType::kInt8> {
  using type = int8_t;
};
template <>
struct CppTypeOf<DataType::kInt16> {
  using type = int16_t;
};
template <>
struct CppTypeOf<DataType::kInt32> {
  using type = int32_t;
};
template <>
struct CppTypeOf<DataType::kInt64> {
  using type = int64_t;
};
template <>
struct CppTypeOf<DataType::kUInt8> {
  using type = uint8_t;
};
template <>
struct CppTypeOf<DataType::kUInt16> {
  using type = uint16_t;
};
template <>
struct CppTypeOf<DataType::kUInt32> {
  using type = uint32_t;
};
template <>
struct CppTypeOf<DataType::kUInt64> {
  using type = uint64_t;
};
// Bools are one byte holding 0 or 1; kernels read them as bytes and normalise where it matters.
template <>
struct CppTypeOf<DataType::kBool> {
  using type = uint8_t;
};
template <DataType Type>
using CppType = typename CppTypeOf<Type>::type;

[[noreturn]] void throw_unsupported_type(const KernelContext& context, DataType type);

// Calls `visit.template operator()<T>()` with the C++ type of `type`, which must be one of
// `Types`; UnsupportedError naming the node otherwise.
template <DataType First, DataType... Rest, typename Visitor>
decltype(auto) visit_type(const KernelContext& context, DataType type, Visitor&& visit) {
  if (type == First) return visit.template operator()<CppType<First>>();
  if constexpr (sizeof...(Rest) > 0) {
    return visit_type<Rest...>(context, type, std::forward<Visitor>(visit));
  } else {
    throw_unsupported_type(context, type);
  }
}

#define CLEAVE_FLOAT_TYPES DataType::kFloat, DataType::kDouble
#define CLEAVE_SIGNED_TYPES \
  CLEAVE_FLOAT_TYPES, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64
#define CLEAVE_NUMERIC_TYPES \
  CLEAVE_SIGNED_TYPES, DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64

// static_cast without undefined behaviour. Floats become integers as numpy (and x86) do for
// values in int64's range: truncated, then wrapped into narrower types; beyond that they
// saturate, and NaN becomes 0.
template <typename To, typename From>
To convert(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (value != value) return To(0);
    constexpr From kTwoTo63 = From(9223372036854775808.0);
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (value >= From(2) * kTwoTo63) return std::numeric_limits<uint64_t>::max();
      if (value >= kTwoTo63) return static_cast<uint64_t>(value);
    }
    if (value >= kTwoTo63) return static_cast<To>(std::numeric_limits<int64_t>::max());
    if (value < -kTwoTo63) return static_cast<To>(std::numeric_limits<int64_t>::min());
    return static_cast<To>(static_cast<int64_t>(value));
  } else {
    return static_cast<To>(value);
  }
}

inline const std::vector<DataType> kFloatTypes = {CLEAVE_FLOAT_TYPES};
inline const std::vector<DataType> kSignedTypes = {CLEAVE_SIGNED_TYPES};
inline const std::vector<DataType> kNumericTypes = {CLEAVE_NUMERIC_TYPES};

// ---- Parallel loops ------------------------------------------------------------------------

// Calls body(begin, end) over [0, count), split across up to `threads` OpenMP threads when the
// range has at least `min_parallel` elements. The body must not throw (exceptions cannot leave
// an OpenMP region).
template <typename Body>
void parallel_for(int64_t count, int threads, Body&& body,
                  int64_t min_parallel = kParallelThreshold) {
  if (threads <= 1 || count < min_parallel) {
    if (count > 0) body(int64_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads();
    const int64_t member = omp_get_thread_num();
    // Chunks are multiples of 16 elements so that threads do not share cache lines.
    const int64_t chunk = ((count + team - 1) / team + 15) & ~int64_t{15};
    const int64_t begin = std::min(count, member * chunk);
    const int64_t end = std::min(count, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

// ---- Broadcasting --------------------------------------------------------------------------

// numpy's multidirectional broadcast of `shapes`; throws Error naming the node when two
// dims differ and neither is 1.
std::vector<int64_t> broadcast_shape(const KernelContext& context,
                                     std::span<const std::vector<int64_t>> shapes);
// The shape input 1 of a binary op broadcasts with: its own, or, for ops of opsets before 7
// with `broadcast=1`, its dims placed at `axis` of input 0's (default: right-aligned) with 1s
// around (the legacy rule, which then reads as numpy broadcasting).
std::vector<int64_t> second_operand_shape(const KernelContext& context);
// Whether a node uses that legacy rule.
bool uses_legacy_broadcast(const KernelContext& context);
// Whether `shape` broadcasts to `target` by itself (ONNX's unidirectional broadcasting).
bool broadcasts_to(std::span<const int64_t> shape, std::span<const int64_t> target);

// How to walk an output of broadcast operands: output dims with size-1 dims dropped and
// neighbours merged where every operand allows, and each operand's element strides over
// them (0 where it is broadcast). The innermost stride of each operand is 0 or 1.
struct BroadcastPlan {
  std::vector<int64_t> dims;                  // At least one.
  std::vector<std::vector<int64_t>> strides;  // Per operand, per dim.
  int64_t count = 0;                          // Output elements.
};
BroadcastPlan plan_broadcast(std::span<const int64_t> output,
                             std::span<const std::vector<int64_t>> operands);

// Walks output elements [begin, end) of `plan` in runs along the innermost dim, calling
// body(output_offset, operand_offsets, length, operand_steps), where steps are the operands'
// innermost strides (0 or 1).
template <std::size_t N, typename Body>
void for_each_run(const BroadcastPlan& plan, int64_t begin, int64_t end, Body& body) {
  const std::size_t rank = plan.dims.size();
  const int64_t inner = plan.dims.back();
  std::vector<int64_t> index(rank);
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> steps{};
  int64_t rest = begin;
  for (std::size_t d = rank; d-- > 0;) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (std::size_t k = 0; k < N; ++k) offsets[k] += index[d] * plan.strides[k][d];
  }
  for (std::size_t k = 0; k < N; ++k) steps[k] = plan.strides[k][rank - 1];
  int64_t position = begin;
  while (position < end) {
    const int64_t length = std::min(inner - index[rank - 1], end - position);
    body(position, offsets, length, steps);
    position += length;
    index[rank - 1] += length;
    for (std::size_t k = 0; k < N; ++k) offsets[k] += length * steps[k];
    if (index[rank - 1] < inner) continue;
    // Carry into the outer dims, odometer style.
    for (std::size_t d = rank; d-- > 0;) {
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= index[d] * plan.strides[k][d];
      index[d] = 0;
      if (d == 0) break;
      ++index[d - 1];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d - 1];
      if (index[d - 1] < plan.dims[d - 1]) break;
    }
  }
}

// out = op(a, b) over broadcast operands (`plan` has the two operands in this order).
template <typename A, typename B, typename Out, typename Op>
void broadcast_binary(const BroadcastPlan& plan, const A* a, const B* b, Out* out, int threads,
                      Op op) {
  parallel_for(plan.count, threads, [&](int64_t begin, int64_t end) {
    auto body = [&](int64_t at, const std::array<int64_t, 2>& offsets, int64_t length,
                    const std::array<int64_t, 2>& steps) {
      const A* pa = a + offsets[0];
      const B* pb = b + offsets[1];
      Out* po = out + at;
      if (steps[0] == 1 && steps[1] == 1) {
        for (int64_t i = 0; i < length; ++i) po[i] = op(pa[i], pb[i]);
      } else if (steps[0] == 1) {
        const B vb = *pb;
        for (int64_t i = 0; i < length; ++i) po[i] = op(pa[i], vb);
      } else if (steps[1] == 1) {
        const A va = *pa;
        for (int64_t i = 0; i < length; ++i) po[i] = op(va, pb[i]);
      } else {
        std::fill_n(po, length, static_cast<Out>(op(*pa, *pb)));
      }
    };
    for_each_run<2>(plan, begin, end, body);
  });
}

// out = op(in) elementwise over `count` dense elements; `in` may equal `out`.
template <typename In, typename Out, typename Op>
void unary_loop(const In* in, Out* out, int64_t count, int threads, Op op) {
  parallel_for(count, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = op(in[i]);
  });
}

// ---- Channel layouts -----------------------------------------------------------------------

// The channel block of a float tensor's layout: 1 when plain, 4/8/16 for oneDNN's
// channel-blocked layouts of rank 3 to 5; nullopt for any other layout (channels-last,
// weights' double blocking).
std::optional<int64_t> channel_block_of(const Tensor& tensor);
// Whether a float tensor is in oneDNN's channels-last layout (nwc, nhwc, ndhwc).
bool is_channels_last(const Tensor& tensor);

// ---- oneDNN --------------------------------------------------------------------------------

// Whether a float tensor of this shape is worth handing to oneDNN (or must be: blocked).
bool use_dnnl(const Tensor& tensor, std::span<const int64_t> output_shape,
              int64_t min_elements = kDnnlThreshold);

// A unary float op oneDNN's eltwise primitive computes: algorithm and its alpha/beta, and from
// how many elements on oneDNN beats the plain loop.
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0;
  float beta = 0;
  int64_t min_elements = kDnnlThreshold;
};

// An eltwise op whose plain loop calls libm for every element.
inline Eltwise transcendental(dnnl::algorithm algorithm, float alpha = 0, float beta = 0) {
  return Eltwise{algorithm, alpha, beta, kTranscendentalThreshold};
}

// A kernel running `eltwise` on float input 0 with oneDNN, keeping a blocked input's layout
// when consumers allow it (else reordering to plain first).
std::unique_ptr<Kernel> make_dnnl_eltwise(const KernelContext& context, const Eltwise& eltwise);

// A kernel running `algorithm` on float inputs 0 and 1 with oneDNN, or nullptr when oneDNN
// cannot do it well (src0 needs broadcasting, a layout it only has a reference code for).
std::unique_ptr<Kernel> try_dnnl_binary(const KernelContext& context, dnnl::algorithm algorithm,
                                        bool commutative);

// Plain copies of blocked inputs, made at every run, for kernels that only read plain data.
class PlainInputs {
 public:
  explicit PlainInputs(const KernelContext& context);
  // The inputs with blocked ones replaced by plain copies.
  const std::vector<const Tensor*>& convert(const std::vector<const Tensor*>& inputs,
                                            dnnl::stream& stream);

 private:
  std::vector<std::shared_ptr<LayoutReorder>> reorders_;  // Null for plain inputs.
  std::vector<Tensor> copies_;
  std::vector<const Tensor*> converted_;
};

}  // namespace cleave::elementwise
