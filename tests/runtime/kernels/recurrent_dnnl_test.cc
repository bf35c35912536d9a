// RNN, GRU and LSTM on oneDNN's RNN primitives (constant weights) against the plain loops (the
// same weights given as graph inputs): both GRU forms, LSTM with and without peepholes, every
// direction, with and without initial states; and the nodes that must keep to the loops.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;

constexpr int64_t kSteps = 5, kBatch = 3, kInput = 4, kHidden = 6;

struct Case {
  std::string op;  // RNN, GRU or LSTM.
  bool linear_before_reset = false;
  std::string direction = "forward";
  bool initial_states = false;
  bool initial_cell = true;  // LSTM with initial states: initial_c given too.
  bool peepholes = false;
  std::string extra_attributes;  // Appended to the node's attributes (", clip=100.0").
  bool lengths = false;          // A sequence_lens graph input.
  int outputs = 0;               // How many of the node's outputs it names; 0: all.
  bool batch_major = false;      // layout=1.
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.op << (c.linear_before_reset ? " linear_before_reset" : "") << " " << c.direction
       << (c.initial_states ? " with initial states" : "") << (c.batch_major ? " layout=1" : "");
}

int64_t directions(const Case& c) {
  return c.direction == "bidirectional" ? 2 : 1;
}
int64_t gates(const Case& c) {
  return c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
}

std::vector<int64_t> x_shape(const Case& c) {
  return c.batch_major ? std::vector<int64_t>{kBatch, kSteps, kInput}
                       : std::vector<int64_t>{kSteps, kBatch, kInput};
}
std::vector<int64_t> state_shape(const Case& c) {
  return c.batch_major ? std::vector<int64_t>{kBatch, directions(c), kHidden}
                       : std::vector<int64_t>{directions(c), kBatch, kHidden};
}

std::size_t count(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ",") + std::to_string(d);
  return "f32[" + text + "]";
}

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

// The node's weights: W, R, B and (LSTM with peepholes) P, by name, with their shapes.
struct Weights {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<double>> values;
};

Weights weights_of(const Case& c) {
  const int64_t d = directions(c), g = gates(c);
  Weights w;
  w.names = {"w", "r", "b"};
  w.shapes = {{d, g * kHidden, kInput}, {d, g * kHidden, kHidden}, {d, 2 * g * kHidden}};
  if (c.peepholes) {
    w.names.push_back("p");
    w.shapes.push_back({d, 3 * kHidden});
  }
  // Multiples of 1/64: the text form and the tensors hold exactly the same floats.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> step(-32, 32);
  for (const auto& shape : w.shapes) {
    std::vector<double> values(count(shape));
    for (double& v : values) v = step(rng) / 64.0;
    w.values.push_back(std::move(values));
  }
  return w;
}

// The node's graph with its weights either initializers (oneDNN) or graph inputs (loops).
std::string graph_text(const Case& c, bool constant_weights) {
  const Weights w = weights_of(c);
  const bool lstm = c.op == "LSTM";
  std::string inputs = "%x: " + dims_text(x_shape(c));
  if (c.lengths) inputs += ", %lengths: i32[" + std::to_string(kBatch) + "]";
  if (c.initial_states) {
    inputs += ", %h0: " + dims_text(state_shape(c));
    if (lstm && c.initial_cell) inputs += ", %c0: " + dims_text(state_shape(c));
  }
  std::string body;
  for (std::size_t i = 0; i < w.names.size(); ++i) {
    if (constant_weights) {
      body +=
          "  @" + w.names[i] + ": " + dims_text(w.shapes[i]) + " = " + listed(w.values[i]) + "\n";
    } else {
      inputs += ", %" + w.names[i] + ": " + dims_text(w.shapes[i]);
    }
  }
  const std::string sigil = constant_weights ? "@" : "%";
  std::string operands = "%x, " + sigil + "w, " + sigil + "r, " + sigil + "b, " +
                         (c.lengths ? "%lengths" : "_") + ", " + (c.initial_states ? "%h0" : "_");
  if (lstm) operands += std::string(", ") + (c.initial_states && c.initial_cell ? "%c0" : "_");
  if (c.peepholes) operands += ", " + sigil + "p";
  std::string outputs = lstm ? "%y, %y_h, %y_c" : "%y, %y_h";
  if (c.outputs == 1) outputs = "%y";
  if (c.outputs == 2) outputs = "%y, %y_h";
  body += "  " + outputs + " = " + c.op + "[hidden_size=" + std::to_string(kHidden) +
          ", direction=\"" + c.direction + "\"" +
          (c.linear_before_reset ? ", linear_before_reset=1" : "") +
          (c.batch_major ? ", layout=1" : "") + c.extra_attributes + "](" + operands + ")\n";
  return "graph g [ai.onnx=14] (" + inputs + ") {\n" + body + "  return " + outputs + "\n}\n";
}

// The run-time inputs: X, the initial states where the case has them, and `lengths`.
std::map<std::string, Tensor> run_inputs(const Case& c, const std::vector<int64_t>& lengths = {}) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  auto random = [&](std::vector<int64_t> shape) {
    std::vector<double> values(count(shape));
    for (double& v : values) v = value(rng);
    return floats(std::move(shape), values);
  };
  std::map<std::string, Tensor> inputs;
  inputs.emplace("x", random(x_shape(c)));
  if (c.initial_states) {
    inputs.emplace("h0", random(state_shape(c)));
    if (c.op == "LSTM" && c.initial_cell) inputs.emplace("c0", random(state_shape(c)));
  }
  if (c.lengths) {
    inputs.emplace("lengths",
                   kernel_test::make_tensor(DataType::kInt32, {kBatch},
                                            std::vector<double>(lengths.begin(), lengths.end())));
  }
  return inputs;
}

// The case's weights as graph inputs (the loops' form).
void add_weights(const Case& c, std::map<std::string, Tensor>& inputs) {
  const Weights w = weights_of(c);
  for (std::size_t i = 0; i < w.names.size(); ++i)
    inputs.emplace(w.names[i], floats(w.shapes[i], w.values[i]));
}

// What the loops compute for the case (its weights given as graph inputs).
std::vector<Tensor> loops_result(const Case& c, const std::vector<int64_t>& lengths = {}) {
  Executor loops(parse_graph(graph_text(c, false)));
  std::map<std::string, Tensor> inputs = run_inputs(c, lengths);
  add_weights(c, inputs);
  std::vector<Tensor> result = loops.run(inputs);
  EXPECT_EQ(loops.stats().implementations[0], "") << "weights given at run time take the loops";
  return result;
}

void expect_same_outputs(const std::vector<Tensor>& fast, const std::vector<Tensor>& slow) {
  ASSERT_EQ(fast.size(), slow.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    ASSERT_EQ(fast[i].shape(), slow[i].shape()) << "output " << i;
    expect_values(fast[i], slow[i].to_double_vector(), 1e-5);
  }
}

void expect_dnnl_matches_loops(const Case& c, const std::vector<int64_t>& lengths = {}) {
  Executor dnnl(parse_graph(graph_text(c, true)));
  const std::vector<Tensor> fast = dnnl.run(run_inputs(c, lengths));
  EXPECT_NE(dnnl.stats().implementations[0], "") << "constant weights did not run on oneDNN";
  expect_same_outputs(fast, loops_result(c, lengths));
}

class RecurrentDnnl : public testing::TestWithParam<Case> {};

TEST_P(RecurrentDnnl, MatchesTheLoops) {
  expect_dnnl_matches_loops(GetParam());
}

std::vector<Case> every_form() {
  std::vector<Case> cases;
  for (const auto& [op, linear_before_reset] : std::vector<std::pair<std::string, bool>>{
           {"RNN", false}, {"GRU", false}, {"GRU", true}, {"LSTM", false}}) {
    for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
      for (bool initial_states : {false, true}) {
        Case c;
        c.op = op;
        c.linear_before_reset = linear_before_reset;
        c.direction = direction;
        c.initial_states = initial_states;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

// layout=1 in every form: Y is oneDNN's batch-major layout, two directions' states are not.
std::vector<Case> batch_major_forms() {
  std::vector<Case> cases;
  for (Case c : every_form()) {
    c.batch_major = true;
    cases.push_back(c);
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.op + (c.linear_before_reset ? "Lbr" : "") + "_" + c.direction +
         (c.initial_states ? "_Initial" : "_Zero") + (c.batch_major ? "_BatchMajor" : "");
}

INSTANTIATE_TEST_SUITE_P(EveryForm, RecurrentDnnl, testing::ValuesIn(every_form()), case_name);
INSTANTIATE_TEST_SUITE_P(BatchMajor, RecurrentDnnl, testing::ValuesIn(batch_major_forms()),
                         case_name);

TEST(RecurrentDnnlLstm, PeepholesMatchTheLoops) {
  Case c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.initial_states = true;
  c.peepholes = true;
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlRnn, ReluMatchesTheLoops) {
  Case c;
  c.op = "RNN";
  c.direction = "bidirectional";
  c.extra_attributes = R"(, activations=["Relu", "Relu"])";
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlRnn, SigmoidMatchesTheLoops) {
  Case c;
  c.op = "RNN";
  c.initial_states = true;
  c.extra_attributes = R"(, activations=["Sigmoid"])";
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlFallback, SoftsignKeepsToTheLoops) {
  Case c;
  c.op = "RNN";
  c.extra_attributes = R"(, activations=["Softsign"])";
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c));
  EXPECT_EQ(executor.stats().implementations[0], "");
}

TEST(RecurrentDnnlOutputs, LstmWithoutItsCellStateMatchesTheLoops) {
  Case c;
  c.op = "LSTM";
  c.initial_states = true;
  c.outputs = 2;
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlLstm, InitialHiddenStateAloneMatchesTheLoops) {
  Case c;
  c.op = "LSTM";
  c.direction = "reverse";
  c.initial_states = true;
  c.initial_cell = false;
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlOutputs, GruWithYAloneMatchesTheLoops) {
  Case c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.outputs = 1;
  expect_dnnl_matches_loops(c);
}

TEST(RecurrentDnnlFallback, ClipKeepsToTheLoops) {
  Case c;
  c.op = "GRU";
  c.extra_attributes = ", clip=100.0";
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c));
  EXPECT_EQ(executor.stats().implementations[0], "");
}

TEST(RecurrentDnnlFallback, ShorterSequencesWithTheCellStateReadKeepToTheLoops) {
  Case c;
  c.op = "LSTM";
  c.lengths = true;
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c, {kSteps, 2, kSteps}));
  EXPECT_EQ(executor.stats().implementations[0], "");
}

TEST(RecurrentDnnlFallback, ShorterSequencesInReverseKeepToTheLoops) {
  Case c;
  c.op = "GRU";
  c.direction = "reverse";
  c.lengths = true;
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c, {kSteps, 2, kSteps}));
  EXPECT_EQ(executor.stats().implementations[0], "");
}

TEST(RecurrentDnnlFallback, FullSequenceLengthsRunOnTheDnnlPrimitive) {
  Case c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.lengths = true;
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c, {kSteps, kSteps, kSteps}));
  EXPECT_NE(executor.stats().implementations[0], "");
}

TEST(RecurrentDnnlFallback, ShorterLengthsInReverseOnALaterRunPrepareTheLoops) {
  Case c;
  c.op = "GRU";
  c.direction = "reverse";
  c.lengths = true;
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c, {kSteps, kSteps, kSteps}));
  const std::vector<int64_t> shorter = {kSteps, 1, 3};
  // The primitive would run every step from the end: only the loops start at each length.
  const std::vector<Tensor> later = executor.run(run_inputs(c, shorter));
  expect_same_outputs(later, loops_result(c, shorter));
}

// Forward in one direction, shorter sequences are the full run cut at their lengths.
TEST(RecurrentDnnlLengths, ForwardGruCutsShorterSequences) {
  Case c;
  c.op = "GRU";
  c.linear_before_reset = true;
  c.initial_states = true;
  c.lengths = true;
  expect_dnnl_matches_loops(c, {kSteps, 2, 1});
}

TEST(RecurrentDnnlLengths, ForwardRnnCutsShorterSequencesBatchMajor) {
  Case c;
  c.op = "RNN";
  c.lengths = true;
  c.batch_major = true;
  expect_dnnl_matches_loops(c, {3, kSteps, 1});
}

TEST(RecurrentDnnlLengths, ForwardLstmWithoutItsCellStateCutsShorterSequences) {
  Case c;
  c.op = "LSTM";
  c.lengths = true;
  c.outputs = 2;
  expect_dnnl_matches_loops(c, {2, 4, kSteps});
}

TEST(RecurrentDnnlLengths, OtherLengthsOnALaterRunAreCutThere) {
  Case c;
  c.op = "GRU";
  c.lengths = true;
  Executor executor(parse_graph(graph_text(c, true)));
  executor.run(run_inputs(c, {kSteps, kSteps, kSteps}));
  const std::vector<int64_t> shorter = {kSteps, 1, 3};
  const std::vector<Tensor> later = executor.run(run_inputs(c, shorter));
  expect_same_outputs(later, loops_result(c, shorter));
}

TEST(RecurrentDnnlShapes, AnotherSequenceAndBatchPrepareThePrimitiveAgain) {
  Case c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  // The node's graph with symbolic sequence and batch dims.
  auto symbolic = [&](bool constant_weights) {
    std::string text = graph_text(c, constant_weights);
    const std::string fixed = "%x: " + dims_text({kSteps, kBatch, kInput});
    return text.replace(text.find(fixed), fixed.size(),
                        "%x: f32[seq,batch," + std::to_string(kInput) + "]");
  };
  Executor dnnl(parse_graph(symbolic(true)));
  dnnl.run(run_inputs(c));
  const Tensor x = floats({2, 1, kInput}, {0.5, -0.25, 1.0, 0.75, -1.0, 0.125, 0.25, -0.5});
  const std::vector<Tensor> fast = dnnl.run({{"x", x}});
  EXPECT_NE(dnnl.stats().implementations[0], "");
  Executor loops(parse_graph(symbolic(false)));
  std::map<std::string, Tensor> inputs = {{"x", x}};
  add_weights(c, inputs);
  const std::vector<Tensor> slow = loops.run(inputs);
  ASSERT_EQ(fast[0].shape(), (std::vector<int64_t>{2, 2, 1, kHidden}));
  expect_same_outputs(fast, slow);
}

}  // namespace
}  // namespace cleave
