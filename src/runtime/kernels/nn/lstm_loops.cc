// LSTM as one matrix product of the whole input and the recurrence in cleave's own vector loops.
#include "runtime/kernels/nn/lstm_loops.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <tuple>
#include <vector>

#include <omp.h>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/wait_policy.h"

// The vector type below is a GCC extension whose width the target attributes choose; its
// helpers are always inlined into one loop per instruction set, so no vector crosses a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace cleave {

namespace {

using dnnl::memory;

// ONNX inputs of LSTM.
constexpr std::size_t kX = 0, kW = 1, kR = 2, kB = 3, kLengths = 4, kInitialH = 5, kInitialC = 6,
                      kPeepholes = 7;

// Blocks of 16 hidden units (an AVX-512 vector, two AVX2 ones); their four gates side by side,
// in the order the loops read them: i, f, c~, o. ONNX orders the gates i, o, f, c.
constexpr int64_t kLanes = kLstmLoopsLanes;
constexpr int64_t kGates = 4;
constexpr int64_t kBlock = kLanes * kGates;
// R streams from L2 every step (256 KB at hidden 128, past L1): asking for it 8 rows of k ahead
// took the held-out lstm from 0.66 to 0.57 ms on one thread (4 and 16 rows: no better).
constexpr int64_t kPrefetchAhead = 8 * kBlock;
constexpr int64_t kOnnxGate[kGates] = {0, 2, 3, 1};

// A vector of 16 floats (AVX-512's zmm) or of 8 (AVX2's ymm); a comparison gives the integer
// vector of the same width.
typedef float Vec16 __attribute__((vector_size(16 * sizeof(float))));
typedef float Vec8 __attribute__((vector_size(8 * sizeof(float))));

template <typename V>
using IntOf = decltype(V{} < V{});

template <typename V>
constexpr int64_t kWidth = sizeof(V) / sizeof(float);

#define CLEAVE_INLINE inline __attribute__((always_inline))

template <typename V>
CLEAVE_INLINE V load(const float* from) {
  V v;
  std::memcpy(&v, from, sizeof(v));
  return v;
}

template <typename V>
CLEAVE_INLINE void store(float* to, V v) {
  std::memcpy(to, &v, sizeof(v));
}

// The bits of one vector type as another: std::bit_cast on these vector types is an out-of-line
// call at -O0 that the sanitizer build's UBSan flagged as a null load.
template <typename To, typename From>
CLEAVE_INLINE To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}

template <typename V>
CLEAVE_INLINE V splat(float value) {
  return V{} + value;
}

// exp(t) for t ≤ 0 as 2^n·2^f (n integer, |f| ≤ 1/2, 2^f a degree-5 fit within 1.1e-7), the
// approximation of fast_math.cc's swish; below -87 the result is 0 within float's normal range.
template <typename V>
CLEAVE_INLINE V exp_nonpositive(V t) {
  V scaled = t * 1.44269504088896341f;
  scaled = scaled < -126.0f ? splat<V>(-126.0f) : scaled;
  constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23
  const V shifted = scaled + kRoundingShift;
  const V n = shifted - kRoundingShift;
  const V f = scaled - n;
  V p = splat<V>(1.340043218e-03f);
  p = p * f + 9.676037098e-03f;
  p = p * f + 5.550327214e-02f;
  p = p * f + 2.402210736e-01f;
  p = p * f + 6.931472067e-01f;
  p = p * f + 1.000000075e+00f;
  // shifted's low mantissa bits hold n + 2^22; rebuild 2^n from them.
  using IntV = IntOf<V>;
  const IntV exponent = bits_as<IntV>(shifted) - std::bit_cast<int32_t>(kRoundingShift);
  const IntV bits = (exponent + 127) << 23;
  return p * bits_as<V>(bits);
}

// 1/(1+e) for x ≥ 0 and e/(1+e) below, e = exp(-|x|): no overflow, relative accuracy kept.
template <typename V>
CLEAVE_INLINE V sigmoid(V x) {
  const V magnitude = x < 0.0f ? -x : x;
  const V e = exp_nonpositive(-magnitude);
  const V s = 1.0f / (1.0f + e);
  return x < 0.0f ? e * s : s;
}

// ±(1-e)/(1+e), e = exp(-2|x|).
template <typename V>
CLEAVE_INLINE V tanh(V x) {
  const V magnitude = x < 0.0f ? -x : x;
  const V e = exp_nonpositive(-2.0f * magnitude);
  const V t = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -t : t;
}

// One time step of up to kRows batch rows: gates = P + H · Rᵀ, then C and H. `r` is one
// direction's packed Rᵀ, [blocks][hidden][kBlock]; `p` the rows' projections, [blocks · kBlock];
// H is read from `h_in` (hidden floats a row) and written to `h_out`, C updated in place
// (blocks · kLanes floats a row each).
struct StepRows {
  const float* p[2];
  const float* h_in[2];
  float* h_out[2];
  float* c[2];
};

// Where the floats of vector `part` (kWidth<V> hidden units, a block's part'th) of gate g start
// in a row of kBlock floats a block: a narrower vector takes a slice of each gate's 16 units.
template <typename V>
CLEAVE_INLINE int64_t part_offset(int64_t part, int64_t g) {
  constexpr int64_t kParts = kLanes / kWidth<V>;
  return part / kParts * kBlock + g * kLanes + part % kParts * kWidth<V>;
}

// kColumns vectors of hidden units from the part'th: each unit's gates, C and H.
template <typename V, int kRows, int kColumns>
CLEAVE_INLINE void step_parts(const float* r, const StepRows& rows, int64_t hidden, int64_t part) {
  constexpr int64_t kParts = kLanes / kWidth<V>;
  V acc[kRows][kColumns][kGates];
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kColumns; ++col) {
      for (int64_t g = 0; g < kGates; ++g)
        acc[row][col][g] = load<V>(rows.p[row] + part_offset<V>(part + col, g));
    }
  }
  // A block's R is [hidden][kBlock], the next block's hidden · kBlock floats on.
  const float* weights = r + part / kParts * hidden * kBlock;
  for (int64_t k = 0; k < hidden; ++k, weights += kBlock) {
    V w[kColumns][kGates];
    for (int col = 0; col < kColumns; ++col) {
      for (int64_t g = 0; g < kGates; ++g) {
        const int64_t q = part + col;
        const float* at = weights + (q / kParts - part / kParts) * hidden * kBlock + g * kLanes +
                          q % kParts * kWidth<V>;
        __builtin_prefetch(at + kPrefetchAhead);
        w[col][g] = load<V>(at);
        // Rows that share R read each vector once: else GCC folds the load into every row's
        // multiply-add, and the loads, not the multiply-adds, bound the loop (Zen 5: 1.4x).
        if constexpr (kRows > 1) asm("" : "+v"(w[col][g]));
      }
    }
    for (int row = 0; row < kRows; ++row) {
      const float h = rows.h_in[row][k];
      for (int col = 0; col < kColumns; ++col) {
        for (int64_t g = 0; g < kGates; ++g) acc[row][col][g] += w[col][g] * h;
      }
    }
  }
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kColumns; ++col) {
      const int64_t unit = (part + col) * kWidth<V>;
      float* c = rows.c[row] + unit;
      const V input = sigmoid(acc[row][col][0]), forget = sigmoid(acc[row][col][1]);
      const V cell = forget * load<V>(c) + input * tanh(acc[row][col][2]);
      store(c, cell);
      store(rows.h_out[row] + unit, sigmoid(acc[row][col][3]) * tanh(cell));
    }
  }
}

// Blocks [begin, end) of hidden units, kColumns vectors at a time.
template <typename V, int kRows, int kColumns>
CLEAVE_INLINE void step_body(const float* r, const StepRows& rows, int64_t hidden, int64_t begin,
                             int64_t end) {
  constexpr int64_t kParts = kLanes / kWidth<V>;
  int64_t part = begin * kParts;
  const int64_t last = end * kParts;
  for (; part + kColumns <= last; part += kColumns)
    step_parts<V, kRows, kColumns>(r, rows, hidden, part);
  for (; part < last; ++part) step_parts<V, kRows, 1>(r, rows, hidden, part);
}

#define CLEAVE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))
#define CLEAVE_AVX2 __attribute__((target("avx2,fma")))

// Two rows share each load of R, and two blocks of units interleave, where AVX-512's 32
// registers hold their accumulators.
template <int kRows, int kColumns>
CLEAVE_AVX512 void step_avx512(const float* r, const StepRows& rows, int64_t hidden, int64_t begin,
                               int64_t end) {
  step_body<Vec16, kRows, kColumns>(r, rows, hidden, begin, end);
}

// AVX2's 16 registers of 8 floats: one row takes a block's two halves (8 accumulators, R read
// from memory by each multiply-add), two rows one half at a time (8 accumulators, R's 4 vectors
// and 2 values of H).
template <int kRows, int kColumns>
CLEAVE_AVX2 void step_avx2(const float* r, const StepRows& rows, int64_t hidden, int64_t begin,
                           int64_t end) {
  step_body<Vec8, kRows, kColumns>(r, rows, hidden, begin, end);
}

#undef CLEAVE_AVX2
#undef CLEAVE_AVX512
#undef CLEAVE_INLINE

using StepLoop = void (*)(const float*, const StepRows&, int64_t, int64_t, int64_t);

struct StepLoops {
  StepLoop one = nullptr, two = nullptr;
};

// One switch (ONEDNN_MAX_CPU_ISA) caps these loops and oneDNN's kernels alike.
StepLoops pick_step_loops() {
  if (vector_isa() == VectorIsa::kAvx512) return {step_avx512<1, 2>, step_avx512<2, 2>};
  return {step_avx2<1, 2>, step_avx2<2, 1>};
}

class LstmLoopsKernel : public Kernel, public PackedConstants {
 public:
  LstmLoopsKernel(const KernelContext& context, const RecurrentDims& dims)
      : dims_(dims),
        blocks_((dims.hidden + kLanes - 1) / kLanes),
        columns_(blocks_ * kBlock),
        outputs_(context.node.outputs.size()),
        loops_(pick_step_loops()) {
    const int64_t d = dims.directions, n = dims.batch;
    specs_ = recurrent_output_specs(dims, outputs_);
    given_h_ = context.has_input(kInitialH);
    given_c_ = context.has_input(kInitialC);
    recurrence_threads_ = recurrence_threads(omp_get_max_threads(), blocks_);
    region_threads_ = recurrence_threads_ > 1 ? omp_get_max_threads() : 1;
    pack(context);
    projection_.resize(static_cast<std::size_t>(dims.steps * n * d * columns_));
    const auto state = static_cast<std::size_t>(n * blocks_ * kLanes);
    for (std::vector<float>* buffer : {&h_[0], &h_[1], &c_}) buffer->resize(state);
  }

  std::vector<OutputSpec> output_specs() const override { return specs_; }
  // cleave's own loops, as its other vector kernels name theirs; the input's product is oneDNN's.
  std::string implementation() const override { return "cleave:" + vector_isa_name(vector_isa()); }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != kW && input != kR && input != kB;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    product_.set(DNNL_ARG_SRC, inputs[kX]->raw());
    product_.set(DNNL_ARG_DST, projection_.data());
    product_.execute(stream);
    stream.wait();
    float* y = !outputs.empty() && outputs[0] ? outputs[0]->data<float>() : nullptr;
    for (int64_t d = 0; d < dims_.directions; ++d) {
      start_states(inputs, d);
      run_direction(d, y);
      for (std::size_t k = 1; k < outputs.size() && k < 3; ++k) {
        if (outputs[k]) final_state(k == 1 ? h_[dims_.steps % 2] : c_, d, outputs[k]);
      }
    }
  }

 private:
  int64_t state_row(int64_t d, int64_t b) const {
    return dims_.batch_major ? b * dims_.directions + d : d * dims_.batch + b;
  }

  // Initial H and C of direction d ([directions, batch, hidden], or batch-major), or zeros.
  void start_states(const std::vector<const Tensor*>& inputs, int64_t d) {
    const int64_t hs = dims_.hidden, width = blocks_ * kLanes;
    std::fill(h_[0].begin(), h_[0].end(), 0.0f);
    std::fill(c_.begin(), c_.end(), 0.0f);
    for (auto [slot, given, state] :
         {std::tuple{kInitialH, given_h_, &h_[0]}, std::tuple{kInitialC, given_c_, &c_}}) {
      if (!given || slot >= inputs.size() || inputs[slot] == nullptr) continue;
      const float* from = inputs[slot]->data<float>();
      for (int64_t b = 0; b < dims_.batch; ++b)
        std::copy_n(from + state_row(d, b) * hs, hs, state->data() + b * width);
    }
  }

  void final_state(const std::vector<float>& state, int64_t d, Tensor* output) const {
    const int64_t hs = dims_.hidden, width = blocks_ * kLanes;
    for (int64_t b = 0; b < dims_.batch; ++b)
      std::copy_n(state.data() + b * width, hs, output->data<float>() + state_row(d, b) * hs);
  }

  // The steps of direction d. The hidden units' blocks are split among the recurrence's
  // threads; each step reads every unit's H of the step before, so they meet once a step.
  void run_direction(int64_t d, float* y) {
#pragma omp parallel num_threads(region_threads_) if (region_threads_ > 1)
    {
      const int64_t members = omp_get_num_threads();
      const auto [begin, end] = recurrence_blocks(
          omp_get_thread_num(), members, std::min<int64_t>(recurrence_threads_, members), blocks_);
      run_blocks(d, y, begin, end);
    }
  }

  void run_blocks(int64_t d, float* y, int64_t begin, int64_t end) {
    const int64_t t_count = dims_.steps, n = dims_.batch, hs = dims_.hidden;
    const int64_t width = blocks_ * kLanes, directions = dims_.directions;
    const int64_t first_unit = begin * kLanes, units = std::min(end * kLanes, hs) - first_unit;
    const bool reverse = dims_.reverse || d == 1;
    const float* r = recurrent_.data() + d * blocks_ * hs * kBlock;
    for (int64_t i = 0; i < t_count; ++i) {
      const int64_t t = reverse ? t_count - 1 - i : i;
      const float* h_in = h_[i % 2].data();
      float* h_out = h_[(i + 1) % 2].data();
      auto x_row = [&](int64_t b) { return dims_.batch_major ? b * t_count + t : t * n + b; };
      for (int64_t b = 0; b < n;) {
        const int rows = loops_.two != nullptr && b + 1 < n ? 2 : 1;
        StepRows step{};
        for (int row = 0; row < rows; ++row) {
          step.p[row] = projection_.data() + (x_row(b + row) * directions + d) * columns_;
          step.h_in[row] = h_in + (b + row) * width;
          step.h_out[row] = h_out + (b + row) * width;
          step.c[row] = c_.data() + (b + row) * width;
        }
        (rows == 2 ? loops_.two : loops_.one)(r, step, hs, begin, end);
        b += rows;
      }
      if (y != nullptr && units > 0) {
        for (int64_t b = 0; b < n; ++b) {
          const int64_t row =
              dims_.batch_major ? (b * t_count + t) * directions + d : (t * directions + d) * n + b;
          std::copy_n(h_out + b * width + first_unit, units, y + row * hs + first_unit);
        }
      }
      // H of this step is read whole by the next; the one after writes where this one read.
#pragma omp barrier
    }
  }

  // Wᵀ of every direction as [input, directions · columns_] and Rᵀ as [directions][blocks_]
  // [hidden][kBlock], gates in the loops' order, units past hidden zero (their gates then stay
  // at C = 0, H = 0, and no step reads them); Wb + Rb the matmul's bias.
  void pack(const KernelContext& context) {
    const int64_t d = dims_.directions, hs = dims_.hidden, in = dims_.input;
    const int64_t all_columns = d * columns_;
    const float* w = context.input(kW).data<float>();
    const float* rw = context.input(kR).data<float>();
    const float* bias = context.has_input(kB) ? context.input(kB).data<float>() : nullptr;
    std::vector<float> wt(static_cast<std::size_t>(in * all_columns), 0.0f);
    std::vector<float> b(static_cast<std::size_t>(all_columns), 0.0f);
    recurrent_.assign(static_cast<std::size_t>(d * blocks_ * hs * kBlock), 0.0f);
    for (int64_t dir = 0; dir < d; ++dir) {
      for (int64_t unit = 0; unit < hs; ++unit) {
        const int64_t block = unit / kLanes, lane = unit % kLanes;
        for (int64_t g = 0; g < kGates; ++g) {
          const int64_t onnx_row = kOnnxGate[g] * hs + unit;  // Of W and R in this direction.
          const int64_t column = block * kBlock + g * kLanes + lane;
          for (int64_t i = 0; i < in; ++i)
            wt[i * all_columns + dir * columns_ + column] =
                w[(dir * kGates * hs + onnx_row) * in + i];
          float* r_block = recurrent_.data() + (dir * blocks_ + block) * hs * kBlock;
          for (int64_t k = 0; k < hs; ++k)
            r_block[k * kBlock + g * kLanes + lane] = rw[(dir * kGates * hs + onnx_row) * hs + k];
          if (bias != nullptr) {
            const float* wb = bias + dir * 2 * kGates * hs;
            b[dir * columns_ + column] = wb[onnx_row] + wb[kGates * hs + onnx_row];
          }
        }
      }
    }
    bias_ = std::move(b);
    const int64_t rows = dims_.steps * dims_.batch;
    const auto f32 = memory::data_type::f32;
    const memory::desc source({rows, in}, f32, memory::format_tag::ab);
    const memory::desc plain_weights({in, all_columns}, f32, memory::format_tag::ab);
    const memory::desc any_weights({in, all_columns}, f32, memory::format_tag::any);
    const memory::desc bias_desc({1, all_columns}, f32, memory::format_tag::ab);
    const memory::desc destination({rows, all_columns}, f32, memory::format_tag::ab);
    const dnnl::matmul::primitive_desc descriptor(
        dnnl::matmul::desc(source, any_weights, bias_desc, destination), kernel_attr(),
        context.engine);
    weights_ = pack_constant(wt.data(), plain_weights, descriptor.weights_desc(), context.engine);
    product_ = DnnlStep(dnnl::matmul(descriptor), descriptor, context.engine);
    product_.declare(DNNL_ARG_SRC, source);
    product_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    product_.declare(DNNL_ARG_BIAS, bias_desc);
    product_.declare(DNNL_ARG_DST, destination);
    product_.set(DNNL_ARG_WEIGHTS, weights_->data());
    product_.set(DNNL_ARG_BIAS, bias_.data());
  }

  RecurrentDims dims_;
  int64_t blocks_ = 0;   // Blocks of kLanes hidden units.
  int64_t columns_ = 0;  // Projection floats of one row and direction: blocks_ · kBlock.
  std::size_t outputs_;
  StepLoops loops_;
  int recurrence_threads_ = 1;  // Members of the region that compute blocks.
  int region_threads_ = 1;      // The region's team: 1, or the node's whole team.
  std::vector<OutputSpec> specs_;
  bool given_h_ = false, given_c_ = false;
  DnnlStep product_;                 // X · Wᵀ + Wb + Rb, every step and direction.
  std::shared_ptr<Buffer> weights_;  // Wᵀ packed for product_.
  std::vector<float> bias_;          // Wb + Rb in the loops' column order.
  std::vector<float> recurrent_;     // Rᵀ packed for the loops.
  std::vector<float> projection_;    // product_'s output: [steps · batch][directions · columns_].
  std::vector<float> h_[2], c_;      // States: [batch][blocks_ · kLanes]; H alternates by step.
};

}  // namespace

int recurrence_threads(int team, int64_t hidden_blocks) {
  const int64_t most = hidden_blocks / kLstmLoopsBlocksPerThread;
  return static_cast<int>(std::clamp<int64_t>(most, 1, std::max(team, 1)));
}

std::pair<int64_t, int64_t> recurrence_blocks(int64_t member, int64_t members, int64_t active,
                                              int64_t hidden_blocks) {
  active = std::clamp<int64_t>(active, 1, std::max<int64_t>(members, 1));
  if (member >= active) return {hidden_blocks, hidden_blocks};
  return {hidden_blocks * member / active, hidden_blocks * (member + 1) / active};
}

bool lstm_loops_fit(const RecurrentDims& dims, bool peepholes, bool lengths, int team,
                    bool team_spins) {
  return dims.cell == RecurrentCell::kLstm && !peepholes && !lengths && dims.batch >= 1 &&
         dims.batch <= kLstmLoopsMaxBatch && dims.steps >= 1 && dims.input >= 1 &&
         dims.hidden >= 1 && team_spins &&
         recurrence_threads(team, (dims.hidden + kLstmLoopsLanes - 1) / kLstmLoopsLanes) >= 2;
}

std::unique_ptr<Kernel> create_lstm_loops(const KernelContext& context, const RecurrentDims& dims) {
  if (vector_isa() == VectorIsa::kBaseline) return nullptr;
  if (!lstm_loops_fit(dims, context.has_input(kPeepholes), context.has_input(kLengths),
                      omp_get_max_threads(), spin_count_in_effect() > 0) ||
      !dnnl_recurrent_blocker(context, dims).empty())
    return nullptr;
  try {
    return std::make_unique<LstmLoopsKernel>(context, dims);
  } catch (const dnnl::error&) {
    return nullptr;  // No matmul for these sizes on this CPU: oneDNN's LSTM or the loops.
  }
}

}  // namespace cleave
