// RNN, GRU and LSTM nodes on oneDNN's RNN primitives, with weights packed once at preparation.
#include "runtime/kernels/nn/recurrent_dnnl.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <omp.h>

#include "runtime/intra_op_team.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// ONNX inputs of RNN, GRU and LSTM.
constexpr std::size_t kX = 0, kW = 1, kR = 2, kB = 3, kLengths = 4, kInitialH = 5, kInitialC = 6,
                      kPeepholes = 7;

// The ONNX gate that oneDNN's gate g reads. ONNX orders GRU gates z, r, h and oneDNN u(=z), r,
// o(=h); ONNX orders LSTM gates i, o, f, c and oneDNN i, f, c~, o, and peepholes i, o, f
// against oneDNN's i, f, o.
constexpr std::array<int64_t, 3> kGruGates = {0, 1, 2};
constexpr std::array<int64_t, 4> kLstmGates = {0, 2, 3, 1};
constexpr std::array<int64_t, 3> kPeepholeGates = {0, 2, 1};

// oneDNN's algorithm for an activation of ONNX's RNN, where it has one.
std::optional<dnnl::algorithm> rnn_activation(const std::string& name) {
  if (name == "Tanh") return dnnl::algorithm::eltwise_tanh;
  if (name == "Relu") return dnnl::algorithm::eltwise_relu;
  if (name == "Sigmoid") return dnnl::algorithm::eltwise_logistic;
  return std::nullopt;
}

// Whether the primitive computes the node's activations: GRU's and LSTM's defaults, or for RNN
// one that oneDNN has, the same in both directions.
bool activations_supported(const Node& node, RecurrentCell cell) {
  const Attribute* given = node.attribute("activations");
  if (given == nullptr || given->strings.empty()) return true;
  const std::vector<std::string>& names = given->strings;
  if (cell == RecurrentCell::kRnn) {
    return rnn_activation(names.front()).has_value() &&
           std::all_of(names.begin(), names.end(),
                       [&](const std::string& name) { return name == names.front(); });
  }
  std::vector<std::string> defaults = cell == RecurrentCell::kLstm
                                          ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] != defaults[i % defaults.size()]) return false;
  }
  return true;
}

// Whether the primitive computes the node for these sequence lengths: all the sequence's, or
// forward in one direction, none empty, and no final cell state read. A shorter sequence's Y
// rows and final H are then those of the full run (a batch row never reads another), cut at its
// length; its final C is nowhere in the outputs, and a reverse pass starts at its end.
bool lengths_fit(const std::vector<int64_t>& lengths, const RecurrentDims& dims,
                 bool cell_state_read) {
  if (std::all_of(lengths.begin(), lengths.end(),
                  [&](int64_t length) { return length == dims.steps; }))
    return true;
  if (dims.directions != 1 || dims.reverse ||
      (dims.cell == RecurrentCell::kLstm && cell_state_read))
    return false;
  return std::all_of(lengths.begin(), lengths.end(),
                     [&](int64_t length) { return length >= 1 && length <= dims.steps; });
}

// [outer, a, b, inner] into [outer, b, a, inner].
void swap_middle_dims(const float* from, int64_t outer, int64_t a, int64_t b, int64_t inner,
                      float* to) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < a; ++i) {
      for (int64_t j = 0; j < b; ++j) {
        std::memcpy(to + ((o * b + j) * a + i) * inner, from + ((o * a + i) * b + j) * inner,
                    static_cast<std::size_t>(inner) * sizeof(float));
      }
    }
  }
}

class DnnlRecurrentKernel : public Kernel, public PackedConstants {
 public:
  DnnlRecurrentKernel(const KernelContext& context, const RecurrentDims& dims)
      : dims_(dims), outputs_(context.node.outputs.size()) {
    const int64_t d = dims.directions, n = dims.batch, h = dims.hidden;
    // Batch-major Y [batch, seq, directions, hidden] is oneDNN's ntc; time-major Y of two
    // directions needs a copy. Final states [batch, 2, hidden] need one too.
    specs_ = recurrent_output_specs(dims, outputs_);
    given_lengths_ = context.has_input(kLengths);
    cell_state_read_ = output_used(context, 2);
    given_h_ = context.has_input(kInitialH);
    given_c_ = lstm() && context.has_input(kInitialC);
    // The primitive forks its team once a step: one step's work decides it, not the node's
    // (intra_op_team.cc counts the input's product over every step).
    NodeWork step;
    step.flops = 2.0 * static_cast<double>(n * d * gates() * h * (dims.input + h));
    team_ = intra_op_team(step, omp_get_max_threads());
    const IntraOpTeamScope team(team_);
    create_primitive(context);
    pack_weights(context);
    const auto state_floats = static_cast<std::size_t>(d * n * h);
    states_direct_ = !dims.batch_major || d == 1;
    if ((given_h_ || given_c_) && (!states_direct_ || (lstm() && given_h_ != given_c_)))
      initial_.assign(2 * state_floats, 0.0f);
    // oneDNN computes both final states or none: a missing output's goes to a buffer here.
    if (!states_direct_ || outputs_ < (lstm() ? 3u : 2u)) states_.resize(2 * state_floats);
    if (d == 2 && !dims.batch_major)
      layer_.resize(static_cast<std::size_t>(dims.steps * n * d * h));
  }

  std::vector<OutputSpec> output_specs() const override { return specs_; }
  std::string implementation() const override { return step_.implementation(); }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    // Sequence lengths the primitive cannot take prepare the loops, which read the weights.
    const bool packed = input == kW || input == kR || input == kB || input == kPeepholes;
    return !packed || given_lengths_;
  }
  bool prepared_for_values(const std::vector<const Tensor*>& inputs) const override {
    if (!given_lengths_) return true;
    return inputs.size() > kLengths && inputs[kLengths] &&
           lengths_fit(inputs[kLengths]->to_int64_vector(), dims_, cell_state_read_);
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const IntraOpTeamScope team(team_);
    const auto state_floats =
        static_cast<std::size_t>(dims_.directions * dims_.batch * dims_.hidden);
    step_.set(DNNL_ARG_SRC_LAYER, inputs[kX]->raw());
    if (given_h_ || given_c_) {
      step_.set(DNNL_ARG_SRC_ITER, initial_state(given_h_ ? inputs[kInitialH] : nullptr, 0));
      if (lstm())
        step_.set(DNNL_ARG_SRC_ITER_C, initial_state(given_c_ ? inputs[kInitialC] : nullptr, 1));
    }
    float* y = outputs[0]->data<float>();
    step_.set(DNNL_ARG_DST_LAYER, layer_.empty() ? y : layer_.data());
    auto final_state = [&](std::size_t k) {
      return states_direct_ && outputs.size() > k
                 ? outputs[k]->raw()
                 : static_cast<void*>(states_.data() + (k - 1) * state_floats);
    };
    step_.set(DNNL_ARG_DST_ITER, final_state(1));
    if (lstm()) step_.set(DNNL_ARG_DST_ITER_C, final_state(2));
    step_.execute(stream);
    if (given_lengths_) cut_at_lengths(inputs[kLengths]->to_int64_vector(), outputs, stream);
    if (layer_.empty() && states_direct_) return;
    stream.wait();
    const int64_t t = dims_.steps, n = dims_.batch, h = dims_.hidden;
    // oneDNN concatenates the directions per row ([seq, batch, 2·hidden]); ONNX keeps them
    // apart ([seq, 2, batch, hidden]).
    if (!layer_.empty()) swap_middle_dims(layer_.data(), t, n, 2, h, y);
    // oneDNN's [2, batch, hidden] states into ONNX's batch-major [batch, 2, hidden].
    for (std::size_t k = 1; !states_direct_ && k < outputs.size(); ++k) {
      swap_middle_dims(states_.data() + (k - 1) * state_floats, 1, 2, n, h,
                       outputs[k]->data<float>());
    }
  }

 private:
  // Forward in one direction (lengths_fit): Y's rows past a sequence's length are zeros and its
  // final H is its Y row at its last step.
  void cut_at_lengths(const std::vector<int64_t>& lengths, const std::vector<Tensor*>& outputs,
                      dnnl::stream& stream) {
    const int64_t t = dims_.steps, n = dims_.batch, h = dims_.hidden;
    if (std::all_of(lengths.begin(), lengths.end(), [&](int64_t length) { return length == t; }))
      return;
    stream.wait();
    float* y = outputs[0]->data<float>();
    auto row = [&](int64_t step, int64_t b) {
      return y + (dims_.batch_major ? b * t + step : step * n + b) * h;
    };
    for (int64_t b = 0; b < n; ++b) {
      if (outputs.size() > 1)
        std::copy_n(row(lengths[b] - 1, b), h, outputs[1]->data<float>() + b * h);
      for (int64_t step = lengths[b]; step < t; ++step) std::fill_n(row(step, b), h, 0.0f);
    }
  }

  // Initial state k (h, c) as oneDNN reads it: the given tensor, or its batch-major form moved
  // direction-major into initial_, or zeros there when not given.
  const void* initial_state(const Tensor* given, std::size_t k) {
    if (given != nullptr && states_direct_) return given->raw();
    const int64_t d = dims_.directions, n = dims_.batch, h = dims_.hidden;
    float* own = initial_.data() + k * static_cast<std::size_t>(d * n * h);
    if (given != nullptr) swap_middle_dims(given->data<float>(), 1, n, d, h, own);
    return own;
  }

  bool lstm() const { return dims_.cell == RecurrentCell::kLstm; }
  int64_t gates() const { return lstm() ? 4 : dims_.cell == RecurrentCell::kGru ? 3 : 1; }
  int64_t onnx_gate(int64_t g) const {
    return lstm() ? kLstmGates[g] : dims_.cell == RecurrentCell::kGru ? kGruGates[g] : 0;
  }

  void create_primitive(const KernelContext& context) {
    const int64_t t = dims_.steps, d = dims_.directions, n = dims_.batch, i = dims_.input,
                  h = dims_.hidden, g = gates();
    const auto f32 = memory::data_type::f32;
    const memory::desc none;
    const Tag order = dims_.batch_major ? Tag::ntc : Tag::tnc;
    const memory::desc src_layer({t, n, i}, f32, order);
    const memory::desc state({1, d, n, h}, f32, Tag::ldnc);
    const memory::desc src_iter = given_h_ || given_c_ ? state : none;
    const memory::desc weights_layer({1, d, i, g, h}, f32, Tag::any);
    const memory::desc weights_iter({1, d, h, g, h}, f32, Tag::any);
    const int64_t bias_gates = dims_.linear_before_reset ? 4 : g;
    const memory::desc bias =
        context.has_input(kB) ? memory::desc({1, d, bias_gates, h}, f32, Tag::ldgo) : none;
    const memory::desc dst_layer({t, n, d * h}, f32, order);
    const auto direction = d == 2          ? dnnl::rnn_direction::bidirectional_concat
                           : dims_.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                           : dnnl::rnn_direction::unidirectional_left2right;
    const auto inference = dnnl::prop_kind::forward_inference;
    const dnnl::primitive_attr attr = kernel_attr();
    if (dims_.cell == RecurrentCell::kRnn) {
      std::optional<dnnl::algorithm> activation = rnn_activation("Tanh");
      if (const Attribute* given = context.node.attribute("activations");
          given && !given->strings.empty())
        activation = rnn_activation(given->strings.front());
      dnnl::vanilla_rnn_forward::desc desc(inference, *activation, direction, src_layer, src_iter,
                                           weights_layer, weights_iter, bias, dst_layer, state);
      dnnl::vanilla_rnn_forward::primitive_desc descriptor(desc, attr, context.engine);
      remember(descriptor);
      step_ = DnnlStep(dnnl::vanilla_rnn_forward(descriptor), descriptor, context.engine);
    } else if (lstm()) {
      const memory::desc peepholes =
          context.has_input(kPeepholes) ? memory::desc({1, d, 3, h}, f32, Tag::ldgo) : none;
      dnnl::lstm_forward::desc desc(inference, direction, src_layer, src_iter, src_iter,
                                    weights_layer, weights_iter, peepholes, bias, dst_layer, state,
                                    state);
      dnnl::lstm_forward::primitive_desc descriptor(desc, attr, context.engine);
      remember(descriptor);
      step_ = DnnlStep(dnnl::lstm_forward(descriptor), descriptor, context.engine);
      if (!peepholes.is_zero()) step_.declare(DNNL_ARG_WEIGHTS_PEEPHOLE, peepholes);
      if (!src_iter.is_zero()) step_.declare(DNNL_ARG_SRC_ITER_C, src_iter);
      step_.declare(DNNL_ARG_DST_ITER_C, state);
    } else if (dims_.linear_before_reset) {
      dnnl::lbr_gru_forward::desc desc(inference, direction, src_layer, src_iter, weights_layer,
                                       weights_iter, bias, dst_layer, state);
      dnnl::lbr_gru_forward::primitive_desc descriptor(desc, attr, context.engine);
      remember(descriptor);
      step_ = DnnlStep(dnnl::lbr_gru_forward(descriptor), descriptor, context.engine);
    } else {
      dnnl::gru_forward::desc desc(inference, direction, src_layer, src_iter, weights_layer,
                                   weights_iter, bias, dst_layer, state);
      dnnl::gru_forward::primitive_desc descriptor(desc, attr, context.engine);
      remember(descriptor);
      step_ = DnnlStep(dnnl::gru_forward(descriptor), descriptor, context.engine);
    }
    step_.declare(DNNL_ARG_SRC_LAYER, src_layer);
    if (!src_iter.is_zero()) step_.declare(DNNL_ARG_SRC_ITER, src_iter);
    step_.declare(DNNL_ARG_WEIGHTS_LAYER, weights_layer_desc_);
    step_.declare(DNNL_ARG_WEIGHTS_ITER, weights_iter_desc_);
    if (!bias.is_zero()) step_.declare(DNNL_ARG_BIAS, bias);
    step_.declare(DNNL_ARG_DST_LAYER, dst_layer);
    step_.declare(DNNL_ARG_DST_ITER, state);
  }

  template <typename Descriptor>
  void remember(const Descriptor& descriptor) {
    weights_layer_desc_ = descriptor.weights_layer_desc();
    weights_iter_desc_ = descriptor.weights_iter_desc();
  }

  // ONNX's [directions, gates·hidden, columns] in oneDNN's gate order, as ldgoi, then packed
  // into the layout the primitive chose.
  std::shared_ptr<Buffer> pack_matrix(const Tensor& onnx, int64_t columns,
                                      const memory::desc& chosen, const dnnl::engine& engine) {
    const int64_t d = dims_.directions, g = gates(), h = dims_.hidden;
    const float* from = onnx.data<float>();
    std::vector<float> ordered(static_cast<std::size_t>(d * g * h * columns));
    const int64_t block = h * columns;
    for (int64_t dir = 0; dir < d; ++dir) {
      for (int64_t gate = 0; gate < g; ++gate) {
        std::copy_n(from + (dir * g + onnx_gate(gate)) * block, block,
                    ordered.begin() + (dir * g + gate) * block);
      }
    }
    const memory::desc user({1, d, columns, g, h}, memory::data_type::f32, Tag::ldgoi);
    return pack_constant(ordered.data(), user, chosen, engine);
  }

  void pack_weights(const KernelContext& context) {
    weights_layer_ =
        pack_matrix(context.input(kW), dims_.input, weights_layer_desc_, context.engine);
    weights_iter_ =
        pack_matrix(context.input(kR), dims_.hidden, weights_iter_desc_, context.engine);
    step_.set(DNNL_ARG_WEIGHTS_LAYER, weights_layer_->data());
    step_.set(DNNL_ARG_WEIGHTS_ITER, weights_iter_->data());
    const int64_t d = dims_.directions, g = gates(), h = dims_.hidden;
    if (context.has_input(kB)) {
      // oneDNN adds one bias per gate, ONNX two (Wb and Rb): their sum, except that lbr_gru
      // keeps Rb of the candidate apart as a 4th gate (the reset gate scales it).
      const float* onnx = context.input(kB).data<float>();
      const int64_t bias_gates = dims_.linear_before_reset ? 4 : g;
      bias_.assign(static_cast<std::size_t>(d * bias_gates * h), 0.0f);
      for (int64_t dir = 0; dir < d; ++dir) {
        const float* wb = onnx + dir * 2 * g * h;
        const float* rb = wb + g * h;
        float* to = bias_.data() + dir * bias_gates * h;
        for (int64_t gate = 0; gate < g; ++gate) {
          const int64_t from = onnx_gate(gate) * h;
          const bool apart = dims_.linear_before_reset && gate == 2;
          for (int64_t j = 0; j < h; ++j)
            to[gate * h + j] = wb[from + j] + (apart ? 0.0f : rb[from + j]);
        }
        if (dims_.linear_before_reset) std::copy_n(rb + 2 * h, h, to + 3 * h);
      }
      step_.set(DNNL_ARG_BIAS, bias_.data());
    }
    if (lstm() && context.has_input(kPeepholes)) {
      const float* onnx = context.input(kPeepholes).data<float>();
      peepholes_.resize(static_cast<std::size_t>(d * 3 * h));
      for (int64_t dir = 0; dir < d; ++dir) {
        for (int64_t gate = 0; gate < 3; ++gate) {
          std::copy_n(onnx + (dir * 3 + kPeepholeGates[gate]) * h, h,
                      peepholes_.begin() + (dir * 3 + gate) * h);
        }
      }
      step_.set(DNNL_ARG_WEIGHTS_PEEPHOLE, peepholes_.data());
    }
  }

  RecurrentDims dims_;
  std::size_t outputs_;
  int team_ = 1;  // The primitive's intra-op team: one step's work.
  std::vector<OutputSpec> specs_;
  bool given_lengths_ = false;
  bool cell_state_read_ = false;  // Output Y_c exists and is read.
  bool given_h_ = false, given_c_ = false;
  DnnlStep step_;
  memory::desc weights_layer_desc_, weights_iter_desc_;
  std::shared_ptr<Buffer> weights_layer_, weights_iter_;
  std::vector<float> bias_, peepholes_;
  std::vector<float> initial_;  // Initial states oneDNN reads from here: h, then c.
  bool states_direct_ = true;   // oneDNN writes the final states into the outputs.
  std::vector<float> states_;   // Final states oneDNN writes elsewhere: h, then c.
  std::vector<float> layer_;    // Y of both directions, as oneDNN concatenates them.
};

}  // namespace

std::vector<OutputSpec> recurrent_output_specs(const RecurrentDims& dims, std::size_t outputs) {
  const int64_t d = dims.directions, n = dims.batch, h = dims.hidden;
  std::vector<OutputSpec> specs;
  specs.push_back({DataType::kFloat,
                   dims.batch_major ? std::vector<int64_t>{n, dims.steps, d, h}
                                    : std::vector<int64_t>{dims.steps, d, n, h},
                   std::nullopt, -1});
  for (std::size_t i = 1; i < outputs; ++i) {
    specs.push_back(
        {DataType::kFloat,
         dims.batch_major ? std::vector<int64_t>{n, d, h} : std::vector<int64_t>{d, n, h},
         std::nullopt, -1});
  }
  return specs;
}

std::string dnnl_recurrent_blocker(const KernelContext& context, const RecurrentDims& dims) {
  const Node& node = context.node;
  if (node.attribute("clip") != nullptr) return "clip";
  if (node.attribute("activation_alpha") != nullptr || node.attribute("activation_beta") != nullptr)
    return "activation_alpha/beta";
  if (node.int_attribute("input_forget", 0) != 0) return "input_forget";
  if (!activations_supported(node, dims.cell)) return "activations";
  for (std::size_t input : {kW, kR, kB, kPeepholes}) {
    if (input == kPeepholes && dims.cell != RecurrentCell::kLstm) continue;
    if (context.has_input(input) && !context.constant[input]) return "weights given at run time";
  }
  if (context.has_input(kLengths) &&
      !lengths_fit(context.input(kLengths).to_int64_vector(), dims, output_used(context, 2)))
    return "sequence lengths";
  if (dims.steps == 0 || dims.batch == 0 || dims.input == 0 || dims.hidden == 0) return "empty";
  return {};
}

std::unique_ptr<Kernel> create_dnnl_recurrent(const KernelContext& context,
                                              const RecurrentDims& dims) {
  if (!dnnl_recurrent_blocker(context, dims).empty()) return nullptr;
  try {
    return std::make_unique<DnnlRecurrentKernel>(context, dims);
  } catch (const dnnl::error&) {
    return nullptr;  // No implementation for these sizes on this CPU: the loops compute it.
  }
}

}  // namespace cleave
