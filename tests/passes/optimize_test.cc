// The optimization pipeline: its log, and that an optimized graph computes what the original did.
#include "passes/optimize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/text.h"
#include "ir/verify.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

// Conv→BN→Relu→Identity→Conv→BN→Clip→(Shape→Gather→Unsqueeze→Concat)→Reshape, a dangling
// branch, and Dropout: every pass has work. Initializers without data get random values.
const char* kModel = R"(graph main [ai.onnx=13] (%x: f32[1,3,8,8]) {
  @w1: f32[4,3,3,3]
  @b1: f32[4]
  @scale1: f32[4]
  @shift1: f32[4]
  @mean1: f32[4]
  @var1: f32[4]
  @w2: f32[4,4,1,1]
  @scale2: f32[4]
  @shift2: f32[4]
  @mean2: f32[4]
  @var2: f32[4]
  @low: f32[] = [0.0]
  @high: f32[] = [0.5]
  @zero: i64[] = [0]
  @axes: i64[1] = [0]
  @minus_one: i64[1] = [-1]
  %c1: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %n1: f32[1,4,8,8] = BatchNormalization[epsilon=0.001](%c1, @scale1, @shift1, @mean1, @var1)
  %r1: f32[1,4,8,8] = Relu(%n1)
  %i1: f32[1,4,8,8] = Identity(%r1)
  %c2: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%i1, @w2)
  %n2: f32[1,4,8,8] = BatchNormalization(%c2, @scale2, @shift2, @mean2, @var2)
  %k2: f32[1,4,8,8] = Clip(%n2, @low, @high)
  %d2: f32[1,4,8,8] = Dropout(%k2)
  %s = Shape(%d2)
  %g = Gather[axis=0](%s, @zero)
  %u = Unsqueeze(%g, @axes)
  %shape = Concat[axis=0](%u, @minus_one)
  %flat = Reshape(%d2, %shape)
  %unused = Neg(%x)
  return %flat
}
)";

Graph random_model(const char* text = kModel) {
  Graph graph = parse_graph(text);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    if (data.has_data()) continue;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()));
    bool positive = graph.value(id).name.starts_with("var");
    for (float& v : values) v = positive ? 0.5f + std::abs(uniform(random)) : uniform(random);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  return graph;
}

std::vector<float> run(const Graph& graph, std::vector<int64_t> input_shape = {1, 3, 8, 8},
                       std::vector<int64_t> output_shape = {1, 256}) {
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, input_shape);
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  Executor executor(graph);
  std::vector<Tensor> outputs = executor.run({{"x", x}});
  auto values = outputs.at(0).values<float>();
  EXPECT_EQ(outputs.at(0).shape(), output_shape);
  return {values.begin(), values.end()};
}

// The pipeline as `cleave run` uses it: with the runtime-only fusions, each step verified.
PassResult optimize_for_runtime(Graph& graph) {
  OptimizeOptions options;
  options.verify_each_step = true;
  options.fuse_activations = true;
  options.fold_channel_scales = true;
  return optimize_graph(graph, options);
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  int nonzero = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-6) << "at " << i;
    nonzero += expected[i] != 0.0f;
  }
  EXPECT_GT(nonzero, 0) << "a comparison of zeros would prove nothing";
}

TEST(Optimize, LogsWhatEachStepChanged) {
  Graph graph = random_model();
  std::vector<std::string> log;
  OptimizeOptions options;
  options.verify_each_step = true;
  options.log = [&](const std::string& line) { log.push_back(line); };
  PassResult result = optimize_graph(graph, options);
  EXPECT_EQ(log, (std::vector<std::string>{
                     "QDQ fusion: no change",
                     "constant folding: 1 Shape nodes folded from static shapes, 3 nodes folded, 1 "
                     "dead nodes left unfolded",
                     "sequence lowering: no change",
                     "dead-code elimination: 1 nodes removed, 6 initializers removed",
                     "Identity/Dropout removal: 1 Identity nodes removed, 1 Dropout nodes removed",
                     "common-subexpression elimination: no change",
                     "Einsum lowering: no change",
                     "Pad folding: no change",
                     "dead-tap removal: no change",
                     "Conv+BatchNormalization fusion: 2 BatchNormalization nodes fused into Conv",
                     "dead-code elimination: 8 initializers removed",
                 }));
  EXPECT_EQ(result.steps.size(), 11u);
  EXPECT_EQ(result.count("nodes folded"), 3);
}

TEST(Optimize, LeavesTheExpectedGraph) {
  Graph graph = random_model();
  optimize_graph(graph);
  EXPECT_EQ(print_graph(graph, 0), R"(graph main [ai.onnx=13] (%x: f32[1,3,8,8]) {
  @w1: f32[4,3,3,3]
  @b1: f32[4]
  @w2: f32[4,4,1,1]
  @low: f32[]
  @high: f32[]
  @shape: i64[2]
  @w2_fused_bias: f32[4]
  %n1: f32[1,4,8,8] = "c1" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %r1: f32[1,4,8,8] = Relu(%n1)
  %n2: f32[1,4,8,8] = "c2" Conv[kernel_shape=[1,1]](%r1, @w2, @w2_fused_bias)
  %k2: f32[1,4,8,8] = Clip(%n2, @low, @high)
  %flat = Reshape(%k2, @shape)
  return %flat
}
)");
}

TEST(Optimize, FusesActivationsOnlyWhenAsked) {
  Graph graph = random_model();
  OptimizeOptions options;
  options.fuse_activations = true;
  PassResult result = optimize_graph(graph, options);
  EXPECT_EQ(result.count("Relu nodes fused into Conv"), 1);
  EXPECT_EQ(result.count("Clip nodes fused into Conv"), 1);
  EXPECT_EQ(graph.node_count(), 3u);  // Conv, Conv, Reshape.
}

TEST(Optimize, DoesNothingButCleanUpWhenFoldingAndFusionAreOff) {
  Graph graph = random_model();
  OptimizeOptions options;
  options.fold_constants = false;
  options.fuse_batchnorm = false;
  PassResult result = optimize_graph(graph, options);
  EXPECT_EQ(result.count("nodes folded"), 0);
  EXPECT_EQ(result.count("BatchNormalization nodes fused into Conv"), 0);
  EXPECT_TRUE(graph.find_node("s").has_value());
  EXPECT_TRUE(graph.find_node("n1").has_value());
}

TEST(Optimize, OptimizedGraphComputesTheSameOutputs) {
  Graph original = random_model();
  std::vector<float> expected = run(original);
  Graph optimized = random_model();
  OptimizeOptions options;
  options.verify_each_step = true;
  optimize_graph(optimized, options);
  expect_close(run(optimized), expected);
}

TEST(Optimize, GraphWithFusedActivationsComputesTheSameOutputs) {
  Graph original = random_model();
  std::vector<float> expected = run(original);
  Graph optimized = random_model();
  optimize_for_runtime(optimized);
  expect_close(run(optimized), expected);
}

// A residual block with the Add before the Relu, and Inception's padded average pool.
const char* kResidualModel = R"(graph main [ai.onnx=13] (%x: f32[1,4,8,8]) {
  @w1: f32[4,4,3,3]
  @w2: f32[4,4,1,1]
  @b2: f32[4]
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %c1: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1: f32[1,4,8,8] = Relu(%c1)
  %c2: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%r1, @w2, @b2)
  %s: f32[1,4,8,8] = Add(%x, %c2)
  %r2: f32[1,4,8,8] = Relu(%s)
  %p: f32[1,4,10,10] = Pad[mode="constant"](%r2, @pads)
  %a: f32[1,4,8,8] = AveragePool[kernel_shape=[3,3]](%p)
  return %a
}
)";

TEST(Optimize, FusedResidualAddAndFoldedPadComputeTheSameOutputs) {
  Graph original = random_model(kResidualModel);
  std::vector<float> expected = run(original, {1, 4, 8, 8}, {1, 4, 8, 8});
  Graph optimized = random_model(kResidualModel);
  PassResult result = optimize_for_runtime(optimized);
  EXPECT_EQ(result.count("Add nodes fused into Conv as a sum"), 1);
  EXPECT_EQ(result.count("Relu nodes fused into Conv"), 2);
  EXPECT_EQ(result.count("Pads folded into AveragePool"), 1);
  EXPECT_EQ(optimized.node_count(), 3u);  // Conv, Conv, AveragePool.
  expect_close(run(optimized, {1, 4, 8, 8}, {1, 4, 8, 8}), expected);
}

// A transformer MLP as PyTorch exports it below opset 17: LayerNorm spelled out, then
// Linear → GELU (Erf) → Linear.
const char* kTransformerMlp = R"(graph main [ai.onnx=13] (%x: f32[1,3,8,8]) {
  @two: f32[] = [2.0]
  @eps: f32[] = [1e-05]
  @gamma: f32[8]
  @beta: f32[8]
  @w1: f32[8,16]
  @b1: f32[16]
  @w2: f32[16,4]
  @b2: f32[4]
  @root2: f32[] = [1.4142135]
  @one: f32[] = [1.0]
  @half: f32[] = [0.5]
  %m: f32[1,3,8,1] = ReduceMean[axes=[-1]](%x)
  %d: f32[1,3,8,8] = Sub(%x, %m)
  %s: f32[1,3,8,8] = Pow(%d, @two)
  %v: f32[1,3,8,1] = ReduceMean[axes=[-1]](%s)
  %e: f32[1,3,8,1] = Add(%v, @eps)
  %r: f32[1,3,8,1] = Sqrt(%e)
  %n: f32[1,3,8,8] = Div(%d, %r)
  %g: f32[1,3,8,8] = Mul(%n, @gamma)
  %ln: f32[1,3,8,8] = Add(%g, @beta)
  %p1: f32[1,3,8,16] = MatMul(%ln, @w1)
  %l1: f32[1,3,8,16] = Add(@b1, %p1)
  %q: f32[1,3,8,16] = Div(%l1, @root2)
  %f: f32[1,3,8,16] = Erf(%q)
  %a: f32[1,3,8,16] = Add(%f, @one)
  %t: f32[1,3,8,16] = Mul(%l1, %a)
  %h: f32[1,3,8,16] = Mul(%t, @half)
  %p2: f32[1,3,8,4] = MatMul(%h, @w2)
  %y: f32[1,3,8,4] = Add(%p2, @b2)
  return %y
}
)";

TEST(Optimize, FusedLayerNormAndMatMulEpiloguesComputeTheSameOutputs) {
  Graph original = random_model(kTransformerMlp);
  std::vector<float> expected = run(original, {1, 3, 8, 8}, {1, 3, 8, 4});
  Graph optimized = random_model(kTransformerMlp);
  PassResult result = optimize_for_runtime(optimized);
  EXPECT_EQ(result.count("layer normalizations fused"), 1);
  EXPECT_EQ(result.count("bias Adds fused into MatMul"), 2);
  EXPECT_EQ(result.count("GELUs fused into MatMul"), 1);
  EXPECT_EQ(optimized.node_count(), 3u);  // LayerNormalization, MatMul, MatMul.
  expect_close(run(optimized, {1, 3, 8, 8}, {1, 3, 8, 4}), expected);
}

// EfficientNet's squeeze-and-excitation block: SiLU Conv, pooled scales, and the projection
// Conv (with a BatchNormalization to fuse first) reading the scaled data.
const char* kSqueezeExcitation = R"(graph main [ai.onnx=13] (%x: f32[1,4,8,8]) {
  @w1: f32[4,4,1,1]
  @reduce: f32[2,4,1,1]
  @reduce_bias: f32[2]
  @expand: f32[4,2,1,1]
  @expand_bias: f32[4]
  @w2: f32[3,4,1,1]
  @scale2: f32[3]
  @shift2: f32[3]
  @mean2: f32[3]
  @var2: f32[3]
  %c1: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%x, @w1)
  %g1: f32[1,4,8,8] = Sigmoid(%c1)
  %a1: f32[1,4,8,8] = Mul(%c1, %g1)
  %p: f32[1,4,1,1] = GlobalAveragePool(%a1)
  %r: f32[1,2,1,1] = Conv[kernel_shape=[1,1]](%p, @reduce, @reduce_bias)
  %rg: f32[1,2,1,1] = Sigmoid(%r)
  %ra: f32[1,2,1,1] = Mul(%r, %rg)
  %e: f32[1,4,1,1] = Conv[kernel_shape=[1,1]](%ra, @expand, @expand_bias)
  %es: f32[1,4,1,1] = Sigmoid(%e)
  %m: f32[1,4,8,8] = Mul(%a1, %es)
  %c2: f32[1,3,8,8] = Conv[kernel_shape=[1,1]](%m, @w2)
  %n2: f32[1,3,8,8] = BatchNormalization(%c2, @scale2, @shift2, @mean2, @var2)
  return %n2
}
)";

TEST(Optimize, SqueezeAndExcitationScaleFoldedIntoFusedWeightsComputesTheSameOutputs) {
  Graph original = random_model(kSqueezeExcitation);
  std::vector<float> expected = run(original, {1, 4, 8, 8}, {1, 3, 8, 8});
  Graph optimized = random_model(kSqueezeExcitation);
  PassResult result = optimize_for_runtime(optimized);
  EXPECT_EQ(result.count("BatchNormalization nodes fused into Conv"), 1);
  EXPECT_EQ(result.count("channel scales folded into Conv weights"), 1);
  // The Mul now scales the batch-norm-fused weights, not the data.
  const Node& scale = optimized.node(*optimized.find_node("m"));
  EXPECT_EQ(optimized.value(scale.inputs[0]).name, "w2");
  expect_close(run(optimized, {1, 4, 8, 8}, {1, 3, 8, 8}), expected);
}

// Passes by name, in the order asked: Identity removal only, then dead code, with the text
// form seen after each step.
TEST(RunPasses, RunsTheNamedPassesInOrderAndShowsTheGraphAfterEach) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2]) {
  %i: f32[2] = Identity(%x)
  %r: f32[2] = Relu(%i)
  %dead: f32[2] = Neg(%x)
  return %r
}
)");
  std::vector<std::string> seen;
  PassResult result = run_passes(graph, {"remove-identities", "dead-code"}, {},
                                 [&](const PassResult& step, const Graph& after) {
                                   seen.push_back(step.pass + "\n" + print_graph(after));
                                 });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(result.steps[0].pass, "Identity/Dropout removal");
  EXPECT_EQ(result.steps[1].pass, "dead-code elimination");
  EXPECT_NE(seen[0].find("Neg"), std::string::npos);
  EXPECT_EQ(seen[0].find("Identity("), std::string::npos);
  EXPECT_EQ(seen[1].find("Neg"), std::string::npos);
}

TEST(RunPasses, RefusesAnUnknownPassBeforeRunningAny) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2]) {
  %i: f32[2] = Identity(%x)
  return %i
}
)");
  try {
    run_passes(graph, {"remove-identities", "fold-everything"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'fold-everything'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fuse-batchnorm"), std::string::npos);
  }
  EXPECT_EQ(graph.node_count(), 1u);  // Identity removal did not run
}

}  // namespace
}  // namespace cleave
