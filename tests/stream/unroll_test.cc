// Unrolled static loops: Loop, Scan, LSTM and GRU become per-step instructions and filters.
#include "passes/loop_unrolling.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/load.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "stream/executor.h"
#include "stream/from_graph.h"
#include "stream/schedule.h"
#include "test_models.h"

namespace cleave {
namespace {

Graph unrolled(const std::string& text, UnrollReport* report = nullptr) {
  Graph g = parse_graph(text);
  infer_shapes(g, "test");
  const UnrollReport r = unroll_static_loops(g, "test.onnx");
  if (report) *report = r;
  infer_shapes(g, "test");
  return g;
}

Tensor tensor_of(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = Tensor::allocate(DataType::kFloat, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

// The graph's outputs for one input `x`, by cleave's executor and by the converted stream
// (which must agree with each other to the bit: the same kernels run).
std::vector<std::vector<float>> run_both(const Graph& g, const Tensor& x) {
  Executor executor(g);
  const std::vector<Tensor> want = executor.run({{"x", x}});
  const StreamConversion c = graph_to_stream(g);
  verify_stream(c.root, "unrolled");
  schedule_stream(flatten_stream(c.root), "unrolled");
  const StreamRunResult r = run_stream({c.root, "unrolled"}, {x}, testing::on_workers(2, {}, true));
  EXPECT_EQ(r.outputs.size(), want.size());
  std::vector<std::vector<float>> out;
  for (std::size_t k = 0; k < want.size() && k < r.outputs.size(); ++k) {
    const auto a = want[k].values<float>();
    const auto b = r.outputs[k].values<float>();
    EXPECT_EQ(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()))
        << "output " << k;
    out.emplace_back(a.begin(), a.end());
  }
  return out;
}

constexpr const char* kLoop = R"(graph g (%x: f32[1,2]) {
  @m: i64[] = [3]
  %v, %s = "loop" Loop[body=graph body (%i: i64[], %c: bool[], %v_in: f32[1,2]) {
    @two: f32[] = [2]
    %w = Mul(%v_in, @two)
    %y = Relu(%w)
    return %c, %y, %w
  }](@m, _, %x)
  return %v, %s
})";

TEST(StreamUnroll, LoopWithConstantTripCountBecomesOneBodyPerIteration) {
  UnrollReport report;
  const Graph g = unrolled(kLoop, &report);
  EXPECT_EQ(report.loops, 1);
  EXPECT_EQ(report.steps, 3);
  const StreamConversion c = graph_to_stream(g);
  EXPECT_EQ(print_instructions(c.instructions),
            "var0 = placeholder()\n"
            "var1 = Mul(var0)\n"
            "var2 = Relu(var1)\n"
            "var3 = Mul(var2)\n"
            "var4 = Relu(var3)\n"
            "var5 = Mul(var4)\n"
            "var6 = Relu(var5)\n"
            "var7 = Unsqueeze(var1)\n"
            "var8 = Unsqueeze(var3)\n"
            "var9 = Unsqueeze(var5)\n"
            "var10 = Concat<0>(var7, var8, var9)\n"
            "var11 = Identity(var6)\n"
            "var12 = Identity(var10)\n"
            "return var11, var12\n");
}

TEST(StreamUnroll, UnrolledLoopStreamsTheLoopsValues) {
  const Graph g = unrolled(kLoop);
  // v = relu(2v) three times; the scan output stacks each iteration's 2v.
  const auto out = run_both(g, tensor_of({1, 2}, {1.5f, -1.0f}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<float>{12.0f, 0.0f}));
  EXPECT_EQ(out[1], (std::vector<float>{3.0f, -2.0f, 6.0f, 0.0f, 12.0f, 0.0f}));
  EXPECT_EQ(g.value(g.outputs()[1]).shape, Shape::of({3, 1, 2}));
}

TEST(StreamUnroll, LoopWithDynamicTripCountIsRefusedNamingTheNode) {
  Graph g = parse_graph(R"(graph g (%x: f32[1,2], %m: i64[]) {
  %v = "loop" Loop[body=graph body (%i: i64[], %c: bool[], %v_in: f32[1,2]) {
    %w = Relu(%v_in)
    return %c, %w
  }](%m, _, %x)
  return %v
})");
  EXPECT_THAT([&] { unroll_static_loops(g, "m.onnx"); },
              ::testing::ThrowsMessage<Error>(::testing::AllOf(
                  ::testing::HasSubstr("m.onnx"), ::testing::HasSubstr("node 'loop' (Loop)"),
                  ::testing::HasSubstr("trip count M is not a constant"))));
}

TEST(StreamUnroll, LoopWhoseBodyComputesTheConditionIsRefused) {
  Graph g = parse_graph(R"(graph g (%x: f32[1,2]) {
  @m: i64[] = [5]
  %v = "loop" Loop[body=graph body (%i: i64[], %c: bool[], %v_in: f32[1,2]) {
    @lim: i64[] = [2]
    %go = Less(%i, @lim)
    %w = Relu(%v_in)
    return %go, %w
  }](@m, _, %x)
  return %v
})");
  EXPECT_THAT([&] { unroll_static_loops(g, "m.onnx"); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::AllOf(::testing::HasSubstr("node 'loop' (Loop)"),
                                   ::testing::HasSubstr("body computes the loop condition"))));
}

TEST(StreamUnroll, ScanIsUnrolledOverItsStaticSequenceLength) {
  // A running sum over 3 rows of x, forward; the scan output stacks the partial sums.
  UnrollReport report;
  const Graph g = unrolled(R"(graph g (%x: f32[3,2]) {
  @zero: f32[2] = [0, 0]
  %sum, %partial = Scan[num_scan_inputs=1, body=graph body (%acc: f32[2], %row: f32[2]) {
    %next = Add(%acc, %row)
    %out = Identity(%next)
    return %next, %out
  }](@zero, %x)
  return %sum, %partial
})",
                           &report);
  EXPECT_EQ(report.steps, 3);
  const auto out = run_both(g, tensor_of({3, 2}, {1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<float>{9, 12}));
  EXPECT_EQ(out[1], (std::vector<float>{1, 2, 4, 6, 9, 12}));
}

TEST(StreamUnroll, ReverseScanReadsRowsFromTheEnd) {
  const Graph g = unrolled(R"(graph g (%x: f32[3,2]) {
  @zero: f32[2] = [0, 0]
  %sum, %partial = Scan[num_scan_inputs=1, scan_input_directions=[1], body=graph body (%acc: f32[2], %row: f32[2]) {
    %next = Add(%acc, %row)
    %out = Identity(%next)
    return %next, %out
  }](@zero, %x)
  return %sum, %partial
})");
  const auto out = run_both(g, tensor_of({3, 2}, {1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], (std::vector<float>{5, 6, 8, 10, 9, 12}));
}

// --- LSTM and GRU against a scalar reference of the ONNX equations ---

std::vector<float> pattern(std::size_t n, double seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(0.6 * std::sin(1.3 * static_cast<double>(i) + seed));
  }
  return v;
}

std::string values_text(const std::vector<float>& v) {
  std::vector<std::string> parts;
  for (float f : v) parts.push_back(fmt::format("{}", f));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

struct RnnCase {
  std::string op;  // "LSTM" or "GRU"
  int64_t seq = 3, batch = 2, in = 3, hidden = 2;
  std::string direction = "forward";
  int64_t linear_before_reset = 0;
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "LSTM" ? 4 : 3; }
  std::vector<float> w() const { return pattern(dirs() * gates() * hidden * in, 0.1); }
  std::vector<float> r() const { return pattern(dirs() * gates() * hidden * hidden, 0.7); }
  std::vector<float> b() const { return pattern(dirs() * 2 * gates() * hidden, 1.9); }
  std::vector<float> x() const { return pattern(seq * batch * in, 2.3); }

  std::string text() const {
    const int64_t d = dirs(), g = gates();
    const std::string extra =
        op == "GRU" ? fmt::format(", linear_before_reset={}", linear_before_reset) : "";
    const std::string outs = op == "LSTM" ? "%y, %yh, %yc" : "%y, %yh";
    return fmt::format(
        "graph g (%x: f32[{},{},{}]) {{\n"
        "  @w: f32[{},{},{}] = {}\n"
        "  @r: f32[{},{},{}] = {}\n"
        "  @b: f32[{},{}] = {}\n"
        "  {} = \"rnn\" {}[hidden_size={}, direction=\"{}\"{}](%x, @w, @r, @b)\n"
        "  return {}\n}}",
        seq, batch, in, d, g * hidden, in, values_text(w()), d, g * hidden, hidden,
        values_text(r()), d, 2 * g * hidden, values_text(b()), outs, op, hidden, direction, extra,
        outs);
  }

  // Y [seq, dirs, batch, hidden], then Y_h (and Y_c) [dirs, batch, hidden], as ONNX defines.
  std::vector<std::vector<float>> reference() const {
    const int64_t H = hidden, G = gates(), D = dirs();
    const std::vector<float> W = w(), R = r(), B = b(), X = x();
    const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    std::vector<float> y(seq * D * batch * H), yh(D * batch * H), yc(D * batch * H);
    for (int64_t d = 0; d < D; ++d) {
      const bool rev = direction == "reverse" || d == 1;
      std::vector<double> h(batch * H, 0.0), c(batch * H, 0.0);
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t t = rev ? seq - 1 - s : s;
        std::vector<double> nh(batch * H), nc(batch * H);
        for (int64_t n = 0; n < batch; ++n) {
          // xw[g][j] = x W_g^T + Wb_g, hr[g][j] = h R_g^T + Rb_g
          std::vector<std::vector<double>> xw(G, std::vector<double>(H)), hr = xw;
          for (int64_t gi = 0; gi < G; ++gi) {
            for (int64_t j = 0; j < H; ++j) {
              const int64_t row = d * G * H + gi * H + j;
              double a = B[d * 2 * G * H + gi * H + j];
              double e = B[d * 2 * G * H + G * H + gi * H + j];
              for (int64_t k = 0; k < in; ++k) a += X[(t * batch + n) * in + k] * W[row * in + k];
              for (int64_t k = 0; k < H; ++k) e += h[n * H + k] * R[row * H + k];
              xw[gi][j] = a;
              hr[gi][j] = e;
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            if (op == "LSTM") {  // i, o, f, c
              const double i = sig(xw[0][j] + hr[0][j]), o = sig(xw[1][j] + hr[1][j]);
              const double f = sig(xw[2][j] + hr[2][j]), cc = std::tanh(xw[3][j] + hr[3][j]);
              nc[n * H + j] = f * c[n * H + j] + i * cc;
              nh[n * H + j] = o * std::tanh(nc[n * H + j]);
            } else {  // z, r, h
              const double z = sig(xw[0][j] + hr[0][j]), rr = sig(xw[1][j] + hr[1][j]);
              double hh;
              if (linear_before_reset != 0) {
                hh = std::tanh(xw[2][j] + rr * hr[2][j]);
              } else {
                // (r . h) R_h^T: each column k of h scaled by its own reset gate.
                double e = B[d * 2 * G * H + G * H + 2 * H + j];
                for (int64_t k = 0; k < H; ++k) {
                  const double rk = sig(xw[1][k] + hr[1][k]);
                  e += rk * h[n * H + k] * R[(d * G * H + 2 * H + j) * H + k];
                }
                hh = std::tanh(xw[2][j] + e);
              }
              nh[n * H + j] = (1 - z) * hh + z * h[n * H + j];
            }
          }
        }
        h = nh;
        c = nc;
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t j = 0; j < H; ++j) {
            y[((t * D + d) * batch + n) * H + j] = static_cast<float>(h[n * H + j]);
          }
        }
      }
      for (int64_t k = 0; k < batch * H; ++k) {
        yh[d * batch * H + k] = static_cast<float>(h[k]);
        yc[d * batch * H + k] = static_cast<float>(c[k]);
      }
    }
    if (op == "LSTM") return {y, yh, yc};
    return {y, yh};
  }
};

void expect_near(const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size()) << "output " << k;
    for (std::size_t i = 0; i < got[k].size(); ++i) {
      EXPECT_NEAR(got[k][i], want[k][i], 1e-5) << "output " << k << " element " << i;
    }
  }
}

void check_rnn(const RnnCase& rc) {
  UnrollReport report;
  const Graph g = unrolled(rc.text(), &report);
  EXPECT_EQ(report.rnns, 1);
  EXPECT_EQ(report.steps, rc.seq * rc.dirs());
  expect_near(run_both(g, tensor_of({rc.seq, rc.batch, rc.in}, rc.x())), rc.reference());
}

TEST(StreamUnroll, LstmMatchesTheOnnxEquations) {
  check_rnn({"LSTM"});
}

TEST(StreamUnroll, BidirectionalLstmMatchesTheOnnxEquations) {
  RnnCase rc{"LSTM"};
  rc.direction = "bidirectional";
  check_rnn(rc);
}

TEST(StreamUnroll, GruMatchesTheOnnxEquations) {
  check_rnn({"GRU"});
}

TEST(StreamUnroll, GruLinearBeforeResetReverseMatchesTheOnnxEquations) {
  RnnCase rc{"GRU"};
  rc.linear_before_reset = 1;
  rc.direction = "reverse";
  check_rnn(rc);
}

TEST(StreamUnroll, LstmStepIsConcatGemmPerGateAndCellUpdate) {
  // One step, one hidden unit: the per-step instructions in the thesis's grammar.
  RnnCase rc{"LSTM"};
  rc.seq = 1;
  rc.batch = 1;
  rc.in = 1;
  rc.hidden = 1;
  const StreamConversion c = graph_to_stream(unrolled(rc.text()));
  EXPECT_EQ(print_instructions(c.instructions),
            "var0 = placeholder()\n"
            "var1 = Gather<0>(var0)\n"
            "var2 = Concat<1>(var1)\n"
            "var3 = Gemm(var2)\n"
            "var4 = Gemm(var2)\n"
            "var5 = Gemm(var2)\n"
            "var6 = Gemm(var2)\n"
            "var7 = Sigmoid(var3)\n"
            "var8 = Sigmoid(var5)\n"
            "var9 = Tanh(var6)\n"
            "var10 = Mul(var8)\n"
            "var11 = Mul(var7, var9)\n"
            "var12 = Add(var10, var11)\n"
            "var13 = Sigmoid(var4)\n"
            "var14 = Tanh(var12)\n"
            "var15 = Mul(var13, var14)\n"
            "var16 = Unsqueeze(var15)\n"
            "var17 = Unsqueeze(var15)\n"
            "var18 = Unsqueeze(var12)\n"
            "var19 = Identity(var16)\n"
            "var20 = Identity(var17)\n"
            "var21 = Identity(var18)\n"
            "return var19, var20, var21\n");
}

TEST(StreamUnroll, UnrolledLstmByReferenceKeepsEveryStepOnce) {
  // The recurrence is not series-parallel: replicated, each step repeats the ones before it.
  const RnnCase rc{"LSTM"};
  const Graph g = unrolled(rc.text());
  const StreamConversion replicated = graph_to_stream(g);
  const StreamConversion c = graph_to_stream(g, "model", StreamConversionOptions{true});
  EXPECT_GT(replicated.replicated_filters, 0);
  EXPECT_EQ(c.replicated_filters, 0);
  EXPECT_EQ(c.filters, c.live_instructions);
  EXPECT_GT(c.reference_readers, 0);
  const Tensor x = tensor_of({rc.seq, rc.batch, rc.in}, rc.x());
  const StreamRunResult r =
      run_stream({c.root, "lstm"}, {x, x, x}, testing::on_workers(2, {}, true));
  const std::vector<std::vector<float>> want = rc.reference();
  ASSERT_EQ(r.outputs.size(), 3 * want.size());
  for (std::size_t k = 0; k < r.outputs.size(); ++k) {
    const auto got = r.outputs[k].values<float>();
    const std::vector<float>& expected = want[k % want.size()];
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5);
  }
}

TEST(StreamUnroll, RnnWithClipIsRefusedNamingTheNode) {
  Graph g = parse_graph(RnnCase{"LSTM"}.text());
  for (NodeId id : g.node_ids()) g.node(id).set_attribute("clip", Attribute::of_float(1.0f));
  EXPECT_THAT([&] { unroll_static_loops(g, "m.onnx"); },
              ::testing::ThrowsMessage<Error>(::testing::AllOf(
                  ::testing::HasSubstr("m.onnx"), ::testing::HasSubstr("node 'rnn' (LSTM)"),
                  ::testing::HasSubstr("clip"))));
}

}  // namespace
}  // namespace cleave
