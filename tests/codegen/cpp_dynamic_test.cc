// `cleave codegen --lang cpp` of models with run-time steps (sub-graphs, shapes the run decides):
// the generated program builds and computes `cleave run`'s bits.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CppDynamic : public CodegenFixture {
 protected:
  // Writes `text` as m.onnx, generates gen/ (sequential plan, blocked layouts) and builds it.
  void generate_and_build(const std::string& text) {
    write_model(text, path("m.onnx"));
    CommandOutput generated = cleave("codegen m.onnx --lang cpp --layouts blocked -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    CommandOutput build = build_generated();
    ASSERT_EQ(build.exit_code, 0) << build.text;
  }
  // Runs the generated program (three runs, so that later runs reuse what the first
  // prepared) and `cleave run` on `input_options`; expects every output bit for bit equal.
  void expect_same_bits(const std::string& input_options, const std::vector<std::string>& outputs,
                        const std::string& tag) {
    CommandOutput run =
        shell("gen/build/model_run " + input_options + " --repeat 3 --output-dir out_" + tag);
    ASSERT_EQ(run.exit_code, 0) << run.text;
    CommandOutput reference = cleave("run m.onnx --plan gen/plan.json --layouts blocked " +
                                     input_options + " --output-dir ref_" + tag);
    ASSERT_EQ(reference.exit_code, 0) << reference.text;
    for (const std::string& name : outputs) {
      const Tensor expected = read_npy(path("ref_" + tag + "/" + name + ".npy"));
      const Tensor actual = read_npy(path("out_" + tag + "/" + name + ".npy"));
      EXPECT_TRUE(same_bits(actual, expected))
          << tag << " " << name << ": " << actual.describe() << " against " << expected.describe();
    }
  }
  // x.npy-like input named `file`: the seeded input of `text`, every value shifted by `shift`.
  void write_shifted_input(const std::string& text, float shift, const std::string& file) {
    Tensor x = random_inputs(parse_graph(text), 0).at("x");
    for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] += shift;
    write_npy(path(file), x);
  }
};

TEST_F(CppDynamic, NonZeroFeedingMoreNodesMatchesCleaveRunForTwoInputs) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[2,6]) {
  @w: f32[6,6]
  %h = MatMul(%x, @w)
  %r = Relu(%h)
  %i = NonZero(%r)
  %f = Cast[to=1](%i)
  %s = ReduceSum[keepdims=0](%f)
  %y = Add(%f, %s)
  return %y, %r
})";
  ASSERT_NO_FATAL_FAILURE(generate_and_build(text));
  EXPECT_NE(read_text_file(path("gen/tables.cc")).find("(shape at run time)"), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--seed 0", {"y", "r"}, "seed0"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--seed 5", {"y", "r"}, "seed5"));
  // The number of nonzero values follows the input: the two runs made different shapes.
  EXPECT_NE(read_npy(path("ref_seed0/y.npy")).shape(), read_npy(path("ref_seed5/y.npy")).shape());
}

TEST_F(CppDynamic, IfBranchesOfDifferentShapesMatchCleaveRun) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %s = ReduceSum[keepdims=0](%x)
  %z = Constant[value=tensor<f32[]>[0]]()
  %c = Greater(%s, %z)
  %b = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Relu(%x)
    %q = Concat[axis=0](%p, %x)
    return %q
  }](%c)
  %y = Sigmoid(%b)
  return %y
})";
  ASSERT_NO_FATAL_FAILURE(generate_and_build(text));
  write_shifted_input(text, 3.0f, "above.npy");
  write_shifted_input(text, -3.0f, "below.npy");
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=above.npy", {"y"}, "then"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=below.npy", {"y"}, "else"));
  EXPECT_EQ(read_npy(path("out_then/y.npy")).shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(read_npy(path("out_else/y.npy")).shape(), (std::vector<int64_t>{2, 3}));
}

TEST_F(CppDynamic, LoopOfAComputedTripCountMatchesCleaveRun) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %a = Abs(%x)
  %s = ReduceSum[keepdims=0](%a)
  %k = Ceil(%s)
  %m = Cast[to=7](%k)
  %t = Constant[value=tensor<bool[]>[1]]()
  %out, %scan = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %f = Cast[to=1](%i)
    %w = Add(%v, %f)
    %h = Tanh(%w)
    %same = Identity(%cond)
    return %same, %h, %w
  }](%m, %t, %x)
  %y = Mul(%out, %x)
  return %y, %scan
})";
  ASSERT_NO_FATAL_FAILURE(generate_and_build(text));
  write_shifted_input(text, 0.0f, "small.npy");
  write_shifted_input(text, 2.0f, "large.npy");
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=small.npy", {"y", "scan"}, "small"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=large.npy", {"y", "scan"}, "large"));
  EXPECT_NE(read_npy(path("out_small/scan.npy")).shape(),
            read_npy(path("out_large/scan.npy")).shape());
}

}  // namespace
}  // namespace cleave
