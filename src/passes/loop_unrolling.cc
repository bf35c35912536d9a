// Unrolls Loop/Scan bodies and LSTM/GRU cells into one set of nodes per step.
#include "passes/loop_unrolling.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

namespace cleave {

namespace {

bool is_loop_op(const Node& node) {
  return node.domain.empty() && (node.op_type == "Loop" || node.op_type == "Scan" ||
                                 node.op_type == "LSTM" || node.op_type == "GRU");
}

class Unroller {
 public:
  Unroller(Graph& graph, NodeId id, const std::string& origin, UnrollReport& report)
      : g_(graph), node_(graph.node(id)), id_(id), origin_(origin), report_(report) {
    const auto it = g_.opset_imports.find("");
    opset_ = it == g_.opset_imports.end() ? 17 : it->second;
    base_ = node_.name.empty() ? fmt::format("{}{}", node_.op_type, id) : node_.name;
  }

  void run() {
    std::vector<ValueId> results;
    if (node_.op_type == "Loop") {
      results = loop();
    } else if (node_.op_type == "Scan") {
      results = scan();
    } else {
      results = rnn(node_.op_type == "LSTM");
    }
    g_.remove_node(id_);
    for (std::size_t k = 0; k < node_.outputs.size() && k < results.size(); ++k) {
      const ValueId orig = node_.outputs[k];
      if (orig == kNoValue || results[k] == kNoValue) continue;
      // A graph output keeps its name (a caller finds it by name); other uses are rewired.
      if (g_.value(orig).is_graph_output) {
        g_.add_node("Identity", {results[k]}, {orig}, {}, fresh_name("output"));
        ++report_.nodes_added;
      } else {
        g_.replace_all_uses(orig, results[k]);
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("{}: node {}: {}", origin_, g_.describe(id_), why));
  }

  std::string fresh_name(const std::string& base) {
    std::string name = fmt::format("{}/{}", base_, base);
    for (int k = 1; g_.find_value(name); ++k) name = fmt::format("{}/{}_{}", base_, base, k);
    return name;
  }

  ValueId op(const std::string& type, std::vector<ValueId> inputs,
             std::vector<std::pair<std::string, Attribute>> attributes = {}) {
    const ValueId out = g_.add_value(fresh_name(type));
    g_.add_node(type, std::move(inputs), {out}, std::move(attributes), g_.value(out).name);
    ++report_.nodes_added;
    return out;
  }

  ValueId constant(TensorData data, const std::string& base) {
    return g_.add_initializer(fresh_name(base), std::move(data));
  }
  ValueId index(int64_t i) {
    return constant(TensorData::from<int64_t>(DataType::kInt64, {}, {i}), fmt::format("t{}", i));
  }

  ValueId gather(ValueId data, ValueId idx, int64_t axis) {
    return op("Gather", {data, idx}, {{"axis", Attribute::of_int(axis)}});
  }

  ValueId unsqueeze(ValueId v, const std::vector<int64_t>& axes) {
    if (opset_ >= 13) {
      const ValueId a = constant(
          TensorData::from<int64_t>(DataType::kInt64, {static_cast<int64_t>(axes.size())}, axes),
          "axes");
      return op("Unsqueeze", {v, a});
    }
    return op("Unsqueeze", {v}, {{"axes", Attribute::of_ints(axes)}});
  }

  ValueId concat(const std::vector<ValueId>& parts, int64_t axis) {
    if (parts.size() == 1) return parts[0];
    return op("Concat", parts, {{"axis", Attribute::of_int(axis)}});
  }

  // Stacks per-step values along a new `axis` (Scan outputs, Loop scan outputs, RNN Y).
  ValueId stack(const std::vector<ValueId>& steps, int64_t axis) {
    std::vector<ValueId> parts;
    for (ValueId v : steps) parts.push_back(unsqueeze(v, {axis}));
    return concat(parts, axis);
  }

  // A copy (the bytes are shared): adding values to the graph moves its value storage.
  std::optional<TensorData> constant_of(ValueId v) const {
    if (v == kNoValue) return std::nullopt;
    const Value& value = g_.value(v);
    if (!value.initializer || !value.initializer->has_data()) return std::nullopt;
    return value.initializer;
  }

  std::shared_ptr<const Graph> body_attribute(const std::string& key) {
    const Attribute* a = node_.attribute(key);
    if (!a || a->kind != AttributeKind::kGraph || !a->g) fail(fmt::format("has no {} graph", key));
    // Loops inside the body are unrolled first, where their outer references still resolve.
    auto body = std::make_shared<Graph>(*a->g);
    if (has_loops(*body)) unroll_static_loops(*body, origin_);
    return body;
  }

  // Copies the body's nodes into the graph once, with `bound` giving the body inputs'
  // values; returns the body outputs' values.
  std::vector<ValueId> inline_body(const Graph& body, std::map<ValueId, ValueId> bound,
                                   const std::string& step) {
    const auto resolve = [&](ValueId b) -> ValueId {
      if (b == kNoValue) return kNoValue;
      if (const auto it = bound.find(b); it != bound.end()) return it->second;
      const Value& value = body.value(b);
      if (value.initializer) {
        const ValueId v = constant(*value.initializer, value.name);
        bound[b] = v;
        return v;
      }
      // A name the body does not define is a value of the enclosing graph.
      const std::optional<ValueId> outer = g_.find_value(value.name);
      if (!outer) fail(fmt::format("its body reads \"{}\", which no graph defines", value.name));
      bound[b] = *outer;
      return *outer;
    };
    for (NodeId nid : body.topological_order()) {
      const Node& n = body.node(nid);
      std::vector<ValueId> inputs;
      for (ValueId in : n.inputs) inputs.push_back(resolve(in));
      std::vector<ValueId> outputs;
      for (ValueId out : n.outputs) {
        const ValueId v = g_.add_value(fresh_name(step + "/" + body.value(out).name));
        bound[out] = v;
        outputs.push_back(v);
      }
      g_.add_node(n.op_type, inputs, outputs, n.attributes,
                  fresh_name(step + "/" + (n.name.empty() ? n.op_type : n.name)), n.domain);
      ++report_.nodes_added;
    }
    std::vector<ValueId> results;
    for (ValueId out : body.outputs()) results.push_back(resolve(out));
    return results;
  }

  static bool is_true_constant(const Graph& graph, ValueId v) {
    const Value& value = graph.value(v);
    const TensorData* t = value.initializer ? &*value.initializer : nullptr;
    if (!t && value.producer >= 0 && graph.node(value.producer).op_type == "Constant") {
      const Attribute* a = graph.node(value.producer).attribute("value");
      if (a && a->kind == AttributeKind::kTensor) t = &a->t;
    }
    return t && t->dtype == DataType::kBool && t->element_count() == 1 &&
           t->as<uint8_t>().size() == 1 && t->as<uint8_t>()[0] != 0;
  }

  std::vector<ValueId> loop() {
    const ValueId m = node_.inputs.empty() ? kNoValue : node_.inputs[0];
    const std::optional<TensorData> trip = constant_of(m);
    if (!trip || trip->as<int64_t>().size() != 1) {
      fail("its trip count M is not a constant (a dynamic trip count cannot be unrolled)");
    }
    const int64_t count = trip->as<int64_t>()[0];
    const ValueId cond = node_.inputs.size() > 1 ? node_.inputs[1] : kNoValue;
    if (cond != kNoValue && !is_true_constant(g_, cond)) {
      fail("its condition input is not the constant true (a data-dependent trip count)");
    }
    const std::shared_ptr<const Graph> body = body_attribute("body");
    const std::size_t carried = node_.inputs.size() < 2 ? 0 : node_.inputs.size() - 2;
    if (body->inputs().size() != carried + 2 || body->outputs().size() < carried + 1) {
      fail(fmt::format("its body has {} inputs and {} outputs for {} loop-carried values",
                       body->inputs().size(), body->outputs().size(), carried));
    }
    const ValueId cond_out = body->outputs()[0];
    if (cond_out != body->inputs()[1] && !is_true_constant(*body, cond_out)) {
      fail("its body computes the loop condition (a data-dependent trip count cannot be unrolled)");
    }
    const std::size_t scans = body->outputs().size() - 1 - carried;
    if (count < 0 || count > 100000) fail(fmt::format("trip count {} is out of range", count));
    if (count == 0 && scans > 0) fail("trip count 0 leaves its scan outputs empty");
    std::vector<ValueId> state(node_.inputs.begin() + std::min<std::size_t>(2, node_.inputs.size()),
                               node_.inputs.end());
    std::vector<std::vector<ValueId>> scanned(scans);
    const ValueId yes = constant(TensorData::from<uint8_t>(DataType::kBool, {}, {1}), "true");
    for (int64_t i = 0; i < count; ++i) {
      std::map<ValueId, ValueId> bound = {{body->inputs()[0], index(i)}, {body->inputs()[1], yes}};
      for (std::size_t j = 0; j < carried; ++j) bound[body->inputs()[2 + j]] = state[j];
      const std::vector<ValueId> out = inline_body(*body, bound, fmt::format("i{}", i));
      for (std::size_t j = 0; j < carried; ++j) state[j] = out[1 + j];
      for (std::size_t k = 0; k < scans; ++k) scanned[k].push_back(out[1 + carried + k]);
    }
    ++report_.loops;
    report_.steps += count;
    std::vector<ValueId> results = state;
    for (auto& steps : scanned) results.push_back(stack(steps, 0));
    return results;
  }

  std::vector<int64_t> ints_or(const std::string& key, std::size_t count, int64_t fallback) {
    std::vector<int64_t> v = node_.ints_attribute(key);
    if (v.empty()) v.assign(count, fallback);
    if (v.size() != count) fail(fmt::format("{} has {} entries for {}", key, v.size(), count));
    return v;
  }

  std::vector<ValueId> scan() {
    if (opset_ < 9) fail("Scan before opset 9 (with a batch axis) is not unrolled");
    const std::shared_ptr<const Graph> body = body_attribute("body");
    const int64_t scan_inputs = node_.int_attribute("num_scan_inputs", -1);
    const auto inputs = static_cast<int64_t>(node_.inputs.size());
    if (scan_inputs < 1 || scan_inputs > inputs) fail("num_scan_inputs is out of range");
    const auto carried = static_cast<std::size_t>(inputs - scan_inputs);
    const std::size_t scans = body->outputs().size() - std::min(carried, body->outputs().size());
    const std::vector<int64_t> in_axes = ints_or("scan_input_axes", scan_inputs, 0);
    const std::vector<int64_t> in_dirs = ints_or("scan_input_directions", scan_inputs, 0);
    const std::vector<int64_t> out_axes = ints_or("scan_output_axes", scans, 0);
    const std::vector<int64_t> out_dirs = ints_or("scan_output_directions", scans, 0);
    int64_t length = -1;
    std::vector<int64_t> axes(in_axes);
    for (int64_t m = 0; m < scan_inputs; ++m) {
      const Value& x = g_.value(node_.inputs[carried + m]);
      if (!x.shape.rank_known) fail(fmt::format("scan input \"{}\" has no known shape", x.name));
      const auto rank = static_cast<int64_t>(x.shape.rank());
      if (axes[m] < 0) axes[m] += rank;
      if (axes[m] < 0 || axes[m] >= rank || !x.shape.dims[axes[m]].is_known()) {
        fail(fmt::format("scan input \"{}\" has no static length along axis {}", x.name,
                         in_axes[m]));
      }
      const int64_t n = x.shape.dims[axes[m]].size;
      if (length >= 0 && n != length) {
        fail(fmt::format("scan inputs disagree on the sequence length ({} and {})", length, n));
      }
      length = n;
    }
    std::vector<ValueId> state(node_.inputs.begin(), node_.inputs.begin() + carried);
    std::vector<std::vector<ValueId>> scanned(scans);
    for (int64_t t = 0; t < length; ++t) {
      std::map<ValueId, ValueId> bound;
      for (std::size_t j = 0; j < carried; ++j) bound[body->inputs()[j]] = state[j];
      for (int64_t m = 0; m < scan_inputs; ++m) {
        const int64_t at = in_dirs[m] != 0 ? length - 1 - t : t;
        bound[body->inputs()[carried + m]] = gather(node_.inputs[carried + m], index(at), axes[m]);
      }
      const std::vector<ValueId> out = inline_body(*body, bound, fmt::format("t{}", t));
      for (std::size_t j = 0; j < carried; ++j) state[j] = out[j];
      for (std::size_t k = 0; k < scans; ++k) scanned[k].push_back(out[carried + k]);
    }
    ++report_.loops;
    report_.steps += length;
    std::vector<ValueId> results = state;
    for (std::size_t k = 0; k < scans; ++k) {
      if (out_dirs[k] != 0) std::reverse(scanned[k].begin(), scanned[k].end());
      results.push_back(stack(scanned[k], out_axes[k]));
    }
    return results;
  }

  std::string activation(std::size_t index, const std::vector<std::string>& defaults,
                         std::size_t per_direction) {
    const Attribute* a = node_.attribute("activations");
    if (!a || a->strings.empty()) return defaults[index % per_direction];
    if (index >= a->strings.size()) fail("activations has too few entries");
    const std::string& name = a->strings[index];
    if (name != "Sigmoid" && name != "Tanh" && name != "Relu") {
      fail(fmt::format("activation {} is not unrolled (only Sigmoid, Tanh, Relu)", name));
    }
    return name;
  }

  // Rows [gate*H, gate*H + H) of w[d] (a [dirs, G*H, cols] tensor), transposed: [cols, H].
  static std::vector<float> gate_columns(const TensorData& w, int64_t d, int64_t gate, int64_t h,
                                         int64_t cols, int64_t gates) {
    const auto data = w.as<float>();
    std::vector<float> out(static_cast<std::size_t>(cols * h));
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out[static_cast<std::size_t>(c * h + r)] =
            data[static_cast<std::size_t>((d * gates * h + gate * h + r) * cols + c)];
      }
    }
    return out;
  }

  // An LSTM's or GRU's checked attributes, its constant weights W, R, B, P (B and P may be
  // absent) and the sizes of its input X.
  struct Rnn {
    bool lstm = false;
    int64_t gates = 0, dirs = 1, hidden = 0, length = 0, batch = 0, in = 0;
    std::string direction;
    std::optional<TensorData> w, r, b, p;
  };

  ValueId rnn_input(std::size_t k) const {
    return k < node_.inputs.size() ? node_.inputs[k] : kNoValue;
  }

  Rnn rnn_weights(bool lstm) const {
    Rnn rnn;
    rnn.lstm = lstm;
    rnn.gates = lstm ? 4 : 3;
    if (node_.int_attribute("layout", 0) != 0) fail("layout 1 (batch first) is not unrolled");
    if (node_.attribute("clip")) fail("clip is not unrolled");
    if (node_.attribute("activation_alpha") || node_.attribute("activation_beta")) {
      fail("activation_alpha/activation_beta are not unrolled");
    }
    if (lstm && node_.int_attribute("input_forget", 0) != 0) fail("input_forget is not unrolled");
    if (rnn_input(4) != kNoValue) {
      fail("sequence_lens is not unrolled (every sequence must be full)");
    }
    rnn.w = constant_of(rnn_input(1));
    rnn.r = constant_of(rnn_input(2));
    rnn.b = constant_of(rnn_input(3));
    rnn.p = lstm ? constant_of(rnn_input(7)) : std::nullopt;
    if (!rnn.w || !rnn.r || (rnn_input(3) != kNoValue && !rnn.b) ||
        (lstm && rnn_input(7) != kNoValue && !rnn.p)) {
      fail("its weights W, R, B, P must be constants to be unrolled");
    }
    for (const auto* t : {&rnn.w, &rnn.r, &rnn.b, &rnn.p}) {
      const std::size_t rank = t == &rnn.w || t == &rnn.r ? 3u : 2u;
      if (*t && ((*t)->dtype != DataType::kFloat || (*t)->dims.size() != rank)) {
        fail("its weights must be f32 of the ONNX shapes");
      }
    }
    rnn.direction = node_.string_attribute("direction", "forward");
    if (rnn.direction != "forward" && rnn.direction != "reverse" &&
        rnn.direction != "bidirectional") {
      fail(fmt::format("direction \"{}\" is unknown", rnn.direction));
    }
    rnn.dirs = rnn.direction == "bidirectional" ? 2 : 1;
    rnn.hidden = node_.int_attribute("hidden_size", rnn.w->dims[1] / rnn.gates);
    const Value& x = g_.value(rnn_input(0));
    if (!x.shape.is_static() || x.shape.rank() != 3) {
      fail(fmt::format("input X \"{}\" needs a static [seq, batch, input] shape", x.name));
    }
    const std::vector<int64_t> xs = x.shape.sizes();
    rnn.length = xs[0];
    rnn.batch = xs[1];
    rnn.in = xs[2];
    const int64_t dirs = rnn.dirs, gh = rnn.gates * rnn.hidden;
    if (rnn.w->dims != std::vector<int64_t>{dirs, gh, rnn.in} ||
        rnn.r->dims != std::vector<int64_t>{dirs, gh, rnn.hidden} ||
        (rnn.b && rnn.b->dims != std::vector<int64_t>{dirs, 2 * gh}) ||
        (rnn.p && rnn.p->dims != std::vector<int64_t>{dirs, 3 * rnn.hidden})) {
      fail(
          fmt::format("W, R, B or P do not have the shapes of {} direction(s), hidden_size {}, "
                      "input size {}",
                      dirs, rnn.hidden, rnn.in));
    }
    return rnn;
  }

  // A gate's bias of direction d: B's W half, R half or both summed (zeros without B).
  static std::vector<float> rnn_bias(const Rnn& rnn, int64_t d, int64_t gate, bool from_w,
                                     bool from_r) {
    std::vector<float> v(static_cast<std::size_t>(rnn.hidden), 0.0f);
    if (!rnn.b) return v;
    const auto data = rnn.b->as<float>();
    for (int64_t k = 0; k < rnn.hidden; ++k) {
      const int64_t at = d * 2 * rnn.gates * rnn.hidden + gate * rnn.hidden + k;
      if (from_w) v[k] += data[at];
      if (from_r) v[k] += data[at + rnn.gates * rnn.hidden];
    }
    return v;
  }

  ValueId f32(std::vector<int64_t> dims, const std::vector<float>& v, const std::string& n) {
    return constant(TensorData::from<float>(DataType::kFloat, std::move(dims), v), n);
  }

  // [x, h] against W and R stacked: one Gemm per gate and step.
  ValueId rnn_stacked(const Rnn& rnn, int64_t d, int64_t gate) {
    std::vector<float> top = gate_columns(*rnn.w, d, gate, rnn.hidden, rnn.in, rnn.gates);
    const std::vector<float> low = gate_columns(*rnn.r, d, gate, rnn.hidden, rnn.hidden, rnn.gates);
    top.insert(top.end(), low.begin(), low.end());
    return f32({rnn.in + rnn.hidden, rnn.hidden}, top, fmt::format("WR{}_{}", d, gate));
  }

  ValueId rnn_initial(const Rnn& rnn, ValueId given, int64_t d, const std::string& n) {
    if (given != kNoValue) return gather(given, index(d), 0);
    return f32({rnn.batch, rnn.hidden},
               std::vector<float>(static_cast<std::size_t>(rnn.batch * rnn.hidden), 0.0f), n);
  }

  // One direction's constants: per fused gate [W; R] stacked and its bias, the peepholes, and
  // GRU's hidden gate apart (its reset gate comes between).
  struct RnnDirection {
    std::vector<std::string> act;
    std::vector<ValueId> wr, bb;
    ValueId peep[3] = {kNoValue, kNoValue, kNoValue};
    ValueId wh = kNoValue, rh = kNoValue, bwh = kNoValue, brh = kNoValue;
    bool linear_before_reset = false;
  };

  void rnn_constants(const Rnn& rnn, int64_t d, RnnDirection& k) {
    const int64_t fused = rnn.lstm ? 4 : 2;
    for (int64_t gate = 0; gate < fused; ++gate) {
      k.wr.push_back(rnn_stacked(rnn, d, gate));
      k.bb.push_back(
          f32({rnn.hidden}, rnn_bias(rnn, d, gate, true, true), fmt::format("B{}_{}", d, gate)));
    }
    if (rnn.p) {
      const auto data = rnn.p->as<float>();
      for (int j = 0; j < 3; ++j) {
        std::vector<float> v(data.begin() + (d * 3 + j) * rnn.hidden,
                             data.begin() + (d * 3 + j + 1) * rnn.hidden);
        k.peep[j] = f32({rnn.hidden}, v, fmt::format("P{}_{}", d, j));
      }
    }
    k.linear_before_reset = !rnn.lstm && node_.int_attribute("linear_before_reset", 0) != 0;
    if (rnn.lstm) return;
    const int64_t h = rnn.hidden;
    k.wh =
        f32({rnn.in, h}, gate_columns(*rnn.w, d, 2, h, rnn.in, rnn.gates), fmt::format("Wh{}", d));
    k.rh = f32({h, h}, gate_columns(*rnn.r, d, 2, h, h, rnn.gates), fmt::format("Rh{}", d));
    k.bwh = f32({h}, rnn_bias(rnn, d, 2, true, !k.linear_before_reset), fmt::format("Bwh{}", d));
    k.brh = f32({h}, rnn_bias(rnn, d, 2, false, true), fmt::format("Brh{}", d));
  }

  // One LSTM step (ONNX gate order i, o, f, c; peepholes i, o, f): the new h; c updated.
  ValueId lstm_step(const RnnDirection& k, ValueId xh, ValueId& c) {
    const auto gate = [&](int64_t j) { return op("Gemm", {xh, k.wr[j], k.bb[j]}); };
    ValueId gi = gate(0), go = gate(1), gf = gate(2);
    const ValueId gc = gate(3);
    if (k.peep[0] != kNoValue) gi = op("Add", {gi, op("Mul", {k.peep[0], c})});
    if (k.peep[2] != kNoValue) gf = op("Add", {gf, op("Mul", {k.peep[2], c})});
    const ValueId i = op(k.act[0], {gi}), f = op(k.act[0], {gf}), cc = op(k.act[1], {gc});
    c = op("Add", {op("Mul", {f, c}), op("Mul", {i, cc})});
    if (k.peep[1] != kNoValue) go = op("Add", {go, op("Mul", {k.peep[1], c})});
    return op("Mul", {op(k.act[0], {go}), op(k.act[2], {c})});
  }

  // One GRU step (ONNX gate order z, r, h): the new h. `zero_h`: h is still the zero initial
  // state, so h R^T + b is b (no node reading only constants).
  ValueId gru_step(const RnnDirection& k, ValueId xt, ValueId xh, ValueId h, bool zero_h) {
    const auto gate = [&](int64_t j) { return op("Gemm", {xh, k.wr[j], k.bb[j]}); };
    const ValueId z = op(k.act[0], {gate(0)}), rr = op(k.act[0], {gate(1)});
    const ValueId xw = op("Gemm", {xt, k.wh, k.bwh});
    const ValueId hr = k.linear_before_reset
                           ? op("Mul", {rr, zero_h ? k.brh : op("Gemm", {h, k.rh, k.brh})})
                           : op("MatMul", {op("Mul", {rr, h}), k.rh});
    const ValueId hh = op(k.act[1], {op("Add", {xw, hr})});
    return op("Add", {hh, op("Mul", {z, op("Sub", {h, hh})})});
  }

  // Direction d's steps: its h per time step into ys, its last h and c.
  void rnn_direction(const Rnn& rnn, int64_t d, std::vector<ValueId>& ys, ValueId& last_h,
                     ValueId& last_c) {
    const bool reverse = rnn.direction == "reverse" || d == 1;
    const std::size_t per_dir = rnn.lstm ? 3 : 2;
    RnnDirection k;
    for (std::size_t j = 0; j < per_dir; ++j) {
      k.act.push_back(activation(d * per_dir + j, {"Sigmoid", "Tanh", "Tanh"}, per_dir));
    }
    ValueId h = rnn_initial(rnn, rnn_input(5), d, "h0");
    ValueId c = rnn.lstm ? rnn_initial(rnn, rnn_input(6), d, "c0") : kNoValue;
    rnn_constants(rnn, d, k);
    for (int64_t s = 0; s < rnn.length; ++s) {
      const int64_t t = reverse ? rnn.length - 1 - s : s;
      const ValueId xt = gather(rnn_input(0), index(t), 0);
      const ValueId xh = op("Concat", {xt, h}, {{"axis", Attribute::of_int(1)}});
      h = rnn.lstm ? lstm_step(k, xh, c)
                   : gru_step(k, xt, xh, h, s == 0 && rnn_input(5) == kNoValue);
      ys[t] = h;
    }
    last_h = h;
    last_c = c;
  }

  std::vector<ValueId> rnn(bool lstm) {
    const Rnn spec = rnn_weights(lstm);
    std::vector<std::vector<ValueId>> ys(spec.dirs, std::vector<ValueId>(spec.length, kNoValue));
    std::vector<ValueId> last_h(spec.dirs), last_c(spec.dirs);
    for (int64_t d = 0; d < spec.dirs; ++d) rnn_direction(spec, d, ys[d], last_h[d], last_c[d]);
    ++report_.rnns;
    report_.steps += spec.length * spec.dirs;
    const bool want_y = !node_.outputs.empty() && !g_.consumers(node_.outputs[0]).empty();
    const bool y_output = !node_.outputs.empty() && g_.value(node_.outputs[0]).is_graph_output;
    std::vector<ValueId> results(node_.outputs.size(), kNoValue);
    if (!results.empty() && (want_y || y_output)) {
      std::vector<ValueId> steps;
      for (int64_t t = 0; t < spec.length; ++t) {
        std::vector<ValueId> per_dir_y;
        for (int64_t d = 0; d < spec.dirs; ++d) per_dir_y.push_back(unsqueeze(ys[d][t], {0, 1}));
        steps.push_back(concat(per_dir_y, 1));
      }
      results[0] = concat(steps, 0);
    }
    const auto stack_dirs = [&](const std::vector<ValueId>& v) {
      std::vector<ValueId> parts;
      for (ValueId s : v) parts.push_back(unsqueeze(s, {0}));
      return concat(parts, 0);
    };
    if (results.size() > 1) results[1] = stack_dirs(last_h);
    if (lstm && results.size() > 2) results[2] = stack_dirs(last_c);
    return results;
  }

  Graph& g_;
  const Node node_;  // A copy: adding nodes may move the graph's node storage.
  NodeId id_;
  const std::string& origin_;
  UnrollReport& report_;
  int64_t opset_ = 17;
  std::string base_;
};

}  // namespace

bool has_loops(const Graph& graph) {
  for (NodeId id : graph.node_ids()) {
    if (is_loop_op(graph.node(id))) return true;
  }
  return false;
}

UnrollReport unroll_static_loops(Graph& graph, const std::string& origin) {
  UnrollReport report;
  for (NodeId id : graph.topological_order()) {
    if (!is_loop_op(graph.node(id))) continue;
    Unroller(graph, id, origin, report).run();
  }
  return report;
}

}  // namespace cleave
