// The PyTorch op table's RNN, GRU and LSTM: loops over the sequence in ONNX's gate orders (zrh,
// iofc), with clipping, per-sequence lengths, any of ONNX's activations and input_forget.
#include "codegen/pytorch_call.h"
#include "runtime/kernels/nn/recurrent_activations.h"

namespace cleave::pytorch_detail {

namespace {

// Module-level: the gate functions torch has no single call for, by ONNX name.
constexpr const char* kActivationHelper = R"py(def rnn_activation(x, name, alpha, beta):
    """A recurrent gate's function by its ONNX name, with the node's alpha and beta."""
    if name == "Relu":
        return torch.relu(x)
    if name == "Affine":
        return alpha * x + beta
    if name == "LeakyRelu":
        return torch.where(x >= 0, x, alpha * x)
    if name == "ThresholdedRelu":
        return torch.where(x > alpha, x, torch.zeros_like(x))
    if name == "ScaledTanh":
        return alpha * torch.tanh(beta * x)
    if name == "HardSigmoid":
        return torch.clamp(alpha * x + beta, 0.0, 1.0)
    if name == "Elu":
        return torch.where(x >= 0, x, alpha * torch.expm1(x))
    if name == "Softsign":
        return x / (1 + x.abs())
    if name == "Softplus":
        return torch.log1p(torch.exp(x))
    raise ValueError("no recurrent activation named " + name)


)py";

// One gate function applied to a Python expression: the defaults as torch's own calls, the
// others through rnn_activation.
std::string activate(const RecurrentActivation& a, const std::string& x) {
  if (a.name == "Sigmoid") return fmt::format("torch.sigmoid({})", x);
  if (a.name == "Tanh") return fmt::format("torch.tanh({})", x);
  return fmt::format("rnn_activation({}, \"{}\", {}, {})", x, a.name, py_float(a.alpha),
                     py_float(a.beta));
}

// A gate's input clamped to [-clip, clip] where the node clips (cleave and ONNX Runtime clip
// only a positive value).
std::function<std::string(const std::string&)> clipper(const Call& c) {
  const float clip = c.node.float_attribute("clip", 0.0f);
  return [clip](const std::string& x) {
    return clip > 0 ? fmt::format("torch.clamp({}, -{}, {})", x, py_float(clip), py_float(clip))
                    : x;
  };
}

// The step of one RNN direction from _g = x·Wᵀ+Wb and _q = h·Rᵀ+Rb: the new state in _hn.
std::vector<std::string> rnn_step(const Call& c, const RecurrentActivation* fn) {
  return {fmt::format("_hn = {}", activate(fn[0], clipper(c)("_g + _q")))};
}

// The step of one GRU direction: the new state in _hn.
std::vector<std::string> gru_step(const Call& c, int64_t h, const RecurrentActivation* fn) {
  const auto clip = clipper(c);
  const bool before_reset = c.node.int_attribute("linear_before_reset", 0) != 0;
  const std::string z = fmt::format("[:, :{}]", h), r = fmt::format("[:, {}:{}]", h, 2 * h),
                    n = fmt::format("[:, {}:]", 2 * h);
  std::vector<std::string> lines = {
      fmt::format("_z = {}", activate(fn[0], clip(fmt::format("_g{0} + _q{0}", z)))),
      fmt::format("_r = {}", activate(fn[0], clip(fmt::format("_g{0} + _q{0}", r))))};
  if (before_reset) {
    lines.push_back(
        fmt::format("_n = {}", activate(fn[1], clip(fmt::format("_g{0} + _r * _q{0}", n)))));
  } else {
    // The reset gate scales the state before the product with Rh.
    lines.push_back(fmt::format(
        "_n = {}",
        activate(fn[1], clip(fmt::format("_g{} + (_r * _h) @ _rw[{}:].t(){}", n, 2 * h,
                                         c.has(3) ? fmt::format(" + _rb[{}:]", 2 * h) : "")))));
  }
  lines.push_back("_hn = (1 - _z) * _n + _z * _h");
  return lines;
}

// The step of one LSTM direction: the new states in _hn and _cn; the output gate's peephole
// reads the new cell. With input_forget the forget gate is 1 - the input gate (as ONNX Runtime
// computes it).
std::vector<std::string> lstm_step(const Call& c, int64_t h, const RecurrentActivation* fn) {
  const auto clip = clipper(c);
  const bool peep = c.has(7);
  const auto gate = [&](int k, const char* cell) {
    return clip(
        fmt::format("_q[:, {}:{}]{}", k * h, (k + 1) * h,
                    peep ? fmt::format(" + _p[{}:{}] * {}", k * h, (k + 1) * h, cell) : ""));
  };
  return {"_q = _g + _q",
          fmt::format("_i = {}", activate(fn[0], gate(0, "_c"))),
          c.node.int_attribute("input_forget", 0) != 0
              ? std::string("_f = 1 - _i")
              : fmt::format("_f = {}", activate(fn[0], gate(2, "_c"))),
          fmt::format("_cn = _f * _c + _i * {}",
                      activate(fn[1], clip(fmt::format("_q[:, {}:]", 3 * h)))),
          fmt::format("_o = {}", activate(fn[0], gate(1, "_cn"))),
          fmt::format("_hn = _o * {}", activate(fn[2], "_cn"))};
}

// The loop over one direction's `step` lines. With sequence_lens, a reversed direction first
// reverses each sequence within its own length (a permutation that is its own inverse, undone
// on Y), and every step keeps the old states and writes zeros for the sequences already ended.
void write_direction(const Call& c, bool lstm, bool reverse, int64_t h,
                     const std::vector<std::string>& step, std::vector<std::string>& lines) {
  const std::string bias = c.has(3) ? " + _wb" : "", recurrent_bias = c.has(3) ? " + _rb" : "";
  if (!c.has(4)) {
    lines.push_back("_y = [None] * _x.shape[0]");
    lines.push_back(fmt::format("for _t in {}:",
                                reverse ? "reversed(range(_x.shape[0]))" : "range(_x.shape[0])"));
    lines.push_back(fmt::format("    _g = _x[_t] @ _w.t(){}", bias));
    lines.push_back(fmt::format("    _q = _h @ _rw.t(){}", recurrent_bias));
    for (const std::string& line : step) lines.push_back("    " + line);
    lines.push_back(lstm ? "    _h, _c = _hn, _cn" : "    _h = _hn");
    lines.push_back("    _y[_t] = _h");
    lines.push_back("_y = torch.stack(_y)");
    return;
  }
  lines.push_back(fmt::format("_xd = {}", reverse ? "_x.gather(0, _perm[:, :, None].expand(-1, -1, "
                                                    "_x.shape[2]))"
                                                  : "_x"));
  lines.push_back("_y = []");
  lines.push_back("for _t in range(_x.shape[0]):");
  lines.push_back(fmt::format("    _g = _xd[_t] @ _w.t(){}", bias));
  lines.push_back(fmt::format("    _q = _h @ _rw.t(){}", recurrent_bias));
  for (const std::string& line : step) lines.push_back("    " + line);
  lines.push_back("    _m = _valid[_t][:, None]");
  lines.push_back("    _h = torch.where(_m, _hn, _h)");
  if (lstm) lines.push_back("    _c = torch.where(_m, _cn, _c)");
  lines.push_back("    _y.append(torch.where(_m, _hn, torch.zeros_like(_hn)))");
  lines.push_back(
      reverse
          ? fmt::format("_y = torch.stack(_y).gather(0, _perm[:, :, None].expand(-1, -1, {}))", h)
          : "_y = torch.stack(_y)");
}

std::vector<std::string> recurrent(const Call& c, RecurrentCell cell) {
  const bool lstm = cell == RecurrentCell::kLstm;
  const int64_t gates = cell == RecurrentCell::kRnn ? 1 : lstm ? 4 : 3;
  const int64_t h = c.shape_in(2).at(2);
  const std::string direction = c.node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail(fmt::format("direction '{}'", direction));
  const int directions = direction == "bidirectional" ? 2 : 1;
  const std::vector<RecurrentActivation> functions =
      recurrent_activations(c.node, cell, directions, c.where());
  const std::size_t per_direction = recurrent_functions_per_direction(cell);
  const bool batch_major = c.node.int_attribute("layout", 0) != 0;
  // Per direction: [batch, hidden] of a state given as [directions, batch, hidden] (or batch
  // first).
  const auto state = [&](std::size_t i, int d) {
    return batch_major ? fmt::format("{}[:, {}]", c.in(i), d) : fmt::format("{}[{}]", c.in(i), d);
  };
  std::vector<std::string> lines = {
      fmt::format("_x = {}{}", c.in(0), batch_major ? ".transpose(0, 1)" : ""),
      lstm ? "_ys, _hs, _cs = [], [], []" : "_ys, _hs = [], []"};
  if (c.has(4)) {
    // [steps, batch]: whether step t is within sequence b, and where a reversed sequence reads.
    lines.push_back(fmt::format("_len = {}.long()", c.in(4)));
    lines.push_back("_ti = torch.arange(_x.shape[0])[:, None]");
    lines.push_back("_valid = _ti < _len[None]");
    lines.push_back("_perm = torch.where(_valid, _len[None] - 1 - _ti, _ti)");
  }
  for (int d = 0; d < directions; ++d) {
    lines.push_back(fmt::format(
        "_h = {}", c.has(5) ? state(5, d) : fmt::format("_x.new_zeros(_x.shape[1], {})", h)));
    if (lstm) {
      lines.push_back(fmt::format(
          "_c = {}", c.has(6) ? state(6, d) : fmt::format("_x.new_zeros(_x.shape[1], {})", h)));
      if (c.has(7)) lines.push_back(fmt::format("_p = {}[{}]", c.in(7), d));
    }
    lines.push_back(fmt::format("_w, _rw = {}[{}], {}[{}]", c.in(1), d, c.in(2), d));
    if (c.has(3)) {
      lines.push_back(
          fmt::format("_wb, _rb = {0}[{1}, :{2}], {0}[{1}, {2}:]", c.in(3), d, gates * h));
    }
    const RecurrentActivation* fn = &functions[d * per_direction];
    const std::vector<std::string> step = cell == RecurrentCell::kRnn   ? rnn_step(c, fn)
                                          : cell == RecurrentCell::kGru ? gru_step(c, h, fn)
                                                                        : lstm_step(c, h, fn);
    write_direction(c, lstm, direction == "reverse" || d == 1, h, step, lines);
    lines.push_back(lstm ? "_ys.append(_y); _hs.append(_h); _cs.append(_c)"
                         : "_ys.append(_y); _hs.append(_h)");
  }
  // Y is [steps, directions, batch, hidden]; the states [directions, batch, hidden].
  lines.push_back(fmt::format("{} = torch.stack(_ys, 1){}", c.out(0),
                              batch_major ? ".permute(2, 0, 1, 3)" : ""));
  lines.push_back(
      fmt::format("{} = torch.stack(_hs){}", c.out(1), batch_major ? ".transpose(0, 1)" : ""));
  if (lstm) {
    lines.push_back(
        fmt::format("{} = torch.stack(_cs){}", c.out(2), batch_major ? ".transpose(0, 1)" : ""));
  }
  return lines;
}

}  // namespace

void add_rnn_writers(std::map<std::string, Writer>& t) {
  t["RNN"] = [](const Call& c) { return recurrent(c, RecurrentCell::kRnn); };
  t["GRU"] = [](const Call& c) { return recurrent(c, RecurrentCell::kGru); };
  t["LSTM"] = [](const Call& c) { return recurrent(c, RecurrentCell::kLstm); };
}

}  // namespace cleave::pytorch_detail

namespace cleave {

std::string pytorch_helpers(const std::vector<std::vector<std::string>>& lines) {
  for (const auto& node_lines : lines) {
    for (const std::string& line : node_lines) {
      if (line.find("rnn_activation(") != std::string::npos)
        return pytorch_detail::kActivationHelper;
    }
  }
  return "";
}

}  // namespace cleave
