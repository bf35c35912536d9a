// The PyTorch op table's GRU and LSTM: loops over the sequence in ONNX's gate orders (zrh, iofc).
#include "codegen/pytorch_call.h"

namespace cleave::pytorch_detail {

namespace {

// Refuses what the loops below do not write: other activations, clipping, per-batch lengths.
void check_supported(const Call& c, std::size_t default_activations) {
  if (const Attribute* given = c.node.attribute("activations")) {
    const std::vector<std::string> gru = {"Sigmoid", "Tanh"}, lstm = {"Sigmoid", "Tanh", "Tanh"};
    const auto& expected = default_activations == 2 ? gru : lstm;
    for (std::size_t i = 0; i < given->strings.size(); ++i) {
      if (given->strings[i] != expected[i % expected.size()])
        c.fail(fmt::format("activation '{}' (the default activations map)", given->strings[i]));
    }
  }
  if (c.node.float_attribute("clip", 0.0f) != 0.0f) c.fail("clip");
  if (c.has(4)) c.fail("sequence_lens (input 4)");
  if (c.node.attribute("activation_alpha") || c.node.attribute("activation_beta") ||
      c.node.int_attribute("input_forget", 0) != 0) {
    c.fail("activation_alpha, activation_beta or input_forget");
  }
}

// The step of one GRU direction: x·Wᵀ+Wb and h·Rᵀ+Rb, then the gates.
std::vector<std::string> gru_step(const Call& c, int64_t h) {
  const bool before_reset = c.node.int_attribute("linear_before_reset", 0) != 0;
  const std::string z = fmt::format("[:, :{}]", h), r = fmt::format("[:, {}:{}]", h, 2 * h),
                    n = fmt::format("[:, {}:]", 2 * h);
  std::vector<std::string> lines = {fmt::format("        _z = torch.sigmoid(_g{0} + _q{0})", z),
                                    fmt::format("        _r = torch.sigmoid(_g{0} + _q{0})", r)};
  if (before_reset) {
    lines.push_back(fmt::format("        _n = torch.tanh(_g{0} + _r * _q{0})", n));
  } else {
    // The reset gate scales the state before the product with Rh.
    lines.push_back(fmt::format("        _n = torch.tanh(_g{0} + (_r * _h) @ _rw[{1}:].t(){2})", n,
                                2 * h, c.has(3) ? fmt::format(" + _rb[{}:]", 2 * h) : ""));
  }
  lines.push_back("        _h = (1 - _z) * _n + _z * _h");
  return lines;
}

std::vector<std::string> lstm_step(const Call& c, int64_t h) {
  const bool peep = c.has(7);
  const auto gate = [&](int k, int p) {
    return fmt::format("_q[:, {}:{}]{}", k * h, (k + 1) * h,
                       peep ? fmt::format(" + _p[{}:{}] * _c", p * h, (p + 1) * h) : "");
  };
  return {"        _q = _g + _q",
          fmt::format("        _i = torch.sigmoid({})", gate(0, 0)),
          fmt::format("        _f = torch.sigmoid({})", gate(2, 2)),
          fmt::format("        _c = _f * _c + _i * torch.tanh(_q[:, {}:])", 3 * h),
          fmt::format("        _o = torch.sigmoid({})", gate(1, 1)),
          "        _h = _o * torch.tanh(_c)"};
}

std::vector<std::string> recurrent(const Call& c, bool lstm) {
  const int64_t gates = lstm ? 4 : 3;
  check_supported(c, lstm ? 3 : 2);
  const int64_t h = c.shape_in(2).at(2);
  const std::string direction = c.node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail(fmt::format("direction '{}'", direction));
  const int directions = direction == "bidirectional" ? 2 : 1;
  const bool batch_major = c.node.int_attribute("layout", 0) != 0;
  // Per direction: [batch, hidden] of a state given as [directions, batch, hidden] (or batch
  // first).
  const auto state = [&](std::size_t i, int d) {
    return batch_major ? fmt::format("{}[:, {}]", c.in(i), d) : fmt::format("{}[{}]", c.in(i), d);
  };
  std::vector<std::string> lines = {
      fmt::format("_x = {}{}", c.in(0), batch_major ? ".transpose(0, 1)" : ""),
      lstm ? "_ys, _hs, _cs = [], [], []" : "_ys, _hs = [], []"};
  for (int d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
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
    lines.push_back("_y = [None] * _x.shape[0]");
    lines.push_back(fmt::format("for _t in {}:",
                                reverse ? "reversed(range(_x.shape[0]))" : "range(_x.shape[0])"));
    lines.push_back(fmt::format("    _g = _x[_t] @ _w.t(){}", c.has(3) ? " + _wb" : ""));
    lines.push_back(fmt::format("    _q = _h @ _rw.t(){}", c.has(3) ? " + _rb" : ""));
    for (std::string& line : lstm ? lstm_step(c, h) : gru_step(c, h))
      lines.push_back(line.substr(4));
    lines.push_back("    _y[_t] = _h");
    lines.push_back(lstm ? "_ys.append(torch.stack(_y)); _hs.append(_h); _cs.append(_c)"
                         : "_ys.append(torch.stack(_y)); _hs.append(_h)");
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
  t["GRU"] = [](const Call& c) { return recurrent(c, false); };
  t["LSTM"] = [](const Call& c) { return recurrent(c, true); };
}

}  // namespace cleave::pytorch_detail
