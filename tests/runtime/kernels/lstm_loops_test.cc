// LSTM on cleave's loops (one product of the input, the recurrence split among a team of 2)
// against the plain loops in double, every direction and layout, with and without initial
// states; and the sizes, teams and inputs that keep to oneDNN's primitive.
#include "runtime/kernels/nn/lstm_loops.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/wait_policy.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;

// Hidden 120: 8 vectors of 16 units, the last half empty; 40 steps of batch 3 and input 32 make
// X · Wᵀ 3.7 M FLOPs, a team of 2 (intra_op_team).
constexpr int64_t kSteps = 40, kBatch = 3, kInput = 32, kHidden = 120;

struct Case {
  std::string direction = "forward";
  bool initial_states = false;
  bool batch_major = false;
};

int64_t directions(const Case& c) {
  return c.direction == "bidirectional" ? 2 : 1;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ",") + std::to_string(d);
  return "f32[" + text + "]";
}

std::size_t count(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// Multiples of 1/64 (written exactly in the text form), small enough that the gates do not all
// saturate over 40 steps.
std::vector<double> weight_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> step(-8, 8);
  std::vector<double> values(n);
  for (double& v : values) v = step(rng) / 64.0;
  return values;
}

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

struct Weight {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

std::vector<Weight> weights_of(const Case& c) {
  const int64_t d = directions(c);
  std::vector<Weight> w = {{"w", {d, 4 * kHidden, kInput}, {}},
                           {"r", {d, 4 * kHidden, kHidden}, {}},
                           {"b", {d, 8 * kHidden}, {}}};
  unsigned seed = 3;
  for (Weight& weight : w) weight.values = weight_values(count(weight.shape), seed++);
  return w;
}

std::vector<int64_t> x_shape(const Case& c) {
  return c.batch_major ? std::vector<int64_t>{kBatch, kSteps, kInput}
                       : std::vector<int64_t>{kSteps, kBatch, kInput};
}
std::vector<int64_t> state_shape(const Case& c) {
  return c.batch_major ? std::vector<int64_t>{kBatch, directions(c), kHidden}
                       : std::vector<int64_t>{directions(c), kBatch, kHidden};
}

// The node with its weights initializers (what the fast kernels take) or graph inputs (what
// keeps it on the plain loops).
std::string graph_text(const Case& c, bool constant_weights, const std::string& extra = "") {
  std::string inputs = "%x: " + dims_text(x_shape(c));
  if (c.initial_states) {
    inputs += ", %h0: " + dims_text(state_shape(c)) + ", %c0: " + dims_text(state_shape(c));
  }
  std::string body;
  for (const Weight& w : weights_of(c)) {
    if (constant_weights) {
      body += "  @" + w.name + ": " + dims_text(w.shape) + " = " + listed(w.values) + "\n";
    } else {
      inputs += ", %" + w.name + ": " + dims_text(w.shape);
    }
  }
  const std::string s = constant_weights ? "@" : "%";
  const std::string states = c.initial_states ? "%h0, %c0" : "_, _";
  body += "  %y, %y_h, %y_c = LSTM[hidden_size=" + std::to_string(kHidden) + ", direction=\"" +
          c.direction + "\"" + (c.batch_major ? ", layout=1" : "") + extra + "](%x, " + s + "w, " +
          s + "r, " + s + "b, _, " + states + ")\n";
  return "graph g [ai.onnx=14] (" + inputs + ") {\n" + body + "  return %y, %y_h, %y_c\n}\n";
}

std::map<std::string, Tensor> run_inputs(const Case& c) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  auto random = [&](const std::vector<int64_t>& shape) {
    std::vector<double> values(count(shape));
    for (double& v : values) v = value(rng);
    return floats(shape, values);
  };
  std::map<std::string, Tensor> inputs;
  inputs.emplace("x", random(x_shape(c)));
  if (c.initial_states) {
    inputs.emplace("h0", random(state_shape(c)));
    inputs.emplace("c0", random(state_shape(c)));
  }
  return inputs;
}

ExecutorOptions threads(int count) {
  ExecutorOptions options;
  options.threads = count;
  return options;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

std::vector<Tensor> loops_result(const Case& c) {
  Executor loops(parse_graph(graph_text(c, false)));
  std::map<std::string, Tensor> inputs = run_inputs(c);
  for (const Weight& w : weights_of(c)) inputs.emplace(w.name, floats(w.shape, w.values));
  return loops.run(inputs);
}

class LstmLoops : public testing::TestWithParam<Case> {};

TEST_P(LstmLoops, MatchTheLoopsInDoubleOnATeamOfTwo) {
  if (spin_count_in_effect() == 0) GTEST_SKIP() << "OpenMP threads that sleep keep to oneDNN";
  if (vector_isa() == VectorIsa::kBaseline) GTEST_SKIP() << "the loops run on AVX2 and AVX-512";
  const Case& c = GetParam();
  Executor fast(parse_graph(graph_text(c, true)), threads(2));
  const std::vector<Tensor> got = fast.run(run_inputs(c));
  EXPECT_TRUE(starts_with(fast.stats().implementations[0], "cleave:"))
      << fast.stats().implementations[0];
  const std::vector<Tensor> want = loops_result(c);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    expect_values(got[i], want[i].to_double_vector(), 2e-6);
  }
  // A second run starts from the initial states again.
  const std::vector<Tensor> again = fast.run(run_inputs(c));
  for (std::size_t i = 0; i < got.size(); ++i) expect_values(again[i], got[i].to_double_vector());
}

std::vector<Case> every_form() {
  std::vector<Case> cases;
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    for (bool initial_states : {false, true}) {
      for (bool batch_major : {false, true})
        cases.push_back({direction, initial_states, batch_major});
    }
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return c.direction + (c.initial_states ? "_Initial" : "_Zero") +
         (c.batch_major ? "_BatchMajor" : "");
}

INSTANTIATE_TEST_SUITE_P(EveryForm, LstmLoops, testing::ValuesIn(every_form()), case_name);

// A team of 4 whose recurrence has work for 2 (8 blocks): the region takes all 4, two of them
// only meeting at the barriers, and every block is still computed.
TEST(LstmLoopsTeam, ATeamOfFourWithWorkForTwoComputesEveryUnit) {
  if (spin_count_in_effect() == 0) GTEST_SKIP() << "OpenMP threads that sleep keep to oneDNN";
  if (vector_isa() == VectorIsa::kBaseline) GTEST_SKIP() << "the loops run on AVX2 and AVX-512";
  const Case c{"bidirectional", true, false};
  Executor fast(parse_graph(graph_text(c, true)), threads(4));
  const std::vector<Tensor> got = fast.run(run_inputs(c));
  ASSERT_TRUE(starts_with(fast.stats().implementations[0], "cleave:"))
      << fast.stats().implementations[0];
  const std::vector<Tensor> want = loops_result(c);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    expect_values(got[i], want[i].to_double_vector(), 2e-6);
}

TEST(LstmLoopsChoice, OneThreadKeepsToOneDnn) {
  Executor one(parse_graph(graph_text(Case{}, true)), threads(1));
  one.run(run_inputs(Case{}));
  EXPECT_FALSE(starts_with(one.stats().implementations[0], "cleave:"));
  EXPECT_NE(one.stats().implementations[0], "");
}

// On AVX2 (CI's ONEDNN_MAX_CPU_ISA=AVX2 pass) and AVX-512 a team of two takes the loops, each
// ISA its own (--stats names it).
TEST(LstmLoopsChoice, ATeamOfTwoTakesTheLoopsOfItsIsa) {
  if (spin_count_in_effect() == 0) GTEST_SKIP() << "OpenMP threads that sleep keep to oneDNN";
  if (vector_isa() == VectorIsa::kBaseline) GTEST_SKIP() << "the loops run on AVX2 and AVX-512";
  Executor two(parse_graph(graph_text(Case{}, true)), threads(2));
  two.run(run_inputs(Case{}));
  EXPECT_EQ(two.stats().implementations[0], "cleave:" + vector_isa_name(vector_isa()));
}

TEST(LstmLoopsChoice, PeepholesKeepToOneDnn) {
  std::string text = graph_text(Case{}, true);
  // A zero peephole input: oneDNN's primitive takes it, the loops do not.
  const std::string zeros = listed(std::vector<double>(3 * kHidden, 0.0));
  text.replace(text.find("  %y, %y_h"), 0,
               "  @p: " + dims_text({1, 3 * kHidden}) + " = " + zeros + "\n");
  text.replace(text.find("_, _)"), 5, "_, _, @p)");
  Executor executor(parse_graph(text), threads(2));
  executor.run(run_inputs(Case{}));
  EXPECT_FALSE(starts_with(executor.stats().implementations[0], "cleave:"));
  EXPECT_NE(executor.stats().implementations[0], "");
}

TEST(LstmLoopsChoice, ClipKeepsToThePlainLoops) {
  Executor executor(parse_graph(graph_text(Case{}, true, ", clip=100.0")), threads(2));
  executor.run(run_inputs(Case{}));
  EXPECT_EQ(executor.stats().implementations[0], "");
}

TEST(LstmLoopsRule, TheRecurrenceSplitsByBlocksOfUnits) {
  EXPECT_EQ(recurrence_threads(2, 8), 2);   // Hidden 128: 4 blocks each.
  EXPECT_EQ(recurrence_threads(2, 7), 1);   // Hidden 112: too little for two.
  EXPECT_EQ(recurrence_threads(1, 64), 1);  // One thread asked.
  EXPECT_EQ(recurrence_threads(16, 8), 2);  // No more than the blocks allow.
  EXPECT_EQ(recurrence_threads(4, 64), 4);
  EXPECT_EQ(recurrence_threads(0, 64), 1);
}

TEST(LstmLoopsRule, TheFirstActiveMembersSplitTheBlocksAndTheOthersIdle) {
  using Range = std::pair<int64_t, int64_t>;
  EXPECT_EQ(recurrence_blocks(0, 16, 2, 8), (Range{0, 4}));
  EXPECT_EQ(recurrence_blocks(1, 16, 2, 8), (Range{4, 8}));
  EXPECT_EQ(recurrence_blocks(2, 16, 2, 8), (Range{8, 8}));
  EXPECT_EQ(recurrence_blocks(15, 16, 2, 8), (Range{8, 8}));
  EXPECT_EQ(recurrence_blocks(2, 3, 3, 10), (Range{6, 10}));
  // A region smaller than asked (OpenMP gave fewer threads): its members take every block.
  EXPECT_EQ(recurrence_blocks(0, 1, 4, 8), (Range{0, 8}));
}

TEST(LstmLoopsRule, FitsSmallBatchesOnASpinningTeam) {
  RecurrentDims dims;
  dims.cell = RecurrentCell::kLstm;
  dims.steps = 50;
  dims.batch = 2;
  dims.input = 64;
  dims.hidden = 128;
  EXPECT_TRUE(lstm_loops_fit(dims, false, false, 2, true));
  EXPECT_FALSE(lstm_loops_fit(dims, false, false, 1, true));   // One thread: oneDNN.
  EXPECT_FALSE(lstm_loops_fit(dims, false, false, 2, false));  // A sleeping team.
  EXPECT_FALSE(lstm_loops_fit(dims, true, false, 2, true));    // Peepholes.
  EXPECT_FALSE(lstm_loops_fit(dims, false, true, 2, true));    // Sequence lengths.
  RecurrentDims wide = dims;
  wide.batch = kLstmLoopsMaxBatch + 1;
  EXPECT_FALSE(lstm_loops_fit(wide, false, false, 2, true));
  RecurrentDims narrow = dims;
  narrow.hidden = 64;
  EXPECT_FALSE(lstm_loops_fit(narrow, false, false, 2, true));
  RecurrentDims gru = dims;
  gru.cell = RecurrentCell::kGru;
  EXPECT_FALSE(lstm_loops_fit(gru, false, false, 2, true));
}

}  // namespace
}  // namespace cleave
