// Cleave's fused node forms written back as the standard ONNX nodes they stand for.
#include "onnx/standard_forms.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <vector>

namespace cleave {

namespace {

// Removes attribute `name` from `node`; a fused form's attributes are cleave's own.
void drop_attribute(onnx::NodeProto& node, const std::string& name) {
  auto* attributes = node.mutable_attribute();
  for (int i = 0; i < attributes->size(); ++i) {
    if (attributes->Get(i).name() == name) {
      attributes->DeleteSubrange(i, 1);
      return;
    }
  }
}

// The standard nodes that follow one exported node, chained on its first output: the node
// writes a fresh name, each appended node reads the previous value, and finish() gives the
// last one the node's original output name, so readers and value_info stay as they were.
class Chain {
 public:
  Chain(onnx::GraphProto& out, std::set<std::string>& names, int64_t opset)
      : out_(out), names_(names), opset_(opset), index_(out.node_size() - 1) {
    final_ = node().output(0);
    current_ = fresh(final_ + "_fused");
    node().set_output(0, current_);
  }

  onnx::NodeProto& node() { return *out_.mutable_node(index_); }
  const std::string& current() const { return current_; }
  int64_t opset() const { return opset_; }

  // Appends `op` reading `inputs` (current() where "" is given first); returns the node.
  onnx::NodeProto& append(const std::string& op, const std::vector<std::string>& inputs) {
    const std::string base = node().name().empty() ? final_ : node().name();
    onnx::NodeProto* next = out_.add_node();
    next->set_op_type(op);
    next->set_name(base + "/" + op + std::to_string(++appended_));
    for (const std::string& input : inputs) next->add_input(input);
    current_ = fresh(final_ + "_" + op);
    next->add_output(current_);
    last_ = out_.node_size() - 1;
    return *next;
  }

  // A float scalar as a Constant node: unlike an initializer, valid at every IR version.
  std::string constant(float value) {
    onnx::NodeProto* made = out_.add_node();
    made->set_op_type("Constant");
    std::string name = fresh(final_ + "_constant");
    made->set_name(name);
    made->add_output(name);
    auto* attribute = made->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    attribute->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    attribute->mutable_t()->add_float_data(value);
    return name;
  }

  void finish() {
    if (last_ < 0) {
      node().set_output(0, final_);
      return;
    }
    auto* last = out_.mutable_node(last_);
    names_.erase(last->output(0));
    last->set_output(0, final_);
  }

 private:
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int suffix = 1; names_.count(name); ++suffix) name = fmt::format("{}_{}", base, suffix);
    names_.insert(name);
    return name;
  }

  onnx::GraphProto& out_;
  std::set<std::string>& names_;
  int64_t opset_;
  int index_;
  int last_ = -1;
  int appended_ = 0;
  std::string final_;
  std::string current_;
};

// Appends the standard nodes of a fused activation (the `activation` attribute's value).
void append_activation(Chain& chain, const Node& fused, const std::string& activation,
                       const std::string& where) {
  const std::string x = chain.current();
  if (activation == "Relu") {
    chain.append("Relu", {x});
  } else if (activation == "Clip") {
    const float low = fused.float_attribute("activation_min", std::numeric_limits<float>::lowest());
    const float high = fused.float_attribute("activation_max", std::numeric_limits<float>::max());
    if (chain.opset() < 11) {
      onnx::NodeProto& clip = chain.append("Clip", {x});
      for (auto [name, bound] : {std::pair{"min", low}, std::pair{"max", high}}) {
        auto* attribute = clip.add_attribute();
        attribute->set_name(name);
        attribute->set_type(onnx::AttributeProto::FLOAT);
        attribute->set_f(bound);
      }
    } else {
      const std::string min = chain.constant(low);
      const std::string max = chain.constant(high);
      chain.append("Clip", {x, min, max});
    }
  } else if (activation == "Swish") {
    chain.append("Sigmoid", {x});
    chain.append("Mul", {x, chain.current()});
  } else if (activation == "HardSwish") {
    // HardSigmoid then Mul, as PyTorch exports hardswish before opset 14 (and the fusion reads).
    onnx::NodeProto& gate = chain.append("HardSigmoid", {x});
    for (auto [name, value] : {std::pair{"alpha", 1.0f / 6.0f}, std::pair{"beta", 0.5f}}) {
      auto* attribute = gate.add_attribute();
      attribute->set_name(name);
      attribute->set_type(onnx::AttributeProto::FLOAT);
      attribute->set_f(value);
    }
    chain.append("Mul", {x, chain.current()});
  } else if (activation == "Gelu") {
    // 0.5 * x * (1 + erf(x / sqrt 2)), the spelling the MatMul epilogue fusion reads.
    const std::string root_two = chain.constant(std::sqrt(2.0f));
    chain.append("Div", {x, root_two});
    chain.append("Erf", {chain.current()});
    const std::string one = chain.constant(1.0f);
    chain.append("Add", {chain.current(), one});
    chain.append("Mul", {x, chain.current()});
    const std::string half = chain.constant(0.5f);
    chain.append("Mul", {chain.current(), half});
  } else {
    throw Error(
        fmt::format("{}: the fused activation '{}' has no standard ONNX form", where, activation));
  }
}

void write_conv(Chain& chain, const Node& fused, const std::string& where) {
  onnx::NodeProto& conv = chain.node();
  if (fused.attribute("sum_input")) {
    // The residual is input 3; an omitted bias before it is dropped with it.
    const std::string residual = conv.input(3);
    conv.mutable_input()->RemoveLast();
    if (conv.input_size() == 3 && conv.input(2).empty()) conv.mutable_input()->RemoveLast();
    drop_attribute(conv, "sum_input");
    chain.append("Add", {chain.current(), residual});
  }
  if (fused.attribute("activation")) {
    for (const char* name : {"activation", "activation_min", "activation_max"}) {
      drop_attribute(chain.node(), name);
    }
    append_activation(chain, fused, fused.string_attribute("activation", ""), where);
  }
}

void write_matmul(Chain& chain, const Node& fused, const std::string& where) {
  onnx::NodeProto& matmul = chain.node();
  if (matmul.input_size() == 3) {
    const std::string bias = matmul.input(2);
    matmul.mutable_input()->RemoveLast();
    chain.append("Add", {chain.current(), bias});
  }
  if (fused.attribute("activation")) {
    drop_attribute(chain.node(), "activation");
    append_activation(chain, fused, fused.string_attribute("activation", ""), where);
  }
}

// LayerNormalization spelled out for opsets before 17, the way the fusion reads it back.
void write_layer_norm(Chain& chain, const Graph& graph, const Node& fused,
                      const std::string& where) {
  const Shape& shape = graph.value(fused.inputs.at(0)).shape;
  if (!shape.rank_known) {
    throw Error(
        fmt::format("{}: LayerNormalization needs opset 17, and spelling it out for "
                    "opset {} needs its input's rank, which is unknown",
                    where, chain.opset()));
  }
  const auto rank = static_cast<int64_t>(shape.rank());
  int64_t axis = fused.int_attribute("axis", -1);
  if (axis < 0) axis += rank;
  onnx::NodeProto& mean = chain.node();
  for (int i = 1; i < mean.output_size(); ++i) {
    if (!mean.output(i).empty()) {
      throw Error(
          fmt::format("{}: LayerNormalization needs opset 17, and its output {} has no "
                      "spelling for opset {}",
                      where, i, chain.opset()));
    }
  }
  while (mean.output_size() > 1) mean.mutable_output()->RemoveLast();
  std::vector<std::string> inputs(mean.input().begin(), mean.input().end());
  const std::string x = inputs.at(0);
  auto reduce_mean = [&](onnx::NodeProto& node) {
    node.set_op_type("ReduceMean");
    node.clear_attribute();
    auto* axes = node.add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    for (int64_t a = axis; a < rank; ++a) axes->add_ints(a);
  };
  mean.clear_input();
  mean.add_input(x);
  reduce_mean(mean);
  chain.append("Sub", {x, chain.current()});
  const std::string centered = chain.current();
  chain.append("Mul", {centered, centered});
  reduce_mean(chain.append("ReduceMean", {chain.current()}));
  const std::string epsilon = chain.constant(fused.float_attribute("epsilon", 1e-5f));
  chain.append("Add", {chain.current(), epsilon});
  chain.append("Sqrt", {chain.current()});
  chain.append("Div", {centered, chain.current()});
  if (inputs.size() > 1 && !inputs[1].empty()) chain.append("Mul", {chain.current(), inputs[1]});
  if (inputs.size() > 2 && !inputs[2].empty()) chain.append("Add", {chain.current(), inputs[2]});
}

}  // namespace

void write_standard_form(const Graph& graph, NodeId id, int64_t opset, onnx::GraphProto& out,
                         std::set<std::string>& names) {
  const Node& node = graph.node(id);
  if (!node.domain.empty() || node.outputs.empty()) return;
  const bool conv =
      node.op_type == "Conv" && (node.attribute("activation") || node.attribute("sum_input"));
  const bool norm = node.op_type == "BatchNormalization" && node.attribute("activation");
  const bool matmul =
      node.op_type == "MatMul" && (node.attribute("activation") || node.inputs.size() == 3);
  const bool layer_norm = node.op_type == "LayerNormalization" && opset < 17;
  if (!conv && !norm && !matmul && !layer_norm) return;
  const std::string where = fmt::format("node {}", graph.describe(id));
  Chain chain(out, names, opset);
  if (conv) {
    write_conv(chain, node, where);
  } else if (norm) {
    drop_attribute(chain.node(), "activation");
    append_activation(chain, node, node.string_attribute("activation", ""), where);
  } else if (matmul) {
    write_matmul(chain, node, where);
  } else {
    write_layer_norm(chain, graph, node, where);
  }
  chain.finish();
}

}  // namespace cleave
