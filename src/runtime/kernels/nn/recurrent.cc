// Recurrent layers: RNN, GRU and LSTM (forward, reverse, bidirectional) in plain loops, where
// oneDNN's primitives (recurrent_dnnl.h) cannot compute the node.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "runtime/kernels/nn/lstm_loops.h"
#include "runtime/kernels/nn/recurrent_activations.h"
#include "runtime/kernels/nn/recurrent_dnnl.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

using Cell = RecurrentCell;

using Activation = std::function<double(double)>;

struct RecurrentShape {
  Cell cell = Cell::kRnn;
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, directions = 1, gates = 1;
  bool batch_major = false;   // layout=1: [batch, seq, ...] rather than [seq, batch, ...].
  bool reverse_only = false;  // direction="reverse".
  bool linear_before_reset = false;
  bool input_forget = false;          // LSTM: the forget gate is 1 - the input gate.
  double clip = 0;                    // 0: no clipping of the gate inputs.
  std::vector<Activation> functions;  // Per direction: f, g (GRU, LSTM), h (LSTM).
};

RecurrentShape recurrent_shape(const KernelContext& context, Cell cell) {
  const Node& node = context.node;
  const Tensor& x = context.input(0);
  RecurrentShape s;
  s.cell = cell;
  s.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  s.batch_major = node.int_attribute("layout", 0) != 0;
  std::string direction = node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    throw Error(fmt::format("{}: direction should be forward, reverse or bidirectional, is '{}'",
                            context.where(), direction));
  }
  s.directions = direction == "bidirectional" ? 2 : 1;
  s.reverse_only = direction == "reverse";
  if (x.rank() != 3 || x.dtype() != DataType::kFloat) {
    throw UnsupportedError(
        fmt::format("{}: supports f32 inputs of rank 3, got {}", context.where(), x.describe()));
  }
  s.steps = x.dim(s.batch_major ? 1 : 0);
  s.batch = x.dim(s.batch_major ? 0 : 1);
  s.input = x.dim(2);
  s.hidden = node.int_attribute("hidden_size", context.input(2).dim(2));
  std::vector<int64_t> w = {s.directions, s.gates * s.hidden, s.input};
  std::vector<int64_t> r = {s.directions, s.gates * s.hidden, s.hidden};
  if (context.input(1).shape() != w || context.input(2).shape() != r) {
    throw Error(fmt::format("{}: W {} and R {} should be {} and {}", context.where(),
                            context.input(1).describe(), context.input(2).describe(),
                            shape::format_dims(w), shape::format_dims(r)));
  }
  s.linear_before_reset = node.int_attribute("linear_before_reset", 0) != 0;
  s.input_forget = cell == Cell::kLstm && node.int_attribute("input_forget", 0) != 0;
  s.clip = node.float_attribute("clip", 0.0f);
  for (const RecurrentActivation& a :
       recurrent_activations(node, cell, s.directions, context.where())) {
    s.functions.push_back(recurrent_activation_function(a));
  }
  return s;
}

// Σ a[j]·b[j] in double, in four partial sums: independent chains that the compiler keeps in
// one vector register, where a single running sum is a serial chain it may not reorder.
template <typename T>
double dot(const float* a, const T* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += static_cast<double>(a[j]) * b[j];
    s1 += static_cast<double>(a[j + 1]) * b[j + 1];
    s2 += static_cast<double>(a[j + 2]) * b[j + 2];
    s3 += static_cast<double>(a[j + 3]) * b[j + 3];
  }
  for (; j < n; ++j) s0 += static_cast<double>(a[j]) * b[j];
  return (s0 + s1) + (s2 + s3);
}

// The optional inputs of one direction, as pointers into their tensors (nullptr when omitted).
struct DirectionInputs {
  const float* w = nullptr;
  const float* r = nullptr;
  const float* bias = nullptr;  // Wb then Rb, gates × hidden each.
  const float* peepholes = nullptr;
};

// Runs one direction over the sequence, writing Y (where given) and the final H (and C).
void run_direction(const RecurrentShape& s, int64_t d, const float* x, const DirectionInputs& in,
                   const std::vector<int64_t>& lengths, std::vector<double>& h,
                   std::vector<double>& c, float* y) {
  const bool reverse = s.reverse_only || d == 1;
  const Activation* fn =
      &s.functions[static_cast<std::size_t>(d) * (s.functions.size() / s.directions)];
  const int64_t g = s.gates, hs = s.hidden;
  std::vector<double> pre(static_cast<std::size_t>(g * hs)),
      recur(static_cast<std::size_t>(g * hs)), reset(static_cast<std::size_t>(hs));
  auto clipped = [&](double v) { return s.clip > 0 ? std::clamp(v, -s.clip, s.clip) : v; };
  for (int64_t b = 0; b < s.batch; ++b) {
    double* hb = h.data() + b * hs;
    double* cb = c.data() + b * hs;
    int64_t length = lengths.empty() ? s.steps : lengths[b];
    for (int64_t i = 0; i < length; ++i) {
      int64_t t = reverse ? length - 1 - i : i;
      const float* xt = x + (s.batch_major ? b * s.steps + t : t * s.batch + b) * s.input;
      for (int64_t k = 0; k < g * hs; ++k) {
        double wx = dot(in.w + k * s.input, xt, s.input), rh = dot(in.r + k * hs, hb, hs);
        if (in.bias) {
          wx += in.bias[k];
          rh += in.bias[g * hs + k];
        }
        pre[k] = wx;
        recur[k] = rh;
      }
      if (s.cell == Cell::kGru && !s.linear_before_reset) {
        // Every reset state r[m]·H[m] first: the candidate of unit j reads all of them.
        for (int64_t m = 0; m < hs; ++m)
          reset[m] = fn[0](clipped(pre[hs + m] + recur[hs + m])) * hb[m];
      }
      for (int64_t j = 0; j < hs; ++j) {
        if (s.cell == Cell::kRnn) {
          hb[j] = fn[0](clipped(pre[j] + recur[j]));
        } else if (s.cell == Cell::kGru) {
          double z = fn[0](clipped(pre[j] + recur[j]));
          double r = fn[0](clipped(pre[hs + j] + recur[hs + j]));
          double candidate;
          if (s.linear_before_reset) {
            candidate = fn[1](clipped(pre[2 * hs + j] + r * recur[2 * hs + j]));
          } else {
            // (r ⊙ H) · Rh^T + Rbh: the reset gate scales the state before the product.
            double rh = (in.bias ? in.bias[g * hs + 2 * hs + j] : 0.0) +
                        dot(in.r + (2 * hs + j) * hs, reset.data(), hs);
            // Gates of later j still read the old state: keep it until the step ends.
            candidate = fn[1](clipped(pre[2 * hs + j] + rh));
          }
          pre[j] = (1 - z) * candidate + z * hb[j];  // The new H, stored until every j is done.
        } else {
          const float* p = in.peepholes;
          double gate_i = fn[0](clipped(pre[j] + recur[j] + (p ? p[j] * cb[j] : 0.0)));
          double gate_f = s.input_forget ? 1.0 - gate_i
                                         : fn[0](clipped(pre[2 * hs + j] + recur[2 * hs + j] +
                                                         (p ? p[2 * hs + j] * cb[j] : 0.0)));
          double cell = fn[1](clipped(pre[3 * hs + j] + recur[3 * hs + j]));
          cb[j] = gate_f * cb[j] + gate_i * cell;
          double gate_o =
              fn[0](clipped(pre[hs + j] + recur[hs + j] + (p ? p[hs + j] * cb[j] : 0.0)));
          recur[j] = gate_o * fn[2](cb[j]);  // The new H, stored until every j is done.
        }
      }
      if (s.cell == Cell::kGru) std::copy(pre.begin(), pre.begin() + hs, hb);
      if (s.cell == Cell::kLstm) std::copy(recur.begin(), recur.begin() + hs, hb);
      if (y) {
        int64_t row = s.batch_major ? (b * s.steps + t) * s.directions + d
                                    : (t * s.directions + d) * s.batch + b;
        for (int64_t j = 0; j < hs; ++j) y[row * hs + j] = static_cast<float>(hb[j]);
      }
    }
  }
}

std::unique_ptr<Kernel> create_recurrent(const KernelContext& context, Cell cell) {
  RecurrentShape s = recurrent_shape(context, cell);
  const bool lstm = cell == Cell::kLstm;
  // The loops stay for what oneDNN lacks: clipping, other activations, input_forget, shorter
  // sequences in reverse or with the final cell state read, weights computed during the run.
  RecurrentDims dims{
      cell,     s.linear_before_reset, s.reverse_only, s.batch_major, s.steps, s.batch, s.input,
      s.hidden, s.directions};
  if (auto kernel = create_lstm_loops(context, dims)) return kernel;
  if (auto kernel = create_dnnl_recurrent(context, dims)) return kernel;
  std::vector<int64_t> y_shape =
      s.batch_major ? std::vector<int64_t>{s.batch, s.steps, s.directions, s.hidden}
                    : std::vector<int64_t>{s.steps, s.directions, s.batch, s.hidden};
  std::vector<int64_t> state_shape = s.batch_major
                                         ? std::vector<int64_t>{s.batch, s.directions, s.hidden}
                                         : std::vector<int64_t>{s.directions, s.batch, s.hidden};
  std::vector<OutputSpec> specs;
  for (std::size_t i = 0; i < context.node.outputs.size(); ++i) {
    specs.push_back({DataType::kFloat, i == 0 ? y_shape : state_shape, std::nullopt, -1});
  }
  std::string where = context.where();
  return shape::make_kernel(
      context, specs,
      [s, lstm, where](const std::vector<const Tensor*>& inputs,
                       const std::vector<Tensor*>& outputs) {
        auto given = [&](std::size_t i) -> const float* {
          return i < inputs.size() && inputs[i] ? inputs[i]->data<float>() : nullptr;
        };
        std::vector<int64_t> lengths;
        if (inputs.size() > 4 && inputs[4]) lengths = inputs[4]->to_int64_vector();
        for (int64_t length : lengths) {
          if (length < 0 || length > s.steps) {
            throw Error(
                fmt::format("{}: sequence length {} is outside 0 to {}", where, length, s.steps));
          }
        }
        float* y = !outputs.empty() && outputs[0] ? outputs[0]->data<float>() : nullptr;
        if (y) std::fill(y, y + outputs[0]->element_count(), 0.0f);
        const int64_t g = s.gates, hs = s.hidden;
        for (int64_t d = 0; d < s.directions; ++d) {
          DirectionInputs in{given(1) + d * g * hs * s.input, given(2) + d * g * hs * hs,
                             given(3) ? given(3) + d * 2 * g * hs : nullptr,
                             lstm && given(7) ? given(7) + d * 3 * hs : nullptr};
          // Initial states: [directions, batch, hidden] (or [batch, directions, hidden]).
          std::vector<double> h(static_cast<std::size_t>(s.batch * hs), 0.0), c = h;
          for (std::size_t k = 0; k < 2; ++k) {
            const float* initial = given(k == 0 ? 5 : 6);
            if (!initial || (k == 1 && !lstm)) continue;
            std::vector<double>& state = k == 0 ? h : c;
            for (int64_t b = 0; b < s.batch; ++b) {
              int64_t row = s.batch_major ? b * s.directions + d : d * s.batch + b;
              for (int64_t j = 0; j < hs; ++j) state[b * hs + j] = initial[row * hs + j];
            }
          }
          run_direction(s, d, inputs[0]->data<float>(), in, lengths, h, c, y);
          for (std::size_t k = 1; k < outputs.size() && k < 3; ++k) {
            if (!outputs[k]) continue;
            const std::vector<double>& state = k == 1 ? h : c;
            for (int64_t b = 0; b < s.batch; ++b) {
              int64_t row = s.batch_major ? b * s.directions + d : d * s.batch + b;
              for (int64_t j = 0; j < hs; ++j) {
                outputs[k]->data<float>()[row * hs + j] = static_cast<float>(state[b * hs + j]);
              }
            }
          }
        }
      });
}

}  // namespace

void register_recurrent_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "RNN",
                    [](const KernelContext& c) { return create_recurrent(c, Cell::kRnn); },
                    {DataType::kFloat});
  shape::add_kernel(registry, "GRU",
                    [](const KernelContext& c) { return create_recurrent(c, Cell::kGru); },
                    {DataType::kFloat});
  shape::add_kernel(registry, "LSTM",
                    [](const KernelContext& c) { return create_recurrent(c, Cell::kLstm); },
                    {DataType::kFloat});
}

}  // namespace cleave
